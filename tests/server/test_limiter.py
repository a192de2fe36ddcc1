"""Tests for the IP rate limiter: in-process, against a real Redis, and with Redis down."""

from __future__ import annotations

import asyncio
import hashlib
import socket
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anyio
import pytest
import redis.asyncio as redis_asyncio
import structlog
from structlog.testing import capture_logs

from hearth.server.limiter import (
    Decision,
    DisabledLimiter,
    MemoryLimiter,
    RedisLimiter,
    make_limiter,
)
from tests.support.live import free_port
from tests.support.redis_server import (
    RedisServer,
    own_redis_server,
    redis_url_or_skip,
)

pytestmark = pytest.mark.anyio

SCOPE = "register_self_service"
IP = "203.0.113.7"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def default_logging() -> None:
    # A service started by another test configures structlog process-wide (its level included);
    # these tests read the limiter's own log lines, so they start from structlog's defaults.
    structlog.reset_defaults()


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


# --- in-process limiter ---------------------------------------------------------------------


async def test_memory_admits_exactly_limit_then_refuses() -> None:
    clock = FakeClock()
    limiter = MemoryLimiter(clock=clock)
    decisions = [await limiter.hit(SCOPE, IP, 3, 60) for _ in range(3)]
    assert [d.allowed for d in decisions] == [True, True, True]
    assert [d.remaining for d in decisions] == [2, 1, 0]
    assert all(d.retry_after is None and not d.degraded for d in decisions)

    clock.advance(10.5)
    refused = await limiter.hit(SCOPE, IP, 3, 60)
    assert refused == Decision(allowed=False, remaining=0, retry_after=50, degraded=False)


async def test_memory_retry_after_is_at_least_one_second() -> None:
    clock = FakeClock()
    limiter = MemoryLimiter(clock=clock)
    await limiter.hit(SCOPE, IP, 1, 10)
    clock.advance(9.999)
    refused = await limiter.hit(SCOPE, IP, 1, 10)
    assert not refused.allowed
    assert refused.retry_after == 1


async def test_memory_keys_and_scopes_are_independent() -> None:
    limiter = MemoryLimiter(clock=FakeClock())
    assert (await limiter.hit(SCOPE, IP, 1, 60)).allowed
    assert not (await limiter.hit(SCOPE, IP, 1, 60)).allowed
    assert (await limiter.hit(SCOPE, "198.51.100.1", 1, 60)).allowed
    assert (await limiter.hit("login", IP, 1, 60)).allowed


async def test_memory_window_resets() -> None:
    clock = FakeClock()
    limiter = MemoryLimiter(clock=clock)
    for _ in range(2):
        await limiter.hit(SCOPE, IP, 2, 60)
    assert not (await limiter.hit(SCOPE, IP, 2, 60)).allowed
    clock.advance(59.9)
    assert not (await limiter.hit(SCOPE, IP, 2, 60)).allowed
    clock.advance(0.1)
    fresh = await limiter.hit(SCOPE, IP, 2, 60)
    assert fresh == Decision(allowed=True, remaining=1, retry_after=None, degraded=False)


async def test_memory_refused_attempts_do_not_extend_the_window() -> None:
    clock = FakeClock()
    limiter = MemoryLimiter(clock=clock)
    await limiter.hit(SCOPE, IP, 1, 60)
    for _ in range(5):
        clock.advance(10)
        assert not (await limiter.hit(SCOPE, IP, 1, 60)).allowed
    clock.advance(10)
    assert (await limiter.hit(SCOPE, IP, 1, 60)).allowed


async def test_memory_concurrent_hits_admit_exactly_limit() -> None:
    limiter = MemoryLimiter()
    results = await _gather_hits(limiter, 50, limit=7)
    assert sum(d.allowed for d in results) == 7
    assert sum(not d.allowed for d in results) == 43


async def test_memory_prunes_expired_windows() -> None:
    clock = FakeClock()
    limiter = MemoryLimiter(clock=clock)
    for i in range(100):
        await limiter.hit(SCOPE, f"10.0.0.{i}", 5, 60)
    assert len(limiter) == 100
    clock.advance(61)
    await limiter.hit(SCOPE, IP, 5, 60)
    assert len(limiter) == 1


async def test_memory_is_bounded_within_a_window() -> None:
    limiter = MemoryLimiter(clock=FakeClock(), max_keys=10)
    for i in range(1_000):
        await limiter.hit(SCOPE, f"2001:db8::{i:x}", 5, 3600)
    assert len(limiter) == 10
    # The newest keys are the ones kept.
    assert not (await limiter.hit(SCOPE, "2001:db8::3e7", 1, 3600)).allowed


@pytest.mark.parametrize(
    ("scope", "limit", "window_s"),
    [("", 1, 1), ("bad scope", 1, 1), ("a:b", 1, 1), (SCOPE, 0, 1), (SCOPE, 1, 0)],
)
async def test_invalid_arguments_are_rejected(scope: str, limit: int, window_s: int) -> None:
    limiter = MemoryLimiter()
    with pytest.raises(ValueError, match=r"scope|limit|window_s"):
        await limiter.hit(scope, IP, limit, window_s)


