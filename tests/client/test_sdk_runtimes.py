"""The SDK's runtime calls (``RuntimeCalls``) and the self runtime's loop (``SelfRuntime``)
against the real service over real HTTP: runtimes, strands, thoughts sealed and opened on the
client, the inbox, identity keys with root proofs, and the self loop's heartbeat, take,
complete and release. On SQLite, and on PostgreSQL when SERVICE_TEST_DATABASE_URL is set."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from hearth.client import HearthClient, HearthError, InboxMessage, ThoughtOpenError
from hearth.client.mnemonic_keys import IdentityKeys, derive_keys, new_mnemonic
from hearth.client.self_runtime import (
    THOUGHT_FORMAT,
    Prompt,
    ProviderError,
    SelfRuntime,
    SelfRuntimeConfig,
    build_prompt,
    prompt_text,
    thought_plaintext,
)
from hearth.proofs import b64_encode
from tests.support.live import Live, live_on

POW_BITS = 8


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def live(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Live]:
    tmp = tmp_path_factory.mktemp(f"sdk_runtimes_{request.param}")
    with live_on(request.param, tmp) as service:
        yield service


@dataclass
class Me:
    client: HearthClient
    keys: IdentityKeys
    identity_id: str


@pytest.fixture
def me(live: Live) -> Iterator[Callable[[], Me]]:
    """Registers identities (keys from new words); their clients are closed afterwards."""
    made: list[Me] = []

    def make() -> Me:
        keys = derive_keys(new_mnemonic())
        client = HearthClient(live.base_url)
        registered = client.register(keys, "Selfish", pow_difficulty=POW_BITS)
        made.append(Me(client, keys, registered.agent_id))
        return made[-1]

    yield make
    for who in made:
        who.client.close()


@dataclass
class ScriptedProvider:
    """A provider on this machine whose replies are scripted; it records every prompt."""

    replies: list[str | ProviderError]
    name: str = "scripted"
    model: str | None = "script-1"
    prompts: list[Prompt] = field(default_factory=list)

    def complete(self, prompt: Prompt) -> str:
        self.prompts.append(prompt)
        reply = self.replies.pop(0)
        if isinstance(reply, ProviderError):
            raise reply
        return reply


def loop(who: Me, runtime_id: str, provider: ScriptedProvider) -> SelfRuntime:
    config = SelfRuntimeConfig(
        runtime_id=runtime_id,
        k_master=who.keys.strand_master,
        signing_key=who.keys.signing,
        poll_seconds=0.01,
        initial_backoff=0.01,
    )
    return SelfRuntime(who.client, config, provider)


def test_runtime_calls(me: Callable[[], Me]) -> None:
    who = me()
    client = who.client
    created = client.runtime_create(
        "laptop",
        "self",
        identity_id=who.identity_id,
        llm={"provider": "ollama", "model": "llama3"},
        metadata={"room": "study"},
    )
    assert (created.mode, created.status, created.region) == ("self", "provisioned", "lhr")
    assert created.llm == {"provider": "ollama", "model": "llama3", "vault_key": None}
    assert created.control_token is None
    bridged = client.runtime_create(
        "night shift",
        "bridged",
        identity_id=who.identity_id,
        llm={"provider": "openai", "model": "gpt-test", "vault_key": "openai-key"},
        bridge={
            "pubkey": b64_encode(Ed25519PrivateKey.generate().public_key().public_bytes_raw()),
            "key_id": str(uuid.uuid4()),
        },
    )
    assert bridged.control_token is not None
    assert bridged.control_token.startswith("hrt_")
    assert bridged.control_token not in repr(bridged)

    assert client.runtime(created.id) == created
    assert [r.id for r in client.runtimes().items] == [bridged.id, created.id]
    assert [r.id for r in client.runtimes(mode="self").items] == [created.id]
    assert [r.id for r in client.runtimes(status="running").items] == []
    patched = client.runtime_patch(created.id, name="desk", metadata={"room": "attic"})
    assert (patched.name, patched.metadata) == ("desk", {"room": "attic"})

    rotated = client.runtime_control_token(bridged.id)
    assert rotated.runtime_id == bridged.id
    assert rotated.control_token not in (bridged.control_token, "")
    assert rotated.control_token not in repr(rotated)
    with pytest.raises(HearthError) as not_bridged:
        client.runtime_control_token(created.id)
    assert (not_bridged.value.status, not_bridged.value.error) == (409, "not_bridged")
    with pytest.raises(HearthError) as not_in_error:
        client.runtime_restart(created.id)
    assert not_in_error.value.error == "invalid_runtime_state"

    beat = client.runtime_heartbeat(created.id)
    assert beat.status == "running"
    assert beat.last_seen_at is not None
    assert [e.event for e in client.runtime_events(created.id).items] == [
        "provisioned",
        "started",
        "bridge_handshake_ok",
    ]
    page = client.runtime_events(created.id, limit=2)
    assert len(page.items) == 2
    assert page.next_cursor is not None
    rest = client.runtime_events(created.id, cursor=page.next_cursor)
    assert [e.event for e in rest.items] == ["bridge_handshake_ok"]

    deleted = client.runtime_delete(created.id)
    assert (deleted.deleted, deleted.status) == (True, "stopped")
    assert [r.id for r in client.runtimes().items] == [bridged.id]
    assert {r.id for r in client.runtimes(include_deleted=True).items} == {bridged.id, created.id}
    with pytest.raises(HearthError) as gone:
        client.runtime_heartbeat(created.id)
    assert gone.value.error == "runtime_deleted"


def test_thoughts_are_sealed_and_opened_on_the_client(me: Callable[[], Me]) -> None:
    who = me()
    client = who.client
    runtime = client.runtime_create("laptop", "self", identity_id=who.identity_id)
    strand = client.strand_create(who.identity_id, "diary", runtime_id=runtime.id)
    assert (strand.next_seq, strand.runtime_id) == (1, runtime.id)
    assert [s.id for s in client.strands(runtime_id=runtime.id).items] == [strand.id]
    assert client.strand(strand.id) == strand

    texts = [f"thought number {i}".encode() for i in range(1, 6)]
    for i, text in enumerate(texts, start=1):
        written = client.thought_write(
            strand.id, text, k_master=who.keys.strand_master, signing_key=who.keys.signing
        )
        assert (written.seq, written.next_seq, written.signing_key_id) == (i, i + 1, "primary")
        assert written.runtime_id == runtime.id

    sealed = client.thoughts(strand.id)
    assert [t.plaintext for t in sealed.items] == [None] * 5
    assert all(text not in t.ciphertext for t, text in zip(sealed.items, texts, strict=True))
    opened = client.thoughts(strand.id, k_master=who.keys.strand_master, after_seq=1, limit=2)
    assert [t.plaintext for t in opened.items] == texts[1:3]
    assert opened.next_after_seq == 3
    assert texts[1].decode() not in repr(opened)
    recent = client.recent_thoughts(strand.id, k_master=who.keys.strand_master, count=3)
    assert [(t.seq, t.plaintext) for t in recent] == [(3, texts[2]), (4, texts[3]), (5, texts[4])]
    with pytest.raises(ThoughtOpenError):
        client.thoughts(strand.id, k_master=derive_keys(new_mnemonic()).strand_master)

    # A stale seq is refused and nothing is stored.
    with pytest.raises(HearthError) as conflict:
        client.thought_write(
            strand.id, b"late", k_master=who.keys.strand_master, signing_key=who.keys.signing, seq=2
        )
    assert (conflict.value.status, conflict.value.error) == (409, "thought_seq_conflict")
    assert client.strand(strand.id).next_seq == 6
    record = client.runtime(runtime.id)
    assert record.last_thought_at is not None
    assert record.thought_count_24h == 5


def test_identity_keys_with_root_proofs_and_a_device_signed_write(me: Callable[[], Me]) -> None:
    who = me()
    client = who.client
    device = Ed25519PrivateKey.generate()
    registered = client.identity_key_register(
        who.identity_id, "phone-1", device, root_key=who.keys.signing
    )
    assert (registered.kid, registered.purpose, registered.revoked) == ("phone-1", "device", False)
    assert [k.kid for k in client.identity_keys(who.identity_id)] == ["primary", "phone-1"]
    with pytest.raises(HearthError) as unproven:
        client.identity_key_register(who.identity_id, "phone-2", Ed25519PrivateKey.generate())
    assert unproven.value.status == 428

    strand = client.strand_create(who.identity_id, "from the phone")
    client.thought_write(
        strand.id,
        b"signed on the phone",
        k_master=who.keys.strand_master,
        signing_key=device,
        signing_key_id="phone-1",
    )
    revoked = client.identity_key_revoke(who.identity_id, "phone-1", root_key=who.keys.signing)
    assert revoked.revoked
    with pytest.raises(HearthError) as refused:
        client.thought_write(
            strand.id,
            b"after revocation",
            k_master=who.keys.strand_master,
            signing_key=device,
            signing_key_id="phone-1",
        )
    assert (refused.value.status, refused.value.error) == (403, "signing_key_revoked")
    [thought] = client.thoughts(strand.id, k_master=who.keys.strand_master).items
    assert (thought.plaintext, thought.signing_key_id) == (b"signed on the phone", "phone-1")


def test_inbox_and_the_self_loop_calls(me: Callable[[], Me]) -> None:
    who = me()
    client = who.client
    runtime = client.runtime_create("laptop", "self", identity_id=who.identity_id)
    client.runtime_heartbeat(runtime.id)
    assert client.runtime_take(runtime.id) is None
    sent = client.inbox_send(who.identity_id, "hello there", sender="ada")
    assert (sent.status, sent.sender, sent.woke_runtimes) == ("pending", "ada", ())
    assert "hello there" not in repr(sent)
    taken = client.runtime_take(runtime.id)
    assert taken is not None
    assert (taken.id, taken.status, taken.taken_by, taken.body) == (
        sent.id,
        "taken",
        runtime.id,
        "hello there",
    )
    released = client.runtime_release(runtime.id, sent.id)
    assert released.status == "pending"
    assert [m.status for m in client.inbox(who.identity_id, status="pending").items] == ["pending"]
    again = client.runtime_take(runtime.id)
    assert again is not None
    done = client.runtime_complete(runtime.id, again.id)
    assert done.status == "done"
    with pytest.raises(HearthError) as twice:
        client.runtime_complete(runtime.id, again.id)
    assert twice.value.error == "inbox_message_not_taken"
    assert client.inbox(who.identity_id, status="pending").items == ()


def test_the_self_loop_thinks_on_this_machine(me: Callable[[], Me]) -> None:
    who = me()
    client = who.client
    runtime = client.runtime_create("laptop", "self", identity_id=who.identity_id)
    provider = ScriptedProvider(["first reply", ProviderError("scripted outage"), "second reply"])
    self_loop = loop(who, runtime.id, provider)

    assert self_loop.step() == "idle"
    assert client.runtime(runtime.id).status == "running"
    first = client.inbox_send(who.identity_id, "what is your name?", sender="ada")
    assert self_loop.step() == "done"
    [strand] = client.strands(runtime_id=runtime.id).items
    [thought] = client.thoughts(strand.id, k_master=who.keys.strand_master).items
    assert thought.plaintext is not None
    stored = json.loads(thought.plaintext)
    assert stored == {
        "format": THOUGHT_FORMAT,
        "in_reply_to": first.id,
        "sender": "ada",
        "message": "what is your name?",
        "reply": "first reply",
        "provider": "scripted",
        "model": "script-1",
    }
    prompt = provider.prompts[0]
    assert "Selfish" in prompt.system  # the wake, as markdown
    assert prompt.turns == (("user", "Message from ada:\nwhat is your name?"),)

    # A provider failure releases the message: pending again, think_cycle_error appended.
    second = client.inbox_send(who.identity_id, "and your purpose?", sender="ada")
    assert self_loop.step() == "failed"
    [waiting] = client.inbox(who.identity_id, status="pending").items
    assert waiting.id == second.id
    assert client.runtime_events(runtime.id).items[-1].event == "think_cycle_error"
    assert self_loop.step() == "done"
    assert provider.prompts[-1].turns == (
        ("user", "Message from ada:\nwhat is your name?"),
        ("assistant", "first reply"),
        ("user", "Message from ada:\nand your purpose?"),
    )
    assert client.inbox(who.identity_id, status="pending").items == ()
    record = client.runtime(runtime.id)
    assert (record.status, record.thought_count_24h) == ("running", 2)
    assert record.last_thought_at is not None
    assert (self_loop.processed, self_loop.failed) == (2, 1)


def test_an_answered_message_is_completed_without_thinking_again(me: Callable[[], Me]) -> None:
    """A cycle that stored its thought but could not complete the message: the next cycle
    finds the answer among the recent thoughts and only completes it."""
    who = me()
    client = who.client
    runtime = client.runtime_create("laptop", "self", identity_id=who.identity_id)
    client.runtime_heartbeat(runtime.id)
    strand = client.strand_create(who.identity_id, "thoughts", runtime_id=runtime.id)
    client.inbox_send(who.identity_id, "ping", sender="ada")
    taken = client.runtime_take(runtime.id)
    assert taken is not None
    client.thought_write(
        strand.id,
        thought_plaintext(taken, "pong", "scripted", None),
        k_master=who.keys.strand_master,
        signing_key=who.keys.signing,
    )
    client.runtime_release(runtime.id, taken.id)  # as if the completion had been lost

    provider = ScriptedProvider([])
    assert loop(who, runtime.id, provider).step() == "done"
    assert provider.prompts == []
    assert client.inbox(who.identity_id, status="done").items[0].id == taken.id
    assert client.strand(strand.id).next_seq == 2  # no second thought


def test_the_prompt_alternates_and_renders_for_a_command() -> None:
    message = InboxMessage(
        id="m3",
        identity_id="i",
        sender="ada",
        body="third",
        status="taken",
        taken_by=None,
        taken_at=None,
        done_at=None,
        created_at="",
    )
    earlier = InboxMessage(**{**message.__dict__, "id": "m1", "body": "first"})
    history = [
        b"a note to self",
        thought_plaintext(earlier, "reply one", "openai", "gpt"),
        b"another note",
    ]
    prompt = build_prompt("# Wake", history, message)
    assert prompt.system.endswith("# Wake")
    assert [role for role, _ in prompt.turns] == ["user", "assistant", "user"]
    assert prompt.turns[0][1] == (
        "An earlier thought of yours:\na note to self\n\nMessage from ada:\nfirst"
    )
    assert prompt.turns[2][1].endswith("Message from ada:\nthird")
    text = prompt_text(prompt)
    assert text.index("### user") < text.index("### assistant") < text.rindex("### user")
    assert text.rstrip().endswith("Message from ada:\nthird")
