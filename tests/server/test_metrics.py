"""``/metrics`` of one process, over real HTTP, on SQLite and on PostgreSQL: refusals counted by
their error code wherever they are made, ADDS block bytes stored and served, runtime transitions
and think cycles, bridge sessions and the frames they relay, and the process metrics.

Counters are read as differences: several tests share a service, and runtime transitions are
counted per process (docs/service.md, "Metrics"). ``test_metrics_workers.py`` covers a server
of several workers.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from hearth.adds import cid_for_bytes
from hearth.client.bridge import BridgeFatal, BridgeSidecar, bridge_url
from hearth.proofs.thoughts import seal_thought
from hearth.server.services import runtimes as runtime_service
from tests.support.bridge import Running, hub, on_server, provision, running, ws_refusal
from tests.support.databases import in_db
from tests.support.fake_llm import FakeLlm
from tests.support.live import Live, live_on
from tests.support.metrics import value
from tests.support.polling import eventually
from tests.support.runtimes import new_project
from tests.support.think import (
    llm_settings,
    message_status,
    post_message,
    put_secret,
    status_is,
    trusted_runtime,
)


def scrape(live: Live) -> str:
    with live.client() as client:
        response = client.get("/metrics")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    return response.text


class Counters:
    """Differences of one scrape from the scrape taken when this was made."""

    def __init__(self, live: Live) -> None:
        self.live = live
        self.before = scrape(live)

    def delta(self, sample: str, **labels: str) -> float:
        return value(scrape(self.live), sample, **labels) - value(self.before, sample, **labels)


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def live(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Live]:
    # No orchestrator worker here: the bridge tests move their runtimes themselves.
    with live_on(request.param, tmp_path_factory.mktemp("metrics")) as live:
        yield live


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def hosted(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, fake: FakeLlm
) -> Iterator[Live]:
    """A service whose orchestrator worker runs trusted runtimes against the fake LLM."""
    with live_on(request.param, tmp_path_factory.mktemp("hosted"), **llm_settings(fake)) as live:
        yield live


# --- refusals -----------------------------------------------------------------------------------


def test_refusals_are_counted_by_their_error_code(live: Live) -> None:
    counters = Counters(live)
    with live.client() as client:
        for _ in range(3):  # the error handlers: an ApiError
            assert client.get("/v1/keys").status_code == 401
        assert client.get("/no/such/door").status_code == 404  # an unknown route
        invalid = client.post(  # FastAPI's validation, answered in the error shape
            "/v1/register/agent", content=b"{", headers={"Content-Type": "application/json"}
        )
        assert invalid.status_code == 400
        assert client.get("/healthz").status_code == 200  # not a refusal
    with live.client() as client:  # the server closes this connection after its answer
        too_large = client.post(  # the middleware's own 413, before any route
            "/v1/register/agent",
            content=b"x" * (live.settings.max_body_bytes + 1),
            headers={"Content-Type": "application/json"},
        )
        assert too_large.status_code == 413
    assert counters.delta("hearth_refusals_total", error="unauthorized") == 3
    assert counters.delta("hearth_refusals_total", error="not_found") == 1
    assert counters.delta("hearth_refusals_total", error="invalid_json") == 1
    assert counters.delta("hearth_refusals_total", error="payload_too_large") == 1
    assert counters.delta("hearth_refusals_total") == 6


def test_a_bridge_upgrade_refused_is_a_refusal(live: Live) -> None:
    bridged = provision(live)
    counters = Counters(live)
    status, body = ws_refusal(
        bridge_url(live.base_url, bridged.runtime_id), {"Authorization": "Bearer hrt_wrong"}
    )
    assert (status, body["error"]) == (401, "invalid_control_token")
    assert counters.delta("hearth_refusals_total", error="invalid_control_token") == 1


# --- ADDS bytes ---------------------------------------------------------------------------------


def test_block_bytes_stored_and_served_are_the_blocks_sizes(live: Live) -> None:
    bearer, _, _ = new_project(live)
    data = uuid.uuid4().bytes * 1000 + b"an odd tail"  # 16,011 bytes
    cid = cid_for_bytes(data)
    counters = Counters(live)
    with live.client(bearer) as client:
        assert client.put(f"/v1/adds/blocks/{cid}", content=data).status_code == 201
        for _ in range(2):
            got = client.get(f"/v1/adds/blocks/{cid}")
            assert got.status_code == 200
            assert got.content == data
        assert client.head(f"/v1/adds/blocks/{cid}").status_code == 200  # no bytes served
        refused = client.put(f"/v1/adds/blocks/{cid_for_bytes(b'other')}", content=data)
        assert refused.status_code == 422  # not kept, not counted
    assert counters.delta("hearth_adds_block_bytes_stored_total") == len(data)
    assert counters.delta("hearth_adds_block_bytes_served_total") == 2 * len(data)


# --- the process --------------------------------------------------------------------------------


def test_process_metrics_are_exposed(live: Live) -> None:
    text = scrape(live)
    assert value(text, "process_resident_memory_bytes") > 0
    assert value(text, "process_cpu_seconds_total") > 0
    assert value(text, "process_open_fds") > 0
    assert value(text, "python_info") == 1
    assert "pid" not in text  # one worker: its own series, no pid label to tell workers apart


# --- runtimes -----------------------------------------------------------------------------------


def test_think_cycles_and_transitions_are_counted(hosted: Live) -> None:
    live = hosted
    bearer, _, agent_id = new_project(live)
    counters = Counters(live)
    with live.client(bearer) as client:
        # No secret under the runtime's vault key yet: its first cycle fails at the vault.
        rid = trusted_runtime(client, agent_id, "openai", vault_key="later")["id"]
        eventually(status_is(client, rid, "running"), "the runtime to run")
        posted = post_message(client, agent_id, "are you counting?")
        eventually(
            lambda: counters.delta("hearth_runtime_think_cycle_failures_total", stage="vault"),
            "a failed cycle",
        )
        put_secret(client, "later", "sk-counted")
        eventually(lambda: message_status(live, posted["id"]) == "done", "the stored thought")
    assert counters.delta("hearth_runtime_think_cycles_total") >= 2
    assert counters.delta("hearth_runtime_think_cycle_failures_total") == counters.delta(
        "hearth_runtime_think_cycle_failures_total", stage="vault"
    )
    # The worker's bind and handshake, each counted once with the states it moved between.
    for left, entered in (("provisioned", "starting"), ("starting", "running")):
        assert (
            counters.delta("hearth_runtime_transitions_total", **{"from": left, "to": entered}) == 1
        )


def test_moves_by_a_route_and_by_a_direct_call_are_counted(live: Live) -> None:
    counters = Counters(live)
    bridged = provision(live, bind=False)
    in_db(live, runtime_service.move, bridged.runtime_id, "bind")  # the orchestrator's move
    with bridged.client() as client:
        deleted = client.delete(f"/v1/runtimes/{bridged.runtime_id}")  # deprovision
    assert deleted.status_code == 200, deleted.text
    assert (
        counters.delta(
            "hearth_runtime_transitions_total", **{"from": "provisioned", "to": "starting"}
        )
        == 1
    )
    assert (
        counters.delta("hearth_runtime_transitions_total", **{"from": "starting", "to": "stopped"})
        == 1
    )


# --- the bridge ---------------------------------------------------------------------------------


def test_bridge_sessions_and_relayed_frames_are_counted(live: Live) -> None:
    bridged = provision(live)
    counters = Counters(live)
    strand_id = str(uuid.uuid4())
    sealed = seal_thought(bridged.k_master, strand_id, 1, b"counted, never read")
    with running(BridgeSidecar(bridged.config())):
        the_hub = hub(live)
        opened = on_server(
            live,
            the_hub.decrypt(bridged.runtime_id, strand_id, 1, sealed.nonce, sealed.ciphertext),
        )
        assert opened == b"counted, never read"
        on_server(live, the_hub.encrypt(bridged.runtime_id, strand_id, 2, b"and another"))
    assert counters.delta("hearth_bridge_connections_total") == 1
    assert counters.delta("hearth_bridge_messages_total", direction="to_bridge") == 2
    assert counters.delta("hearth_bridge_messages_total", direction="from_bridge") == 2


def test_a_failed_bridge_handshake_is_counted_by_its_error(live: Live) -> None:
    bridged = provision(live)
    counters = Counters(live)
    impostor = BridgeSidecar(bridged.config(bridge_key=Ed25519PrivateKey.generate()))
    run = Running(impostor).start(wait_ready=False)
    run.thread.join(timeout=30)
    assert isinstance(run.error, BridgeFatal)
    assert counters.delta("hearth_bridge_handshake_failures_total", error="bridge_auth_failed") == 1
    assert counters.delta("hearth_bridge_connections_total") == 0
