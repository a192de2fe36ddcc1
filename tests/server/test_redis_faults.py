"""A Redis that hangs, refuses or is absent costs a request at most one deadline, once.

The live service runs against a redis-server of the test's own, on a free port (never the
shared one), which the test stops with SIGSTOP: it still accepts connections, through the
kernel's backlog, and never answers, which is what a wedged Redis looks like. Registrations
and memory writes go on through it. What is asserted is structural, from the service's own
counters, not timings:

- every request succeeds, and the limiter fails open (``hearth_limiter_fail_open``);
- the limiter makes one Redis call, bounded by ``SERVICE_REDIS_TIMEOUT_MS``, that fails; the
  breaker then opens and every later request makes no Redis call at all (``skipped``);
- a change's Redis publish runs after the response: a mutation answers while its publish is
  still waiting on the hung Redis (with a deadline of 10 s, far beyond the client's patience
  had the publish been on the request's path), and the publish completes once Redis resumes.

Needs redis-server (skipped without it, failed under CI=true).
"""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.support.agents import Agent, register
from tests.support.live import Live, free_port, live_on
from tests.support.redis_server import RedisServer, own_redis_server

BACKENDS = ["sqlite", "postgresql"]
ROUNDS = 8  # registrations, and as many memory writes, while Redis is down
WAIT_S = 20.0  # the most a counter may take to settle before the test fails


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[RedisServer]:
    with own_redis_server(tmp_path, "a hung Redis") as server:
        yield server


@contextmanager
def hung(server: RedisServer) -> Iterator[None]:
    assert server.proc is not None
    server.proc.send_signal(signal.SIGSTOP)
    try:
        yield
    finally:
        server.proc.send_signal(signal.SIGCONT)


def samples(live: Live) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    with live.client() as client:
        text = client.get("/metrics").text
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def calls(live: Live, name: str) -> dict[str, float]:
    """A counter's values by outcome (0 for outcomes not seen yet)."""
    found = {"done": 0.0, "failed": 0.0, "skipped": 0.0, "dropped": 0.0}
    for (sample, labels), value in samples(live).items():
        if sample == f"{name}_total":
            found[dict(labels)["outcome"]] = value
    return found


def settled(live: Live, name: str, total: float) -> dict[str, float]:
    """The counter once ``total`` outcomes are counted (the publisher runs beside requests)."""
    deadline = time.monotonic() + WAIT_S
    while True:
        seen = calls(live, name)
        if sum(seen.values()) >= total or time.monotonic() > deadline:
            return seen
        time.sleep(0.02)


def fail_open(live: Live) -> float:
    return samples(live).get(("hearth_limiter_fail_open_total", ()), 0.0)


