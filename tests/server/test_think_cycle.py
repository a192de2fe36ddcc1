"""The think cycle of a trusted runtime, end to end against the fake LLM servers of both vendors
(the official SDKs over real HTTP): message in -> thought stored, sealed under the runtime's
K_master only, signed by its registered key; provider, vault and store failures are
``think_cycle_error`` events and the message is never lost. On SQLite, and on PostgreSQL when
SERVICE_TEST_DATABASE_URL is set."""

from __future__ import annotations

import json
import os
import signal
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from sqlalchemy import Connection, select

from hearth.client.mnemonic_keys import derive_keys, new_mnemonic
from hearth.proofs import b64_decode, b64_encode
from hearth.proofs.runtime_keys import trusted_k_master
from hearth.proofs.thoughts import (
    SealedThought,
    ThoughtOpenError,
    open_thought,
    verify_thought_write,
)
from hearth.server.db.rows import RuntimeRow
from hearth.server.db.tables import runtimes
from hearth.server.events import Change
from hearth.server.orchestrator.custody import runtime_kid
from hearth.server.services import runtimes as runtime_service
from tests.support.agents import Agent, raw_public, register
from tests.support.bridge import Bridged, bridge_args, start_bridge
from tests.support.databases import in_db
from tests.support.fake_llm import FakeLlm, reply_text
from tests.support.identities import Owner, register_key
from tests.support.live import Live, live_on
from tests.support.polling import eventually
from tests.support.processes import stop
from tests.support.runtimes import MASTER_KEY, bridged_body, new_project
from tests.support.think import (
    WAIT_S,
    events_of,
    llm_settings,
    message_status,
    names,
    post_message,
    put_secret,
    recorder,
    runtime_of,
    status_is,
    strand_thoughts,
    trusted_runtime,
)


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def live(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, fake: FakeLlm
) -> Iterator[Live]:
    with live_on(request.param, tmp_path_factory.mktemp("think"), **llm_settings(fake)) as live:
        yield live


# --- helpers shared with test_orchestrator.py ---------------------------------------------------


def k_master_of(live: Live, runtime_id: str) -> bytes:
    """The runtime's K_master as the docs derive it: unwrap its seed with the KMS key."""

    def row(conn: Connection) -> RuntimeRow:
        return RuntimeRow.of(
            conn.execute(select(runtimes).where(runtimes.c.id == runtime_id)).one()._mapping
        )

    key = runtime_service.unwrap_runtime_key(in_db(live, row, write=False), MASTER_KEY)
    return trusted_k_master(key.private_bytes_raw(), runtime_id)


def opened(k_master: bytes, strand_id: str, thought: dict[str, Any]) -> dict[str, Any]:
    plaintext = open_thought(
        k_master,
        strand_id,
        thought["seq"],
        b64_decode(thought["nonce"]),
        b64_decode(thought["ciphertext"]),
    )
    parsed: dict[str, Any] = json.loads(plaintext)
    return parsed