async def test_memory_status() -> None:
    limiter = MemoryLimiter()
    assert await limiter.status() == {"enabled": True, "backend": "memory", "available": True}
    await limiter.aclose()


async def test_disabled_limiter_always_allows() -> None:
    limiter = DisabledLimiter()
    for _ in range(10):
        decision = await limiter.hit(SCOPE, IP, 1, 60)
        assert decision.allowed
        assert not decision.degraded
    assert await limiter.status() == {"enabled": False, "backend": "disabled", "available": True}
    await limiter.aclose()


async def test_make_limiter_picks_backend() -> None:
    assert make_limiter(None).backend == "memory"
    assert make_limiter("").backend == "memory"
    assert make_limiter("redis://127.0.0.1:6379/0", enabled=False).backend == "disabled"
    limiter = make_limiter("redis://127.0.0.1:6379/0")
    try:
        assert isinstance(limiter, RedisLimiter)
        assert limiter.backend == "redis"
    finally:
        await limiter.aclose()


# --- real Redis -----------------------------------------------------------------------------


@pytest.fixture
def redis_url() -> str:
    return redis_url_or_skip()


@pytest.fixture
async def redis_prefix(redis_url: str) -> AsyncIterator[str]:
    prefix = f"hearth-test:{uuid.uuid4().hex}:"
    yield prefix
    client = redis_asyncio.Redis.from_url(redis_url)
    try:
        keys = [key async for key in client.scan_iter(match=f"{prefix}*")]
        if keys:
            await client.delete(*keys)
    finally:
        await client.aclose()


@pytest.fixture
async def redis_limiter(redis_url: str, redis_prefix: str) -> AsyncIterator[RedisLimiter]:
    # A generous timeout: these tests are about counting, and a slow CI host must not turn
    # them into fail-open runs.
    limiter = RedisLimiter(redis_url, prefix=redis_prefix, timeout_s=2.0)
    yield limiter
    await limiter.aclose()


async def test_redis_admits_exactly_limit_under_concurrency(redis_limiter: RedisLimiter) -> None:
    results = await _gather_hits(redis_limiter, 50, limit=7)
    assert not any(d.degraded for d in results)
    assert sum(d.allowed for d in results) == 7
    refused = [d for d in results if not d.allowed]
    assert len(refused) == 43
    assert all(d.retry_after is not None and 0 < d.retry_after <= 60 for d in refused)
    assert sorted(d.remaining for d in results if d.allowed) == list(range(7))


async def test_redis_concurrent_workers_share_the_count(redis_url: str, redis_prefix: str) -> None:
    # Separate clients stand in for separate worker processes.
    workers = [RedisLimiter(redis_url, prefix=redis_prefix, timeout_s=2.0) for _ in range(5)]
    try:
        results = await asyncio.gather(
            *(workers[i % len(workers)].hit(SCOPE, IP, 5, 60) for i in range(50))
        )
    finally:
        for limiter in workers:
            await limiter.aclose()
    assert not any(d.degraded for d in results)
    assert sum(d.allowed for d in results) == 5


async def test_redis_keys_and_scopes_are_independent(redis_limiter: RedisLimiter) -> None:
    assert (await redis_limiter.hit(SCOPE, IP, 1, 60)).allowed
    assert not (await redis_limiter.hit(SCOPE, IP, 1, 60)).allowed
    assert (await redis_limiter.hit(SCOPE, "198.51.100.1", 1, 60)).allowed
    assert (await redis_limiter.hit("login", IP, 1, 60)).allowed


async def test_redis_keys_carry_scope_and_expire_with_window(
    redis_limiter: RedisLimiter, redis_url: str, redis_prefix: str
) -> None:
    await redis_limiter.hit(SCOPE, IP, 3, 60)
    client = redis_asyncio.Redis.from_url(redis_url, decode_responses=True)
    try:
        keys = [key async for key in client.scan_iter(match=f"{redis_prefix}*")]
        assert len(keys) == 1
        (key,) = keys
        assert key.startswith(f"{redis_prefix}{SCOPE}:")
        assert hashlib.sha256(IP.encode()).hexdigest()[:32] in key
        assert IP not in key
        assert 0 < await client.pttl(key) <= 60_000
    finally:
        await client.aclose()


async def test_redis_status_available(redis_limiter: RedisLimiter) -> None:
    assert await redis_limiter.status() == {
        "enabled": True,
        "backend": "redis",
        "available": True,
    }


# --- Redis down -----------------------------------------------------------------------------


