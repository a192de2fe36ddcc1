"""A body that is not JSON this service reads is a 400 ``invalid_json`` in the error shape
(docs/service.md, "Errors" and "Text the service stores").

Bytes that are not UTF-8 (UTF-16 included, which Python's parser would take), nesting deeper
than the edge's bound or than the parser's recursion, and an integer too long to convert were a
bare 400 ``bad_request`` "There was an error parsing the body", or were even accepted. Each is
checked on a route whose body is a model (``POST /v1/keys``) and on a root-proof route, whose
proof signs the exact raw bytes (``PUT /v1/identities/{id}/expression``): the proof is valid for
the bytes sent, and still nothing is written and no sequence is consumed.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx2
import pytest

from hearth.server.edge_text import MAX_JSON_DEPTH
from tests.support.agents import Registered
from tests.support.live import Live, live_on


def nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


def member(name: str, value: bytes) -> bytes:
    """A one-member JSON object from raw value bytes (so that bad bytes stay as they are)."""
    return b'{"' + name.encode() + b'":' + value + b"}"


# (label, raw value bytes of the text member, expected problem type)
CASES = [
    ("invalid UTF-8", b'"\xff\xfe"', "json_not_utf8"),
    ("UTF-8-encoded surrogate", b'"\xed\xa0\x80"', "json_not_utf8"),
    ("nested beyond the parser", nested(5_000), "json_too_deep"),
    ("nested beyond the bound", nested(MAX_JSON_DEPTH), "json_too_deep"),
    ("integer too long", b"1" * 5000, "json_number_too_long"),
]
IDS = [label for label, _, _ in CASES]


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def live(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Live]:
    with live_on(request.param, tmp_path_factory.mktemp(f"json_{request.param}")) as service:
        yield service


@pytest.fixture(scope="module")
def owner(live: Live) -> Registered:
    return Registered.new(live)


def assert_invalid_json(response: httpx2.Response, problem: str) -> None:
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["error"] == "invalid_json"
    assert body["message"] == "The request body is not valid JSON."
    assert [d["type"] for d in body["details"]] == [problem]


@pytest.mark.parametrize(("label", "value", "problem"), CASES, ids=IDS)
def test_a_model_body_route(owner: Registered, label: str, value: bytes, problem: str) -> None:
    with owner.client() as client:
        before = client.get("/v1/keys").json()
        response = client.post(
            "/v1/keys", content=member("name", value), headers={"Content-Type": "application/json"}
        )
        assert_invalid_json(response, problem)
        assert client.get("/v1/keys").json() == before


def test_utf16_is_not_utf8(owner: Registered) -> None:
    """Python's parser detects UTF-16 and reads it; the service does not."""
    with owner.client() as client:
        before = client.get("/v1/keys").json()
        response = client.post(
            "/v1/keys",
            content='{"name": "sixteen"}'.encode("utf-16"),
            headers={"Content-Type": "application/json"},
        )
        assert_invalid_json(response, "json_not_utf8")
        assert client.get("/v1/keys").json() == before


@pytest.mark.parametrize(
    ("label", "value", "problem"),
    [*CASES, ("UTF-16", b"", "json_not_utf8")],
    ids=[*IDS, "UTF-16"],
)
def test_a_root_proof_route(owner: Registered, label: str, value: bytes, problem: str) -> None:
    path = f"/v1/identities/{owner.id}/expression"
    raw = (
        '{"register": "sixteen"}'.encode("utf-16")
        if label == "UTF-16"
        else member("register", value)
    )
    sequence = owner.next_sequence()
    with owner.client() as client:
        expression = client.get(path).json()
        headers = owner.agent.root_headers(owner.did, "PUT", path, raw, sequence)
        response = client.put(path, content=raw, headers=headers)
        assert_invalid_json(response, problem)
        assert client.get(path).json() == expression
    assert owner.next_sequence() == sequence


def test_nesting_up_to_the_bound_is_read(owner: Registered) -> None:
    """The bound counts every array and object, the body's own object included."""

    def metadata(depth: int) -> bytes:
        inner = b"[" * (depth - 2) + b"1" + b"]" * (depth - 2)
        return b'{"name": "Deep", "metadata": {"a": ' + inner + b"}}"

    with owner.client() as client:
        headers = {"Content-Type": "application/json"}
        at_bound = client.post("/v1/bootstrap", content=metadata(MAX_JSON_DEPTH), headers=headers)
        assert at_bound.status_code == 201, at_bound.text
        beyond = client.post("/v1/bootstrap", content=metadata(MAX_JSON_DEPTH + 1), headers=headers)
        assert_invalid_json(beyond, "json_too_deep")


@pytest.mark.parametrize(("label", "value", "problem"), CASES, ids=IDS)
def test_adds_documents_keep_their_own_parser(
    owner: Registered, label: str, value: bytes, problem: str
) -> None:
    """The document route reads raw bytes and answers with the ADDS validator's problems
    (docs/adds.md): still never a bare ``bad_request`` and never a 5xx."""
    with owner.client() as client:
        response = client.post("/v1/adds/documents", content=member("kind", value))
    assert response.status_code == 422, response.text
    assert response.json()["error"] == "invalid_document"