# --- the trusted cycle --------------------------------------------------------------------------


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_trusted_cycle_stores_a_thought_only_its_k_master_opens(
    live: Live, fake: FakeLlm, provider: str
) -> None:
    bearer, _, agent_id = new_project(live)
    with live.client(bearer) as client:
        put_secret(client, "llm-key", f"sk-{provider}-secret")
        runtime = trusted_runtime(client, agent_id, provider)
        rid = runtime["id"]
        eventually(status_is(client, rid, "running"), "the runtime to run")
        keys = client.get(f"/v1/identities/{agent_id}/keys").json()["items"]
        registered = {k["kid"]: k for k in keys}
        assert registered[runtime_kid(rid)]["public_key"] == runtime["runtime_public_key"]

        before = fake.count(provider)
        posted = post_message(client, agent_id, "What is the tide doing?\nTell me in one word.")
        eventually(lambda: message_status(live, posted["id"]) == "done", "the message to be done")

        strand_id, thoughts = strand_thoughts(client, rid)
        assert [t["seq"] for t in thoughts] == [1]
        thought = thoughts[0]
        assert thought["runtime_id"] == rid
        assert thought["signing_key_id"] == runtime_kid(rid)
        # The stored bytes are ciphertext: the reply is not in them.
        expected = reply_text(f"{provider}-model", "Tell me in one word.")
        assert expected.encode() not in b64_decode(thought["ciphertext"])

        content = opened(k_master_of(live, rid), strand_id, thought)
        assert content["reply"] == expected
        assert content["in_reply_to"] == posted["id"]
        assert content["message"] == "What is the tide doing?\nTell me in one word."

        # Only this runtime's K_master opens it: another runtime's does not.
        other = trusted_runtime(client, agent_id, provider)
        with pytest.raises(ThoughtOpenError):
            opened(k_master_of(live, other["id"]), strand_id, thought)

        sealed = SealedThought(b64_decode(thought["nonce"]), b64_decode(thought["ciphertext"]))
        assert verify_thought_write(
            b64_decode(runtime["runtime_public_key"]),
            thought["signature"],
            signing_key_id=runtime_kid(rid),
            strand_id=strand_id,
            seq=1,
            sealed=sealed,
        )

        # The provider was called through its SDK with the vault's key and the wake.
        calls = [r for r in fake.requests if r.api_key == f"sk-{provider}-secret"]
        assert fake.count(provider) > before
        assert calls
        assert calls[-1].body["model"] == f"{provider}-model"
        system = (
            calls[-1].body["system"]
            if provider == "anthropic"
            else calls[-1].body["messages"][0]["content"]
        )
        assert agent_id in system  # the wake document, rendered as markdown

        events = names(events_of(client, rid))
        assert events[:3] == ["provisioned", "started", "bridge_handshake_ok"]
        assert events[-2:] == ["think_cycle_start", "think_cycle_end"]
        assert runtime_of(client, rid)["thought_count_24h"] == 1


def test_second_cycle_reads_the_earlier_thoughts(live: Live, fake: FakeLlm) -> None:
    bearer, _, agent_id = new_project(live)
    with live.client(bearer) as client:
        put_secret(client, "llm-key", "sk-history")
        rid = trusted_runtime(client, agent_id, "anthropic")["id"]
        first = post_message(client, agent_id, "remember the number 7341")
        eventually(lambda: message_status(live, first["id"]) == "done", "the first cycle")
        second = post_message(client, agent_id, "which number was it?")
        eventually(lambda: message_status(live, second["id"]) == "done", "the second cycle")
        last = [r for r in fake.requests if r.api_key == "sk-history"][-1]
        turns = last.body["messages"]
        assert turns[0] == {
            "role": "user",
            "content": "Message from tester:\nremember the number 7341",
        }
        assert turns[1]["role"] == "assistant"
        assert "7341" in turns[1]["content"]  # the first reply, decrypted from the strand
        assert turns[-1]["content"].endswith("which number was it?")
        strand_id, thoughts = strand_thoughts(client, rid)
        assert [t["seq"] for t in thoughts] == [1, 2]
        k_master = k_master_of(live, rid)
        assert [opened(k_master, strand_id, t)["in_reply_to"] for t in thoughts] == [
            first["id"],
            second["id"],
        ]


def test_provider_error_is_a_think_cycle_error_and_the_message_waits(
    live: Live, fake: FakeLlm
) -> None:
    bearer, _, agent_id = new_project(live)
    with live.client(bearer) as client:
        put_secret(client, "llm-key", "sk-failing")
        rid = trusted_runtime(client, agent_id, "openai")["id"]
        eventually(status_is(client, rid, "running"), "the runtime to run")
        fake.fail_next(503, 1_000)
        try:
            posted = post_message(client, agent_id, "are you there?")

            def errors() -> list[dict[str, Any]]:
                found = [e for e in events_of(client, rid) if e["event"] == "think_cycle_error"]
                return found if len(found) >= 2 else []

            failed = eventually(errors, "two failed cycles")
        finally:
            fake.clear_failures()
        assert failed[0]["details"]["stage"] == "provider"
        assert "503" in failed[0]["details"]["reason"]
        assert failed[0]["details"]["message_id"] == posted["id"]
        assert "sk-failing" not in json.dumps(failed)
        # Retried, never lost: once the provider answers, the same message is thought about.
        eventually(lambda: message_status(live, posted["id"]) == "done", "the retried cycle")
        _, thoughts = strand_thoughts(client, rid)
        assert len(thoughts) == 1
        assert runtime_of(client, rid)["status"] == "running"