async def test_closed_port_fails_open() -> None:
    limiter = RedisLimiter(f"redis://127.0.0.1:{free_port()}/0")
    try:
        for _ in range(3):
            decision = await limiter.hit(SCOPE, IP, 1, 60)
            assert decision.allowed
            assert decision.degraded
            assert decision.retry_after is None
        assert await limiter.status() == {
            "enabled": True,
            "backend": "redis",
            "available": False,
        }
    finally:
        await limiter.aclose()


async def test_closed_port_status_does_not_raise() -> None:
    # status() first, so it has to do the failing ping itself rather than read the breaker.
    limiter = RedisLimiter(f"redis://127.0.0.1:{free_port()}/0")
    try:
        assert (await limiter.status())["available"] is False
    finally:
        await limiter.aclose()


async def test_unresponsive_server_fails_open() -> None:
    # A listener that never accepts: the TCP connect succeeds via the backlog, then every read
    # hangs, which is what a wedged Redis or a black-holed network looks like.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        port = sock.getsockname()[1]
        limiter = RedisLimiter(f"redis://127.0.0.1:{port}/0", timeout_s=0.05)
        try:
            decision = await limiter.hit(SCOPE, IP, 1, 60)
            assert decision.allowed
            assert decision.degraded
            assert (await limiter.status())["available"] is False
        finally:
            await limiter.aclose()


async def test_outage_is_logged_once_without_key_values() -> None:
    secret = "s3cret-password"
    limiter = RedisLimiter(f"redis://:{secret}@127.0.0.1:{free_port()}/0", breaker_s=60)
    try:
        with capture_logs() as logs:
            for _ in range(5):
                assert (await limiter.hit(SCOPE, IP, 1, 60)).degraded
            await limiter.status()
    finally:
        await limiter.aclose()
    outages = [entry for entry in logs if entry["event"] == "limiter_store_unavailable"]
    assert len(outages) == 1
    (entry,) = outages
    assert entry["log_level"] == "warning"
    assert entry["scope"] == SCOPE
    assert set(entry) <= {"event", "log_level", "backend", "scope", "error", "retry_in_s"}
    rendered = repr(logs)
    assert IP not in rendered
    assert hashlib.sha256(IP.encode()).hexdigest()[:16] not in rendered
    assert secret not in rendered


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    with own_redis_server(tmp_path, "a Redis outage") as server:
        yield server


async def test_outage_fails_open_then_recovers(redis_server: RedisServer) -> None:
    limiter = RedisLimiter(redis_server.url, breaker_s=0.05, timeout_s=1.0)
    try:
        assert (await limiter.hit(SCOPE, IP, 2, 60)).allowed
        assert (await limiter.hit(SCOPE, IP, 2, 60)).allowed
        refused = await limiter.hit(SCOPE, IP, 2, 60)
        assert not refused.allowed
        assert not refused.degraded

        redis_server.stop()
        down = await limiter.hit(SCOPE, IP, 2, 60)
        assert down.allowed
        assert down.degraded
        assert (await limiter.status())["available"] is False

        redis_server.start()
        await anyio.sleep(0.2)  # let the 0.05 s breaker interval pass
        # The restarted server kept no state, so the count starts over, and is enforced.
        first = await limiter.hit(SCOPE, IP, 2, 60)
        assert first == Decision(allowed=True, remaining=1, retry_after=None, degraded=False)
        assert (await limiter.hit(SCOPE, IP, 2, 60)).allowed
        again = await limiter.hit(SCOPE, IP, 2, 60)
        assert not again.allowed
        assert not again.degraded
        assert (await limiter.status())["available"] is True
    finally:
        await limiter.aclose()


async def test_breaker_skips_redis_until_interval_passes(redis_server: RedisServer) -> None:
    clock = FakeClock()
    limiter = RedisLimiter(redis_server.url, breaker_s=5.0, timeout_s=1.0, clock=clock)
    try:
        with capture_logs() as logs:
            assert not (await limiter.hit(SCOPE, IP, 1, 60)).degraded
            redis_server.stop()
            assert (await limiter.hit(SCOPE, IP, 1, 60)).degraded

            # Back already, but the breaker is still open: no attempt is made yet.
            redis_server.start()
            clock.advance(4.9)
            assert (await limiter.hit(SCOPE, IP, 1, 60)).degraded
            assert (await limiter.status())["available"] is False

            clock.advance(0.2)
            assert await limiter.hit(SCOPE, IP, 1, 60) == Decision(
                allowed=True, remaining=0, retry_after=None, degraded=False
            )
            assert not (await limiter.hit(SCOPE, IP, 1, 60)).allowed
    finally:
        await limiter.aclose()
    events = [entry["event"] for entry in logs]
    assert events == ["limiter_store_unavailable", "limiter_store_recovered"]
    recovered = logs[1]
    assert recovered["failed_open"] == 2
    assert IP not in repr(logs)


async def _gather_hits(
    limiter: MemoryLimiter | RedisLimiter, n: int, *, limit: int
) -> list[Decision]:
    return list(await asyncio.gather(*(limiter.hit(SCOPE, IP, limit, 60) for _ in range(n))))
