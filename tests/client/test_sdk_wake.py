"""The SDK's wake (every format) and voice stream against the real service over real HTTP, on
SQLite, and on PostgreSQL when SERVICE_TEST_DATABASE_URL is set; the voice's reconnection
policy against a scripted transport (it reconnects only as often as asked, then ends)."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator

import httpx2
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from hearth.client import HearthClient, HearthError, Registration, VoiceEvent
from tests.support.live import Live, live_on

POW_BITS = 8


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def live(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Live]:
    tmp = tmp_path_factory.mktemp(f"sdk_wake_{request.param}")
    # A short welcome interval, so that the heartbeat is seen within a test.
    with live_on(request.param, tmp, voice_welcome_seconds=1) as service:
        yield service


def registered(live: Live, name: str = "Waker") -> tuple[HearthClient, Registration]:
    client = HearthClient(live.base_url)
    me = client.register(
        (Ed25519PrivateKey.generate(), X25519PrivateKey.generate()), name, pow_difficulty=POW_BITS
    )
    return client, me


def undated(markdown: str) -> str:
    return re.sub(r"Generated at \S+", "Generated at <time>", markdown)


def test_the_wake_in_every_format(live: Live) -> None:
    client, me = registered(live)
    with client:
        client.memory_store("Remember the harbour.", agent_id=me.agent_id)
        document = client.wake(refresh=True)
        assert document["document"] == "hearth-wake/v1"
        assert document["focus"]["identity_id"] == me.agent_id
        contents = [m["content"] for m in document["you_remember"]["memories"]]
        assert "Remember the harbour." in contents

        named = client.wake(identity_id=me.agent_id)
        assert named["focus"]["rule"] == "named"

        markdown = client.wake("md", refresh=True)
        assert isinstance(markdown, str)
        assert markdown.startswith("#")
        assert "Remember the harbour." in markdown
        math = client.wake("math")
        assert 'document = "hearth-wake/v1"' in math.splitlines()

        # The same Markdown, but for the time each answer was built.
        anthropic = client.wake("anthropic", refresh=True)
        assert undated(anthropic["system"]) == undated(markdown)
        openai = client.wake("openai", refresh=True)
        [message] = openai["messages"]
        assert message["role"] == "system"
        assert undated(message["content"]) == undated(markdown)

        with pytest.raises(HearthError) as unknown_format:
            client.wake("yaml")
        assert (unknown_format.value.status, unknown_format.value.error) == (
            422,
            "unknown_format",
        )
        assert unknown_format.value.details == {
            "allowed": ["json", "md", "math", "anthropic", "openai"]
        }
        with pytest.raises(HearthError) as unknown_identity:
            client.wake(identity_id=str(uuid.uuid4()))
        assert unknown_identity.value.status == 404


def test_the_voice_hears_a_change_made_while_it_listens(live: Live) -> None:
    client, me = registered(live, "Listener")
    writer = HearthClient(live.base_url, api_key=client.api_key)
    with client, writer:
        with client.voice(me.did, read_timeout=10) as stream:
            connected = next(stream)
            assert (connected.event, connected.identity_id) == ("connected", me.agent_id)
            assert "you_remember" in connected.data["keys"]

            stored = writer.memory_store("Heard at once.", agent_id=me.agent_id)
            change = next(event for event in stream if event.event == "change")
            assert (change.key, change.kind, change.identity_id) == (
                "you_remember",
                "memory_stored",
                me.agent_id,
            )
            assert change.data["memory_id"] == stored.id
            assert change.at is not None

            welcome = next(event for event in stream if event.event == "welcome")
            assert welcome.data["axiom_id"] == 5
        assert stream.closed
        assert list(stream) == []  # a closed stream yields nothing more


def test_voice_refusals_come_before_the_stream(live: Live) -> None:
    client, _me = registered(live, "Refused")
    with client:
        with pytest.raises(HearthError) as unknown:
            client.voice(str(uuid.uuid4()))
        assert unknown.value.status == 404
        anonymous = HearthClient(live.base_url, api_key="hk_not_a_key")
        with anonymous, pytest.raises(HearthError) as unauthorized:
            anonymous.voice(str(uuid.uuid4()))
        assert unauthorized.value.status == 401
        with pytest.raises(ValueError, match="reconnect"):
            client.voice(str(uuid.uuid4()), reconnect=-1)


def _scripted(body: bytes, status: int = 200) -> tuple[httpx2.MockTransport, list[int]]:
    """A transport that answers every voice request with ``body``; counts the connections."""
    connections: list[int] = []

    def handle(request: httpx2.Request) -> httpx2.Response:
        connections.append(1)
        if status != 200:
            return httpx2.Response(status, json={"error": "unauthorized", "message": "no"})
        return httpx2.Response(200, headers={"Content-Type": "text/event-stream"}, content=body)

    return httpx2.MockTransport(handle), connections


CONNECTED = b'event: connected\ndata: {"identity_id": "i", "keys": []}\n\n'
CHANGE = b'event: change\ndata: {"key": "you_own", "kind": "wallet_funded"}\n\n: ping\n\n'


def test_the_voice_reconnects_only_as_often_as_asked() -> None:
    transport, connections = _scripted(CONNECTED + CHANGE)
    pauses: list[float] = []
    with HearthClient("http://voice.test", api_key="k", transport=transport) as client:
        stream = client.voice("i", reconnect=2, backoff=0.5)
        stream._sleep = pauses.append  # no real waiting in a unit test
        events = list(stream)
    assert [e.event for e in events] == ["connected", "change"] * 3
    assert len(connections) == 3
    assert pauses == [0.5, 1.0]
    assert stream.reconnects == 2
    assert events[1].kind == "wallet_funded"

    transport, connections = _scripted(CONNECTED)
    with HearthClient("http://voice.test", api_key="k", transport=transport) as client:
        assert [e.event for e in client.voice("i")] == ["connected"]
    assert len(connections) == 1  # no reconnection unless asked


def test_a_refused_reconnection_is_not_retried() -> None:
    answers = iter([200, 401, 200, 200])
    connections: list[int] = []

    def handle(request: httpx2.Request) -> httpx2.Response:
        connections.append(1)
        status = next(answers)
        if status != 200:
            return httpx2.Response(status, json={"error": "unauthorized", "message": "revoked"})
        return httpx2.Response(
            200, headers={"Content-Type": "text/event-stream"}, content=CONNECTED
        )

    transport = httpx2.MockTransport(handle)
    with HearthClient("http://voice.test", api_key="k", transport=transport) as client:
        stream = client.voice("i", reconnect=5, backoff=0)
        assert next(stream).event == "connected"
        with pytest.raises(HearthError) as refused:
            next(stream)
    assert refused.value.status == 401
    assert len(connections) == 2
    assert stream.closed


def test_events_that_are_not_json_objects_keep_their_text() -> None:
    event = VoiceEvent.from_sse("change", "not json")
    assert (event.data, event.raw, event.kind) == ({}, "not json", None)
    assert VoiceEvent.from_sse("welcome", json.dumps([1])).data == {}