def test_missing_vault_secret_is_a_think_cycle_error(live: Live) -> None:
    bearer, _, agent_id = new_project(live)
    with live.client(bearer) as client:
        rid = trusted_runtime(client, agent_id, "anthropic", vault_key="not-stored-yet")["id"]
        posted = post_message(client, agent_id, "hello")

        def error() -> dict[str, Any] | None:
            found = [e for e in events_of(client, rid) if e["event"] == "think_cycle_error"]
            return found[0] if found else None

        failed = eventually(error, "the failed cycle")
        assert failed["details"]["stage"] == "vault"
        assert "not-stored-yet" in failed["details"]["reason"]
        assert message_status(live, posted["id"]) in {"pending", "taken"}
        put_secret(client, "not-stored-yet", "sk-late")
        eventually(lambda: message_status(live, posted["id"]) == "done", "the cycle after the fix")


def test_thought_stored_is_a_voice_change(live: Live) -> None:
    seen = recorder(live)
    bearer, _, agent_id = new_project(live)
    with live.client(bearer) as client:
        put_secret(client, "llm-key", "sk-voice")
        rid = trusted_runtime(client, agent_id)["id"]
        posted = post_message(client, agent_id, "say something")
        eventually(lambda: message_status(live, posted["id"]) == "done", "the cycle")

    def stored() -> list[Change]:
        return [
            c for c in seen if c.kind == "runtime_thought_stored" and c.details["runtime_id"] == rid
        ]

    change = eventually(stored, "the change")[0]
    assert change.key == "you_run"
    assert change.identity_id == agent_id
    assert change.details["seq"] == 1


# --- the bridged cycle: a real `hearth bridge` process holds K_master ---------------------------


def test_bridged_cycle_through_a_real_bridge_process(live: Live, tmp_path: Path) -> None:
    mnemonic = new_mnemonic()
    keys = derive_keys(mnemonic)
    agent, registered = register(live, Agent(keys.signing, keys.box))
    owner = Owner(
        keys,
        agent,
        registered["project"]["api_key"],
        registered["project"]["id"],
        registered["agent"]["id"],
        registered["agent"]["did"],
    )
    bridge_key = Ed25519PrivateKey.generate()
    with live.client(owner.bearer) as client:
        put_secret(client, "anthropic-key", "sk-bridged")
        created = client.post(
            "/v1/runtimes",
            json=bridged_body(
                identity_id=owner.identity_id,
                bridge={"pubkey": b64_encode(raw_public(bridge_key)), "key_id": str(uuid.uuid4())},
            ),
        )
        assert created.status_code == 201, created.text
        rid = created.json()["id"]
        bridged = Bridged(
            live, owner.bearer, rid, created.json()["control_token"], bridge_key, mnemonic
        )
        process = start_bridge(
            [*bridge_args(tmp_path, bridged), "--initial-delay", "0.05"], tmp_path
        )
        try:
            # The worker binds it; the bridge's handshake moves it to running.
            eventually(status_is(client, rid, "running"), "the bridged runtime to run")
            runtime_key = runtime_of(client, rid)["runtime_public_key"]
            assert runtime_key

            # Until the identity's owner registers the runtime's key, no write can be signed.
            posted = post_message(client, owner.identity_id, "keep this between us")

            def custody_error() -> dict[str, Any] | None:
                found = [e for e in events_of(client, rid) if e["event"] == "think_cycle_error"]
                return found[0] if found else None

            failed = eventually(custody_error, "the unsigned cycle")
            assert failed["details"]["stage"] == "custody"
            assert "not registered" in failed["details"]["reason"]
            assert message_status(live, posted["id"]) in {"pending", "taken"}

            answer = register_key(
                client, owner, "bridge-runtime", runtime_key, purpose="runtime", runtime_id=rid
            )
            assert answer.status_code == 201, answer.text
            eventually(lambda: message_status(live, posted["id"]) == "done", "the bridged cycle")
        finally:
            stop(process, signal.SIGINT, WAIT_S)

        strand_id, stored = strand_thoughts(client, rid)
        assert len(stored) == 1
        thought = stored[0]
        assert thought["signing_key_id"] == "bridge-runtime"
        # The user's K_master opens it, and only it: not another user's, not a trusted one's.
        content = opened(owner.k_master, strand_id, thought)
        assert content["reply"] == reply_text("claude-test", "keep this between us")
        for stranger in (
            derive_keys(new_mnemonic()).strand_master,
            trusted_k_master(os.urandom(32), rid),
        ):
            with pytest.raises(ThoughtOpenError):
                opened(stranger, strand_id, thought)
        assert names(events_of(client, rid)).count("think_cycle_end") == 1