def exercise(live: Live, bearer: str, identity: str) -> list[int]:
    """ROUNDS registrations and ROUNDS memory writes; their statuses."""
    statuses: list[int] = []
    with live.client() as anonymous, live.client(bearer) as owner:
        for i in range(ROUNDS):
            statuses.append(
                anonymous.post("/v1/register/agent", json=Agent.new().registration()).status_code
            )
            statuses.append(
                owner.post(
                    "/v1/memories", json={"content": f"m{i}", "agent_id": identity}
                ).status_code
            )
    return statuses


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_hung_redis_costs_one_request_one_deadline_then_is_skipped(
    backend: str, tmp_path: Path, own_redis: RedisServer
) -> None:
    overrides = {
        "redis_url": own_redis.url,
        "redis_timeout_ms": 50,
        "redis_breaker_seconds": 600,  # the outage outlasts the test: no probe in between
        "self_service_limit": 1,
    }
    with live_on(backend, tmp_path, **overrides) as live:
        _, owner = register(live)  # Redis answers: the one slot of the window is used
        bearer, identity = owner["project"]["api_key"], owner["agent"]["id"]
        assert settled(live, "hearth_voice_redis_publishes", 1)["done"] == 1
        with hung(own_redis):
            statuses = exercise(live, bearer, identity)
            limiter = calls(live, "hearth_limiter_redis_calls")
            publishes = settled(live, "hearth_voice_redis_publishes", 1 + 2 * ROUNDS)
            degraded = fail_open(live)
    assert statuses == [201] * (2 * ROUNDS), "every request succeeds, past the limit of 1"
    assert degraded == ROUNDS
    # One call waited on the hung Redis, within the deadline; the breaker then skipped Redis.
    assert limiter == {"done": 1, "failed": 1, "skipped": ROUNDS - 1, "dropped": 0}
    assert publishes == {"done": 1, "failed": 1, "skipped": 2 * ROUNDS - 1, "dropped": 0}


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_mutation_answers_before_its_publish_to_a_hung_redis(
    backend: str, tmp_path: Path, own_redis: RedisServer
) -> None:
    # A deadline of 10 s: a publish on the request's path would hold the answer that long.
    with live_on(backend, tmp_path, redis_url=own_redis.url, redis_timeout_ms=10_000) as live:
        _, owner = register(live)
        bearer, identity = owner["project"]["api_key"], owner["agent"]["id"]
        assert settled(live, "hearth_voice_redis_publishes", 1)["done"] == 1
        with hung(own_redis), live.client(bearer) as client:
            stored = client.post("/v1/memories", json={"content": "x", "agent_id": identity})
            pending = calls(live, "hearth_voice_redis_publishes")
            wake = client.get("/v1/wake")
        resumed = settled(live, "hearth_voice_redis_publishes", 2)
    assert stored.status_code == 201, stored.text
    assert wake.status_code == 200, wake.text
    shown = [m["content"] for m in wake.json()["you_remember"]["memories"]]
    assert "x" in shown, "the wake read after the answer shows the change"
    # Answered while the publish was still waiting on Redis: nothing was counted for it yet.
    assert pending == {"done": 1, "failed": 0, "skipped": 0, "dropped": 0}
    assert resumed["done"] == 2, "the change reached Redis once it answered again"


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_refusing_redis_costs_one_call_then_is_skipped(backend: str, tmp_path: Path) -> None:
    closed = f"redis://127.0.0.1:{free_port()}/0"
    overrides = {"redis_url": closed, "redis_breaker_seconds": 600, "self_service_limit": 1}
    with live_on(backend, tmp_path, **overrides) as live:
        _, owner = register(live)
        statuses = exercise(live, owner["project"]["api_key"], owner["agent"]["id"])
        limiter = calls(live, "hearth_limiter_redis_calls")
        publishes = settled(live, "hearth_voice_redis_publishes", 1 + 2 * ROUNDS)
        degraded = fail_open(live)
    assert statuses == [201] * (2 * ROUNDS)
    assert degraded == ROUNDS + 1
    assert limiter == {"done": 0, "failed": 1, "skipped": ROUNDS, "dropped": 0}
    assert publishes == {"done": 0, "failed": 1, "skipped": 2 * ROUNDS, "dropped": 0}


@pytest.mark.parametrize("backend", BACKENDS)
def test_without_redis_nothing_waits_and_nothing_fails_open(backend: str, tmp_path: Path) -> None:
    with live_on(backend, tmp_path, redis_url=None) as live:
        _, owner = register(live)
        statuses = exercise(live, owner["project"]["api_key"], owner["agent"]["id"])
        with live.client() as client:
            limiter = client.get("/public/plans").json()["no_exploit_loophole"]["limiter"]
        names = {name for name, _ in samples(live)}
        publishes = calls(live, "hearth_voice_redis_publishes")
        degraded = fail_open(live)
    assert statuses == [201] * (2 * ROUNDS)
    assert limiter["backend"] == "memory"
    assert degraded == 0
    # No Redis client exists: no call is made, none is skipped.
    assert "hearth_limiter_redis_calls_total" not in names
    assert publishes == {"done": 0, "failed": 0, "skipped": 0, "dropped": 0}
