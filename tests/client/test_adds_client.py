"""``AddsClient`` against a scripted node (``httpx2.MockTransport``), and the error tree it raises
into: refusals read from every body a node sends, transport failures wrapped, no bearer shown."""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx2
import pytest

from hearth.adds import cid_for_bytes
from hearth.client import (
    AddsClient,
    AddsRefusal,
    ClientError,
    HearthError,
    InsufficientCredits,
    InvalidAnswer,
    TransportError,
)

BASE = "http://node.test"
BEARER = "secret-bearer-0123456789"
CID = cid_for_bytes(b"{}")


def node(handler: Callable[[httpx2.Request], httpx2.Response]) -> AddsClient:
    client = httpx2.Client(transport=httpx2.MockTransport(handler))
    return AddsClient(BASE, bearer=BEARER, client=client)


@pytest.fixture
def sent() -> list[httpx2.Request]:
    return []


def test_the_tree_has_one_root() -> None:
    for kind in (TransportError, InvalidAnswer, HearthError, InsufficientCredits, AddsRefusal):
        assert issubclass(kind, ClientError)
    assert issubclass(AddsRefusal, HearthError)
    assert issubclass(InsufficientCredits, HearthError)


@pytest.mark.parametrize(
    ("body", "code", "reason", "text"),
    [
        (
            {"error": "not_held", "message": f"nothing for Bearer {BEARER}"},
            "not_held",
            "nothing for Bearer [bearer]",
            f"{BASE}: GET /v1/adds/documents/{CID}: HTTP 404 not_held: nothing for Bearer [bearer]",
        ),
        (
            {"error": {"code": "nested", "message": "inside"}},
            "nested",
            "inside",
            f"{BASE}: GET /v1/adds/documents/{CID}: HTTP 404 nested: inside",
        ),
        (
            b"  upstream exploded  ",
            None,
            "upstream exploded",
            f"{BASE}: GET /v1/adds/documents/{CID}: HTTP 404: upstream exploded",
        ),
        (b"", None, None, f"{BASE}: GET /v1/adds/documents/{CID}: HTTP 404"),
    ],
)
def test_a_refusal_reads_any_body(
    body: object, code: str | None, reason: str | None, text: str
) -> None:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    client = node(lambda request: httpx2.Response(404, content=content))
    with client, pytest.raises(AddsRefusal) as caught:
        client.document(CID)
    refusal = caught.value
    assert (refusal.status, refusal.code, refusal.reason) == (404, code, reason)
    assert refusal.error == (code or "http_404")
    assert str(refusal) == text
    assert BEARER not in str(refusal) + repr(refusal)


def test_a_transport_failure_wraps_httpx2_and_hides_the_bearer() -> None:
    def refuse(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError(f"no route for {BEARER}", request=request)

    with node(refuse) as client, pytest.raises(TransportError) as caught:
        client.provider_record()
    assert isinstance(caught.value.__cause__, httpx2.ConnectError)
    assert str(caught.value) == (
        f"GET {BASE}/v1/adds/provider-record: ConnectError: no route for [bearer]"
    )


def test_idempotent_requests_are_retried_then_say_how_often() -> None:
    attempts: list[int] = []

    def drop(request: httpx2.Request) -> httpx2.Response:
        attempts.append(1)
        raise httpx2.ReadError("dropped", request=request)

    client = AddsClient(
        BASE, client=httpx2.Client(transport=httpx2.MockTransport(drop)), retries=2, backoff=0
    )
    with client, pytest.raises(TransportError, match="ReadError after 3 attempt"):
        client.has_block(CID)
    assert len(attempts) == 3


def test_answers_that_break_the_routes_promise() -> None:
    with node(lambda request: httpx2.Response(200, content=b"other bytes")) as client:
        with pytest.raises(InvalidAnswer, match="with other bytes: refused"):
            client.document(CID)
        with pytest.raises(InvalidAnswer, match="not a head resolution"):
            client.head("notes", "key")
        with pytest.raises(InvalidAnswer, match="announced 11 bytes, more than 4"):
            client.get_block(CID, limit=4)


def test_the_bearer_is_sent_and_a_missing_head_is_none(sent: list[httpx2.Request]) -> None:
    def answer(request: httpx2.Request) -> httpx2.Response:
        sent.append(request)
        return httpx2.Response(404, json={"error": "not_found"})

    with node(answer) as client:
        assert client.head("a/b", "key") is None
    assert sent[0].headers["authorization"] == f"Bearer {BEARER}"
    assert sent[0].url.raw_path == b"/v1/adds/heads/a%2Fb?issuer_key=key"
