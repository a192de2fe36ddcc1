"""The bridge of bridged custody end to end: a real WebSocket between the live service's hub and
a real sidecar (``hearth.client.bridge``), on SQLite, and on PostgreSQL when
SERVICE_TEST_DATABASE_URL is set.

Covered: the refusals before the upgrade (no or wrong control token, unknown, deleted or
non-bridged runtime), the handshake (a wrong bridge key is refused; a good one moves starting ->
running with its events), decrypt/encrypt round trips under the user's K_master, the bridge's
refusals (bad request signature, replayed request, stale request), the hub's refusal of a reply
with a bad HMAC, timeouts, one session per runtime, and reconnection with backoff.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from websockets.asyncio.client import connect

from hearth.client.bridge import (
    BridgeFatal,
    BridgeGaveUp,
    BridgeSidecar,
    bridge_url,
)
from hearth.client.mnemonic_keys import derive_keys, new_mnemonic
from hearth.proofs import b64_decode, b64_encode, format_timestamp
from hearth.proofs.bridge import build_request
from hearth.proofs.thoughts import ThoughtOpenError, open_thought
from hearth.server.bridge import (
    BridgeRefused,
    BridgeReplyInvalid,
    BridgeTimeout,
    BridgeUnavailable,
)
from tests.support.agents import raw_public
from tests.support.bridge import (
    WAIT_S,
    Bridged,
    Running,
    hub,
    on_server,
    provision,
    running,
    sealed_thought,
    ws_refusal,
)
from tests.support.live import Live, free_port, live_on
from tests.support.polling import eventually
from tests.support.runtimes import create

# --- fixtures -----------------------------------------------------------------------------------


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def live(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Live]:
    with live_on(request.param, tmp_path_factory.mktemp("bridge")) as live:
        yield live


# --- before the upgrade -------------------------------------------------------------------------


def test_upgrade_refused_without_the_right_control_token(live: Live) -> None:
    bridged = provision(live)
    url = bridge_url(live.base_url, bridged.runtime_id)

    status, body = ws_refusal(url)
    assert status == 401
    assert body["error"] == "unauthorized"
    assert "control token" in body["message"]

    status, body = ws_refusal(url, {"Authorization": "Bearer hrt_not-the-token"})
    assert (status, body["error"]) == (401, "invalid_control_token")

    # The project bearer is not a control token.
    status, body = ws_refusal(url, {"Authorization": f"Bearer {bridged.bearer}"})
    assert (status, body["error"]) == (401, "invalid_control_token")

    # A rotated token stops working at once; the new one is let in (subprotocol form here).
    with bridged.client() as client:
        rotated = client.post(f"/v1/runtimes/{bridged.runtime_id}/control-token")
    assert rotated.status_code == 200, rotated.text
    status, body = ws_refusal(url, {"Authorization": f"Bearer {bridged.control_token}"})
    assert (status, body["error"]) == (401, "invalid_control_token")
    new_token = rotated.json()["control_token"]

    async def with_subprotocol() -> str | None:
        async with connect(
            url, subprotocols=["hearth-bridge.v1", f"hearth-bridge.token.{new_token}"]
        ) as websocket:
            challenge = json.loads(await websocket.recv())
            assert challenge["type"] == "challenge"
            assert challenge["runtime_id"] == bridged.runtime_id
            return websocket.subprotocol

    assert asyncio.run(with_subprotocol()) == "hearth-bridge.v1"  # never the token's
    assert "bridge_handshake_ok" not in bridged.events()  # no auth frame, no handshake


def test_upgrade_refused_for_unknown_deleted_and_unbridged_runtimes(live: Live) -> None:
    bridged = provision(live)
    token = {"Authorization": f"Bearer {bridged.control_token}"}

    status, body = ws_refusal(bridge_url(live.base_url, str(uuid.uuid4())), token)
    assert (status, body["error"]) == (404, "not_found")
    status, body = ws_refusal(bridge_url(live.base_url, "not-a-uuid"), token)
    assert (status, body["error"]) == (404, "not_found")

    with bridged.client() as client:
        own = create(client, {"name": "laptop", "mode": "self"})
    status, body = ws_refusal(bridge_url(live.base_url, own["id"]), token)
    assert (status, body["error"]) == (403, "not_bridged")

    with bridged.client() as client:
        assert client.delete(f"/v1/runtimes/{bridged.runtime_id}").status_code == 200
    status, body = ws_refusal(bridge_url(live.base_url, bridged.runtime_id), token)
    assert (status, body["error"]) == (404, "runtime_deleted")


# --- the handshake ------------------------------------------------------------------------------


def test_handshake_moves_the_runtime_to_running_and_a_disconnect_is_recorded(live: Live) -> None:
    bridged = provision(live)
    assert bridged.record()["status"] == "starting"
    assert bridged.record()["runtime_public_key"] is None  # generated at the first handshake

    with running(BridgeSidecar(bridged.config())):
        record = bridged.record()
        assert record["status"] == "running"
        assert record["bridge_connected"] is True
        assert record["last_seen_at"] is not None
        assert record["runtime_public_key"] is not None
        assert bridged.events() == ["provisioned", "started", "bridge_handshake_ok"]
        assert hub(live).connected(bridged.runtime_id)

    eventually(lambda: not bridged.record()["bridge_connected"], "bridge_connected false")
    assert bridged.events()[-1] == "bridge_disconnected"
    assert not hub(live).connected(bridged.runtime_id)
    first_key = bridged.record()["runtime_public_key"]

    # A second connection: the same per-runtime key, the event without a move (already running).
    pinned = BridgeSidecar(bridged.config(pinned_runtime_key=b64_decode(first_key, length=32)))
    with running(pinned):
        assert bridged.record()["runtime_public_key"] == first_key
        items = bridged.event_items()
        assert items[-1]["event"] == "bridge_handshake_ok"
        assert items[-1]["details"]["status"] == "running"


def test_a_wrong_bridge_key_is_refused_in_the_handshake(live: Live) -> None:
    bridged = provision(live)
    impostor = BridgeSidecar(bridged.config(bridge_key=Ed25519PrivateKey.generate()))
    run = Running(impostor).start(wait_ready=False)
    run.thread.join(timeout=WAIT_S)
    assert isinstance(run.error, BridgeFatal)
    assert "bridge_auth_failed" in str(run.error)
    assert impostor.handshakes == 0
    record = bridged.record()
    assert record["status"] == "starting"
    assert record["bridge_connected"] is False
    assert "bridge_handshake_ok" not in bridged.events()
    assert not hub(live).connected(bridged.runtime_id)


def test_a_pinned_runtime_key_refuses_another(live: Live) -> None:
    bridged = provision(live)
    other = raw_public(Ed25519PrivateKey.generate())
    run = Running(BridgeSidecar(bridged.config(pinned_runtime_key=other))).start(wait_ready=False)
    run.thread.join(timeout=WAIT_S)
    assert isinstance(run.error, BridgeFatal)
    assert "pinned" in str(run.error)


# --- decrypt and encrypt ------------------------------------------------------------------------


def test_decrypt_and_encrypt_round_trip_under_the_users_k_master(live: Live) -> None:
    bridged = provision(live)
    strand_id = str(uuid.uuid4())
    thought = b"I kept the lamp lit through the night."
    nonce, ciphertext = sealed_thought(bridged.k_master, strand_id, 7, thought)

    with running(BridgeSidecar(bridged.config())) as run:
        the_hub = hub(live)
        opened = on_server(
            live, the_hub.decrypt(bridged.runtime_id, strand_id, 7, nonce, ciphertext)
        )
        assert opened == thought

        # A 4 KiB thought, as the hosted loop would store it.
        big = bytes(range(256)) * 16
        new_nonce, sealed = on_server(live, the_hub.encrypt(bridged.runtime_id, strand_id, 8, big))
        assert open_thought(bridged.k_master, strand_id, 8, new_nonce, sealed) == big
        assert big not in sealed
        # Bound to its place: another position does not open it.
        with pytest.raises(ThoughtOpenError):
            open_thought(bridged.k_master, strand_id, 9, new_nonce, sealed)

        # A thought sealed under another user's K_master is refused, never answered.
        stranger = derive_keys(new_mnemonic()).strand_master
        other_nonce, other_ct = sealed_thought(stranger, strand_id, 7, thought)
        with pytest.raises(BridgeRefused) as refused:
            on_server(
                live, the_hub.decrypt(bridged.runtime_id, strand_id, 7, other_nonce, other_ct)
            )
        assert refused.value.code == "decrypt_failed"
        # The right key at the wrong position is refused too (the AAD binds the position).
        with pytest.raises(BridgeRefused, match="does not open"):
            on_server(live, the_hub.decrypt(bridged.runtime_id, strand_id, 6, nonce, ciphertext))
        assert (run.sidecar.served, run.sidecar.refused) == (2, 2)


def test_no_bridge_is_unavailable_and_a_silent_bridge_times_out(live: Live) -> None:
    bridged = provision(live)

    class Silent(BridgeSidecar):
        def handle(
            self, message: dict[str, Any], now: datetime | None = None
        ) -> dict[str, Any] | None:
            return None

    with running(Silent(bridged.config())):
        the_hub = hub(live)
        the_hub.request_timeout = 0.3
        try:
            with pytest.raises(BridgeTimeout):
                on_server(live, the_hub.encrypt(bridged.runtime_id, str(uuid.uuid4()), 1, b"x"))
        finally:
            the_hub.request_timeout = 10.0
    eventually(lambda: not hub(live).connected(bridged.runtime_id), "the session to end")
    with pytest.raises(BridgeUnavailable):
        on_server(live, hub(live).encrypt(bridged.runtime_id, str(uuid.uuid4()), 1, b"x"))


# --- the bridge's refusals ----------------------------------------------------------------------


def _sealed_request(
    bridged: Bridged, key: Ed25519PrivateKey, *, issued_at: str | None = None
) -> dict[str, Any]:
    strand_id = str(uuid.uuid4())
    nonce, ciphertext = sealed_thought(bridged.k_master, strand_id, 1, b"a private thought")
    return build_request(
        key,
        op="decrypt",
        payload=ciphertext,
        nonce=nonce,
        strand_id=strand_id,
        thought_seq=1,
        issued_at=issued_at or format_timestamp(datetime.now(UTC)),
    )


def test_bad_request_signatures_are_refused_by_the_bridge(live: Live) -> None:
    bridged = provision(live)
    with running(BridgeSidecar(bridged.config())) as run:
        the_hub = hub(live)
        forged = _sealed_request(bridged, Ed25519PrivateKey.generate())
        with pytest.raises(BridgeRefused) as refused:
            on_server(live, the_hub.exchange(bridged.runtime_id, forged))
        assert refused.value.code == "bad_signature"

        # Signed by the runtime's key, then altered: the signature covers every field.
        session = the_hub.session(bridged.runtime_id)
        assert session is not None
        tampered = _sealed_request(bridged, session.signing_key)
        tampered["context"]["thought_seq"] = 2
        with pytest.raises(BridgeRefused) as refused:
            on_server(live, the_hub.exchange(bridged.runtime_id, tampered))
        assert refused.value.code == "bad_signature"
        assert (run.sidecar.served, run.sidecar.refused) == (0, 2)


def test_replayed_and_stale_requests_are_refused_by_the_bridge(live: Live) -> None:
    bridged = provision(live)
    with running(BridgeSidecar(bridged.config())) as run:
        the_hub = hub(live)
        session = the_hub.session(bridged.runtime_id)
        assert session is not None
        request = _sealed_request(bridged, session.signing_key)
        result = on_server(live, the_hub.exchange(bridged.runtime_id, dict(request)))
        assert "plaintext" in result
        with pytest.raises(BridgeRefused) as refused:
            on_server(live, the_hub.exchange(bridged.runtime_id, dict(request)))
        assert refused.value.code == "replayed_request"

        for offset in (-61, 61):  # the window holds in both directions
            stale = _sealed_request(
                bridged,
                session.signing_key,
                issued_at=format_timestamp(datetime.now(UTC) + timedelta(seconds=offset)),
            )
            with pytest.raises(BridgeRefused) as refused:
                on_server(live, the_hub.exchange(bridged.runtime_id, stale))
            assert refused.value.code == "stale_request"
        assert (run.sidecar.served, run.sidecar.refused) == (1, 3)


def test_a_reply_with_a_bad_hmac_is_refused_by_the_hub(live: Live) -> None:
    bridged = provision(live)

    class Forger(BridgeSidecar):
        def reply(self, request_id: str, result: dict[str, Any]) -> dict[str, Any]:
            reply = super().reply(request_id, result)
            reply["result"] = {"plaintext": b64_encode(b"not what was stored")}
            return reply

    strand_id = str(uuid.uuid4())
    nonce, ciphertext = sealed_thought(bridged.k_master, strand_id, 3, b"the real thought")
    with running(Forger(bridged.config())), pytest.raises(BridgeReplyInvalid):
        on_server(live, hub(live).decrypt(bridged.runtime_id, strand_id, 3, nonce, ciphertext))

    class WrongSecret(BridgeSidecar):
        def reply(self, request_id: str, result: dict[str, Any]) -> dict[str, Any]:
            reply = super().reply(request_id, result)
            reply["hmac"] = b64_encode(bytes(32))
            return reply

    with running(WrongSecret(bridged.config())), pytest.raises(BridgeReplyInvalid):
        on_server(live, hub(live).decrypt(bridged.runtime_id, strand_id, 3, nonce, ciphertext))


# --- sessions and reconnection ------------------------------------------------------------------


def test_a_new_connection_replaces_the_old_one(live: Live) -> None:
    bridged = provision(live)
    first = Running(BridgeSidecar(bridged.config())).start()
    with running(BridgeSidecar(bridged.config())) as second:
        first.thread.join(timeout=WAIT_S)
        assert isinstance(first.error, BridgeFatal)
        assert "replaced" in str(first.error)
        session = hub(live).session(bridged.runtime_id)
        assert session is not None
        eventually(
            lambda: any(
                e["event"] == "bridge_disconnected" and "replaced" in e["details"]["reason"]
                for e in bridged.event_items()
            ),
            "the replaced session's event",
        )
        assert bridged.record()["bridge_connected"] is True  # the new session's flag stays
        strand_id = str(uuid.uuid4())
        nonce, ciphertext = sealed_thought(bridged.k_master, strand_id, 1, b"still here")
        assert (
            on_server(live, hub(live).decrypt(bridged.runtime_id, strand_id, 1, nonce, ciphertext))
            == b"still here"
        )
        assert second.sidecar.served == 1


def test_the_sidecar_reconnects_after_a_cut_with_backoff(live: Live) -> None:
    bridged = provision(live)
    with running(BridgeSidecar(bridged.config())) as run:
        assert on_server(live, hub(live).disconnect(bridged.runtime_id, "test cut"))
        eventually(lambda: run.sidecar.handshakes == 2, "the reconnection")
        eventually(lambda: hub(live).connected(bridged.runtime_id), "the new session")
        assert len(run.sidecar.delays) == 1
        assert 0.025 <= run.sidecar.delays[0] <= 0.05  # half to all of the first step
        assert bridged.record()["bridge_connected"] is True


def test_the_sidecar_gives_up_after_its_attempts_with_growing_bounded_delays(
    live: Live,
) -> None:
    bridged = provision(live, bind=False)
    nowhere = f"ws://127.0.0.1:{free_port()}/v1/runtimes/{bridged.runtime_id}/bridge"
    sidecar = BridgeSidecar(
        bridged.config(url=nowhere, initial_delay=0.01, max_delay=0.04, max_attempts=5)
    )
    run = Running(sidecar).start(wait_ready=False)
    run.thread.join(timeout=WAIT_S)
    assert isinstance(run.error, BridgeGaveUp)
    steps = [0.01, 0.02, 0.04, 0.04]  # doubling, capped at max_delay
    assert len(sidecar.delays) == 4
    for delay, step in zip(sidecar.delays, steps, strict=True):
        assert step / 2 <= delay <= step


@pytest.mark.parametrize("how", ["rotate", "delete"])
def test_rotating_the_token_or_deleting_the_runtime_ends_its_session(live: Live, how: str) -> None:
    bridged = provision(live)
    run = Running(BridgeSidecar(bridged.config(max_attempts=1))).start()
    try:
        assert hub(live).connected(bridged.runtime_id)
        with bridged.client() as client:
            if how == "rotate":
                answer = client.post(f"/v1/runtimes/{bridged.runtime_id}/control-token")
            else:
                answer = client.delete(f"/v1/runtimes/{bridged.runtime_id}")
        assert answer.status_code == 200, answer.text
        # The session ends with the request, not at the bridge's next reconnect; and the
        # bridge, holding the old token (or a deleted runtime), is refused when it tries again.
        eventually(lambda: not hub(live).connected(bridged.runtime_id), "the session to end")
        eventually(lambda: not run.thread.is_alive(), "the sidecar to give up")
        assert not hub(live).connected(bridged.runtime_id)
    finally:
        run.sidecar.stop()
        run.thread.join(timeout=WAIT_S)
