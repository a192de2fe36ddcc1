"""The OpenAPI document says what the service does (docs/service.md, "The OpenAPI document"):
operation ids, security, the root-proof headers, the answers every request can get, the formats
of cursors and CIDs, storable text, the rules across fields of a body, and the bridge's
WebSocket. Where the service can be asked, it is asked: a 405 lists the path's methods, an
operation that declares the bearer refuses a request without one, the bridge path answers a
plain GET with 426, and the bridge's real frames match the schemas the document shows.
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from base64 import b64encode
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import jsonschema
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError
from websockets.asyncio.client import connect

from hearth.client.bridge import bridge_url
from hearth.proofs import AUTHORITY_HEADERS, EncodingError, b64_decode, b64_encode
from hearth.proofs.bridge import build_request, new_handshake_nonce, sign_bridge_auth
from hearth.proofs.encoding import b64_pattern
from hearth.server.models import (
    CID_PATTERN,
    KDF_PATTERN,
    ExpressionPatch,
    FundRequest,
    MemoryCreate,
)
from hearth.server.models_elevation import SponsorStatement
from hearth.server.models_forks import ForkRequest, MemorySelection, TemplatePublish
from hearth.server.openapi import METHODS, NO_NUL
from tests.support.agents import raw_public
from tests.support.live import Live, live_on
from tests.support.runtimes import bridged_body, create, new_project, self_body

GOLDEN = Path(__file__).parents[1] / "vectors" / "openapi" / "operation-ids.json"
HTTP_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
# The operations anyone may call: no project bearer (the bridge takes a control token).
PUBLIC = {
    "GET /public/porch",
    "GET /public/plans",
    "GET /public/provider/box-key",
    "GET /v1/welcome",
    "GET /v1/pathways",
    "GET /about",
    "GET /.well-known/love-packages",
    "GET /.well-known/love-packages/index.json",
    "GET /.well-known/love-packages/{name}/{version}/manifest.json",
    "GET /packages/{filename}",
    "GET /metrics",
    "GET /healthz",
    "GET /readyz",
    "GET /public/agents",
    "GET /public/agents/{did}",
    "GET /public/safety",
    "GET /public/self",
    "GET /v1/self",
    "GET /v1/platform/wake",
    "GET /v1/canon",
    "GET /v1/mathos",
    "GET /v1/mathos/catalog",
    "GET /v1/mathos/public-key",
    "GET /v1/youspeak",
    "GET /federation/about",
    "POST /v1/register",
    "POST /v1/register/agent",
    "POST /public/identities/by-pubkey",
    "POST /v1/identity/recover",
    "GET /v1/adds/provider-record",
    "GET /ipfs/{cid}",
    "HEAD /ipfs/{cid}",
}
BRIDGE = "GET /v1/runtimes/{runtime_id}/bridge"


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def live(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Live]:
    with live_on(request.param, tmp_path_factory.mktemp("openapi_document")) as live:
        yield live


@pytest.fixture(scope="module")
def document(live: Live) -> dict[str, Any]:
    with live.client() as client:
        response = client.get("/v1/openapi.json")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def operations(document: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in document["paths"].items():
        for method in METHODS:
            if method in item:
                yield f"{method.upper()} {path}", path, item[method]


def concrete(path: str) -> str:
    """A URL of the path template: every parameter is ``x`` (no literal path is spelt so)."""
    return re.sub(r"\{[^}]+\}", "x", path)


# --- names and security ---------------------------------------------------------------------------


def test_operation_ids_are_the_pinned_ones(document: dict[str, Any]) -> None:
    ids = {label: operation["operationId"] for label, _, operation in operations(document)}
    assert len(set(ids.values())) == len(ids)
    pinned = json.loads(GOLDEN.read_text())
    assert ids == pinned, (
        f"operation ids changed; if that is intended, write them to {GOLDEN}:\n"
        + json.dumps(dict(sorted(ids.items())), indent=2)
    )


def test_every_operation_but_the_public_ones_declares_the_bearer(document: dict[str, Any]) -> None:
    schemes = document["components"]["securitySchemes"]
    assert schemes["bearer"]["type"] == "http"
    assert schemes["bearer"]["scheme"] == "bearer"
    assert schemes["controlToken"]["scheme"] == "bearer"
    for label, _, operation in operations(document):
        expected = (
            [{"controlToken": []}]
            if label == BRIDGE
            else None
            if label in PUBLIC
            else [{"bearer": []}]
        )
        assert operation.get("security") == expected, label


def test_a_declared_bearer_is_enforced_and_a_public_operation_needs_none(
    live: Live, document: dict[str, Any]
) -> None:
    """Every operation without credentials: 401 exactly where the document declares security."""
    with httpx2.Client(base_url=live.base_url, timeout=30) as client:
        for label, path, operation in operations(document):
            method = label.split(" ", 1)[0]
            body = {"json": {}} if "requestBody" in operation and method != "PUT" else {}
            response = client.request(method, concrete(path), **body)
            if operation.get("security"):
                assert response.status_code == 401, (label, response.text)
                if method != "HEAD":
                    assert response.json()["error"] in ("unauthorized", "invalid_control_token")
            else:
                assert response.status_code != 401, (label, response.text)


# --- 405 ------------------------------------------------------------------------------------------


def served_elsewhere(document: dict[str, Any], url: str, method: str) -> bool:
    """Whether another path template that declares ``method`` also matches ``url``: GET
    /v1/bootstrap/elevate is GET /v1/bootstrap/{agent_id} for an agent named "elevate"."""
    for path, item in document["paths"].items():
        pattern = re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(path))
        if method.lower() in item and re.fullmatch(pattern, url):
            return True
    return False


def test_a_405_lists_every_method_of_its_path(live: Live, document: dict[str, Any]) -> None:
    with httpx2.Client(base_url=live.base_url, timeout=30) as client:
        for path, item in document["paths"].items():
            declared = {method.upper() for method in item if method in METHODS}
            for method in sorted(set(HTTP_METHODS) - declared):
                if served_elsewhere(document, concrete(path), method):
                    continue
                response = client.request(method, concrete(path))
                assert response.status_code == 405, (method, path, response.text)
                allowed = {m.strip() for m in response.headers["allow"].split(",")}
                assert allowed == declared, (method, path, response.headers["allow"])
                if method != "HEAD":
                    assert response.json()["error"] == "method_not_allowed"


def test_a_concrete_path_is_its_own_resource(live: Live) -> None:
    """/v1/bootstrap/elevate is a path of its own (POST), not an agent id of
    /v1/bootstrap/{agent_id} (GET): OPTIONS lists POST only, as the document does."""
    with httpx2.Client(base_url=live.base_url, timeout=30) as client:
        response = client.options("/v1/bootstrap/elevate")
    assert response.status_code == 405
    assert response.headers["allow"] == "POST"


# --- responses ------------------------------------------------------------------------------------


def test_root_proof_headers_are_declared_where_a_428_can_answer(document: dict[str, Any]) -> None:
    proof = set(AUTHORITY_HEADERS)
    for label, _, operation in operations(document):
        headers = {p["name"]: p for p in operation.get("parameters", []) if p["in"] == "header"}
        declares = proof <= set(headers)
        assert declares == ("428" in operation["responses"]), label
        for name in proof & set(headers):
            assert headers[name]["required"] is False
            assert headers[name]["schema"] == {"type": "string"}


def test_the_answers_every_request_can_get(document: dict[str, Any]) -> None:
    for label, _, operation in operations(document):
        responses = operation["responses"]
        assert {"413", "431", "500"} <= set(responses), label
        content = operation.get("requestBody", {}).get("content", {})
        if any(media.endswith("json") for media in content):
            assert "400" in responses, label
        inputs = [p for p in operation.get("parameters", []) if p["in"] in ("path", "query")]
        if content or inputs:
            assert "422" in responses, label
        error = responses["431"]["content"]["application/json"]["schema"]
        assert error == {"$ref": "#/components/schemas/ErrorBody"}


@pytest.mark.parametrize(
    ("label", "status"),
    [
        ("POST /v1/identities/{id}/fork", "402"),
        ("POST /v1/templates/{template_id}/purchase", "402"),
        ("POST /v1/wallets/{wallet_id}/fund", "402"),
        ("POST /v1/register/agent", "429"),
        ("POST /v1/register/agent", "409"),
        ("DELETE /v1/runtimes/{id}", "409"),
        ("POST /v1/adds/receipts", "409"),
        ("PUT /v1/identities/{id}/expression", "409"),
        (BRIDGE, "426"),
    ],
)
def test_refusals_are_declared_where_they_occur(
    document: dict[str, Any], label: str, status: str
) -> None:
    by_label = {name: operation for name, _, operation in operations(document)}
    assert status in by_label[label]["responses"]


def test_the_retired_registration_is_deprecated(document: dict[str, Any]) -> None:
    operation = document["paths"]["/v1/register"]["post"]
    assert operation["deprecated"] is True
    assert set(operation["responses"]) >= {"410"}


# --- formats --------------------------------------------------------------------------------------


def test_every_cursor_and_cid_has_its_pattern(document: dict[str, Any]) -> None:
    seen = set()
    for label, _, operation in operations(document):
        for parameter in operation.get("parameters", []):
            if parameter["name"] in ("cursor", "cid"):
                seen.add(parameter["name"])
                assert "pattern" in parameter["schema"], (label, parameter)
            if parameter["name"] == "cid":
                assert parameter["schema"]["pattern"] == CID_PATTERN
    assert seen == {"cursor", "cid"}


def _request_strings(document: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    schemas = document["components"]["schemas"]
    seen: set[str] = set()

    def walk(where: str, schema: Any) -> Iterator[tuple[str, dict[str, Any]]]:
        if not isinstance(schema, dict):
            return
        if "$ref" in schema:
            name = schema["$ref"].rsplit("/", 1)[-1]
            if name not in seen:
                seen.add(name)
                yield from walk(name, schemas[name])
            return
        if schema.get("type") == "string":
            yield where, schema
        if schema.get("type") == "object" and schema.get("additionalProperties") is not False:
            yield f"{where} (member names)", schema.get("propertyNames", {"type": "string"})
        for key in ("items", "additionalProperties"):
            yield from walk(where, schema.get(key))
        for child in schema.get("properties", {}).values():
            yield from walk(where, child)
        for key in ("anyOf", "oneOf", "allOf"):
            for child in schema.get(key, []):
                yield from walk(where, child)

    for label, _, operation in operations(document):
        for parameter in operation.get("parameters", []):
            if parameter["in"] in ("path", "query"):
                yield from walk(f"{label} {parameter['name']}", parameter["schema"])
        for media, content in operation.get("requestBody", {}).get("content", {}).items():
            if media.endswith("json"):
                yield from walk(label, content["schema"])


def test_no_request_string_may_hold_a_nul(document: dict[str, Any]) -> None:
    """The service refuses NUL wherever it appears (422 unstorable_text); so does the document."""
    for where, schema in _request_strings(document):
        if "enum" in schema or "const" in schema or "format" in schema:
            continue
        assert "pattern" in schema, where
        assert re.search(schema["pattern"], "\x00") is None, where


# --- rules across fields --------------------------------------------------------------------------

RULES: list[tuple[type[BaseModel], list[dict[str, Any]]]] = [
    (
        TemplatePublish,
        [
            {"name": "T", "description": "d", "price": 0, "identity_id": "i"},
            {"name": "T", "description": "d", "price": 0, "expression": {"register": "r"}},
            {"name": "T", "description": "d", "price": 0},
            {"name": "T", "description": "d", "price": 0, "identity_id": "i", "expression": {}},
            {"name": "T", "description": "d", "price": 0, "identity_id": None, "expression": {}},
            {"name": "T", "description": "d", "price": 5.0, "identity_id": "i"},
        ],
    ),
    (
        MemoryCreate,
        [
            {"content": "c"},
            {"content": "c", "type": "episodic", "tier": "episodic"},
            {"content": "c", "type": "episodic", "tier": "foundational"},
            {"content": "c", "type": None, "tier": "foundational"},
            {"content": "c", "tier": "constitutive"},
        ],
    ),
    (
        MemorySelection,
        [
            {},
            {"tiers": ["episodic"]},
            {"memory_ids": ["a", "b"]},
            {"memory_ids": ["a", "a"]},
            {"tiers": ["episodic", "episodic"]},
            {"memory_ids": ["a"], "limit": 3},
            {"tiers": ["episodic"], "limit": 3.0},
            {"memory_ids": ["a"], "limit": None},
        ],
    ),
    (
        ForkRequest,
        [
            {},
            {"new_name": "n"},
            {"display_name": "n"},
            {"new_name": None, "display_name": "n"},
            {"new_name": None},
        ],
    ),
    (
        SponsorStatement,
        [
            {"agent_id": str(uuid.UUID(int=1)), "sponsor_kid": "k", "sponsor_signature": "s"},
            {
                "agent_id": str(uuid.UUID(int=1)),
                "sponsor_kid": "k",
                "sponsor_signature": "s",
                "sponsor_did": "d",
            },
            {
                "agent_id": str(uuid.UUID(int=1)),
                "sponsor_kid": "k",
                "sponsor_signature": "s",
                "sponsor_did": "d",
                "sponsor_identity_id": "i",
            },
        ],
    ),
    (
        ExpressionPatch,
        [
            {},
            {"register_append": ""},
            {"walls_add": []},
            {"walls_add": ["w"]},
            {"register_append": None, "wake_text_append": "t"},
        ],
    ),
    (
        FundRequest,
        [{"amount": 5.0, "source_wallet_id": "w"}, {"amount": "5", "source_wallet_id": "w"}],
    ),
]


@pytest.mark.parametrize(("model", "examples"), RULES, ids=[m.__name__ for m, _ in RULES])
def test_a_body_the_document_allows_is_one_the_model_takes(
    document: dict[str, Any], model: type[BaseModel], examples: list[dict[str, Any]]
) -> None:
    """The rules across fields (``body_rules``) and whole numbers: for each example, the
    document's schema and the model's validation give the same verdict."""
    name = model.__name__
    schemas = document["components"]["schemas"]
    name = name if name in schemas else f"{name}-Input"
    validator = jsonschema.Draft202012Validator(
        {"$ref": f"#/components/schemas/{name}", "components": document["components"]}
    )
    for example in examples:
        try:
            model.model_validate(example)
            taken = True
        except ValidationError:
            taken = False
        assert validator.is_valid(example) == taken, (name, example)


# --- the bridge -----------------------------------------------------------------------------------


def test_the_bridge_websocket_is_described(document: dict[str, Any]) -> None:
    operation = document["paths"]["/v1/runtimes/{runtime_id}/bridge"]["get"]
    assert {"101", "401", "403", "404", "426"} <= set(operation["responses"])
    assert {"Upgrade", "Connection"} <= set(operation["responses"]["101"]["headers"])
    extension = operation["x-websocket"]
    assert extension["subprotocols"][0] == "hearth-bridge.v1"
    frames = extension["server_to_client"] + extension["client_to_server"]
    for frame in frames:
        name = frame["$ref"].rsplit("/", 1)[-1]
        assert name in document["components"]["schemas"], name


def _frame_validator(document: dict[str, Any], name: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(
        {"$ref": f"#/components/schemas/{name}", "components": document["components"]},
        format_checker=jsonschema.FormatChecker(),
    )


def test_the_bridge_path_answers_http_and_its_frames_match_the_document(
    live: Live, document: dict[str, Any]
) -> None:
    bearer, _, agent_id = new_project(live)
    key = Ed25519PrivateKey.generate()
    body = bridged_body(
        identity_id=agent_id,
        bridge={"pubkey": b64_encode(raw_public(key)), "key_id": str(uuid.uuid4())},
    )
    with live.client(bearer) as client:
        created = create(client, body)
    runtime_id, token = created["id"], created["control_token"]
    path = f"/v1/runtimes/{runtime_id}/bridge"
    with live.client(token) as client:
        plain = client.get(path)
        assert plain.status_code == 426, plain.text
        assert plain.json()["error"] == "upgrade_required"
        assert plain.headers["upgrade"] == "websocket"
        refused = client.post(path)
        assert refused.status_code == 405
        assert refused.headers["allow"] == "GET"
    with live.client(bearer) as client:  # the project bearer is not a control token
        assert client.get(path).status_code == 401

    async def handshake() -> list[dict[str, Any]]:
        url = bridge_url(live.base_url, runtime_id)
        frames = []
        async with connect(url, additional_headers={"Authorization": f"Bearer {token}"}) as ws:
            challenge = json.loads(await ws.recv())
            frames.append(challenge)
            nonce = new_handshake_nonce()
            signature = sign_bridge_auth(key, runtime_id, challenge["server_nonce"], nonce)
            auth = {"type": "auth", "bridge_nonce": nonce, "signature": signature}
            frames.append(auth)
            await ws.send(json.dumps(auth))
            frames.append(json.loads(await ws.recv()))
        async with connect(url, additional_headers={"Authorization": f"Bearer {token}"}) as ws:
            await ws.recv()
            await ws.send(json.dumps({"type": "auth", "bridge_nonce": "x", "signature": "y"}))
            frames.append(json.loads(await ws.recv()))
        return frames

    challenge, auth, ready, error = asyncio.run(handshake())
    for frame, name in (
        (challenge, "BridgeChallenge"),
        (auth, "BridgeAuth"),
        (ready, "BridgeReady"),
        (error, "BridgeError"),
    ):
        assert frame["type"] == name.removeprefix("Bridge").lower()
        _frame_validator(document, name).validate(frame)
    request = build_request(
        key,
        op="decrypt",
        payload=b"sealed",
        nonce=bytes(12),
        strand_id=str(uuid.uuid4()),
        thought_seq=1,
        issued_at="2026-11-24T12:00:00Z",
    )
    _frame_validator(document, "BridgeRequest").validate(request)


def test_the_nul_pattern_is_the_one_the_edge_applies() -> None:
    assert re.fullmatch(NO_NUL, "any text, é, 🜂") is not None
    assert re.fullmatch(NO_NUL, "a\x00b") is None


@given(
    st.one_of(st.binary(max_size=70).map(lambda raw: b64encode(raw).decode()), st.text()),
    st.sampled_from([None, 1, 2, 12, 32, 64]),
)
def test_the_base64_pattern_is_what_the_service_decodes(text: str, length: int | None) -> None:
    try:
        b64_decode(text, length=length)
        taken = True
    except EncodingError:
        taken = False
    assert (re.fullmatch(b64_pattern(length), text) is not None) == taken


# --- what the service now takes as the document says ----------------------------------------------


def test_a_whole_number_may_be_written_with_a_fraction_of_zero(live: Live) -> None:
    """JSON Schema's `integer` includes 0.0; a strict model refused it (422)."""
    bearer, _, _ = new_project(live)
    body = {
        "name": "Plain",
        "description": "a plain voice",
        "expression": {"register": "plain", "walls": [], "wake_text": "hello"},
    }
    with live.client(bearer) as client:
        assert client.post("/v1/templates", json={**body, "price": 0.0}).status_code == 201
        refused = client.post("/v1/templates", json={**body, "price": "0"})
        assert refused.status_code == 422
        assert refused.json()["error"] == "validation_error"


def test_a_kdf_descriptor_is_refused_for_what_its_pattern_excludes(live: Live) -> None:
    bearer, _, agent_id = new_project(live)
    pattern = re.compile(KDF_PATTERN)
    with live.client(bearer) as client:
        for text in (
            "argon2id-v1",
            "scrypt (é, ñ)",
            "argon2id\u00a0v1",
            "a\u200bb",
            "a\u202eb",
            "a\tb",
        ):
            backup = {"agent_id": agent_id, "blob_base64": "AAAA", "key_derivation": text}
            response = client.post("/v1/identity/backup", json=backup)
            if pattern.fullmatch(text):
                assert response.status_code == 201, (text, response.text)
            else:
                assert response.status_code == 422, (text, response.text)
                assert response.json()["error"] == "invalid_key_derivation"


def test_every_cursor_of_its_pattern_is_a_position(live: Live, document: dict[str, Any]) -> None:
    """The largest cursor each pattern allows is answered (a page, maybe empty), never a 400
    or a 5xx; one outside the pattern is a 400 ``invalid_cursor``."""
    bearer, _, _ = new_project(live)
    with live.client(bearer) as client:
        runtime = create(client, self_body())
        largest = {
            "^[A-Za-z0-9_-]{32}$": "_" * 32,
            "^[A-Za-z0-9_-]{53}[AQgw]$": "_" * 53 + "w",
            "^[0-9]{1,18}$": "9" * 18,
            "^[A-Za-z0-9_-]{5}[AQgw]$": "_" * 5 + "w",  # a ranking's offset
        }
        required = {"/v1/memories/search": {"q": "anything"}}  # a search needs its query
        for label, path, operation in operations(document):
            cursor = next(
                (p for p in operation.get("parameters", []) if p["name"] == "cursor"), None
            )
            if cursor is None:
                continue
            url = path.replace("{id}", runtime["id"]) if "/runtimes/" in path else path
            if "{" in url:
                continue  # a wallet's ledger or an identity's inbox: covered by the fuzz
            pattern = cursor["schema"]["pattern"]
            value = largest.get(pattern, "zzz")  # the vault's: any name is a position
            assert re.fullmatch(pattern, value), (label, pattern)
            answered = client.get(url, params={"cursor": value, **required.get(path, {})})
            assert answered.status_code == 200, (label, answered.text)
            refused = client.get(url, params={"cursor": "²", **required.get(path, {})})
            assert refused.status_code == 400, (label, refused.text)
            assert refused.json()["error"] == "invalid_cursor"
