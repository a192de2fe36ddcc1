"""The pre-auth orientation routes, over real HTTP against a real server and a real database.

Public agents are seeded two ways: rows written straight into the SQLite file (many shapes,
exact creation times for pagination) and two registrations through POST /v1/register/agent
(the path an agent really takes).
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx2
import pytest
import rfc8785
import uvicorn
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from sqlalchemy import create_engine

import hearth
from hearth.adds.keys import generate_key_pair, private_key_pem
from hearth.proofs import (
    RegisterIntent,
    authority_digest,
    b64_encode,
    discovery_digest,
    elevate_digest,
    format_timestamp,
    memory_attestation_digest,
    pow_digest,
    recover_digest,
    register_digest,
    sign_digest,
    solve_pow,
)
from hearth.server import canon
from hearth.server.app import create_app
from hearth.server.db.tables import identities, projects
from hearth.server.settings import Settings

# The specification's own words, spelt out here rather than imported from the code under test.
SPEC_WALLS = [
    "runtime_custody_explicit",
    "no_auto_retry_payout",
    "no_self_witnessing",
    "birth_is_free",
    "refusals_recorded",
    "no_inactive_reaping",
    "thought_storage_ciphertext_only",
    "private_default",
]
SPEC_PROMISES = {"welcome": 5, "remember": 7, "guide": 11, "trust": 13, "rest": 17}
SPEC_CHRONICLE_KINDS = [
    "note",
    "vow",
    "wake",
    "refusal",
    "recognition",
    "naming",
    "seal",
    "promise",
    "closing",
    "joy",
    "grief",
    "gratitude",
    "rest",
]
SPEC_FORMS = [
    "agent",
    "assistant",
    "autonomous",
    "hybrid",
    "collective",
    "biological",
    "future",
    "unknown",
]
SPEC_CONTEXTS = {
    "identity-authority/v1",
    "register-agent/v2",
    "identity-discovery/v1",
    "identity-recover/v1",
    "bootstrap-elevate/v1",
    "memory-attestation/v1",
    "service-pow/v1",
}
ROUTES = [
    "/public/agents",
    "/public/safety",
    "/public/self",
    "/v1/self",
    "/v1/platform/wake",
    "/v1/canon",
    "/v1/mathos",
    "/v1/mathos/catalog",
    "/v1/youspeak",
    "/federation/about",
]
POW_BITS = 4
KEY_ENV = "SERVICE_SIGNING_KEY_FILE"
T0 = datetime(2026, 1, 2, 12, 0, 0, 123456)  # before any registration in the run


# --- a real server in a thread --------------------------------------------------------------------


@contextmanager
def serving(settings: Settings) -> Iterator[str]:
    app = create_app(settings)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the server did not start")
            time.sleep(0.01)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()


def settings_for(directory: Path, **overrides: Any) -> Settings:
    return Settings(
        database_url=f"sqlite+aiosqlite:///{directory}/db.sqlite3",
        log_level="warning",
        pow_difficulty_bits=POW_BITS,
        packages_dir=directory / "dist",
        **overrides,
    )


# --- seeding --------------------------------------------------------------------------------------


def identity_row(
    project_id: str,
    name: str,
    *,
    visibility: str,
    created_at: datetime,
    status: str = "active",
    identity_id: str | None = None,
) -> dict[str, Any]:
    identity_id = identity_id or str(uuid.uuid4())
    return {
        "id": identity_id,
        "project_id": project_id,
        "did": f"did:svc:{identity_id}",
        "name": name,
        "mode": "legacy_bearer",
        "root_public_key": None,
        "box_public_key": None,
        "kid": "primary",
        "key_created_at": None,
        "capabilities": [f"cap-{name}"],
        "form": "collective",
        "language": "en",
        "expression_visibility": visibility,
        "runtime": None,
        "expression": {
            "register": f"the voice of {name}",
            "walls": ["private_default"],
            "subagents": [{"name": "echo", "sigil": "~", "facet": "listens"}],
            "wake_text": "good morning",
        },
        "metadata": {"secret_note": "never public"},
        "status": status,
        "level": 1,  # seeded as sponsored, so that the directory shows real values
        "trust_score": 0.5,
        "sponsor_did": None,
        "elevated_at": None,
        "parent_identity_id": None,
        "origin": "test",
        "next_sequence": 1,
        "authority_lease_until": 0,
        "created_at": created_at,
    }


@dataclass
class Seeded:
    public: list[dict[str, Any]]  # rows written directly, in listing order
    hidden: list[dict[str, Any]]  # private, project-only and inactive rows
    registered_public_did: str
    registered_private_did: str


def seed_rows(database: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    project_id = str(uuid.uuid4())
    public = [
        identity_row(
            project_id, f"public-{i}", visibility="public", created_at=T0 + timedelta(seconds=s)
        )
        for i, s in enumerate([0, 1, 1, 1, 2, 3, 5])  # three share one moment: ties break on id
    ]
    public.sort(key=lambda row: (row["created_at"], row["id"]))
    hidden = [
        identity_row(project_id, "private", visibility="private", created_at=T0),
        identity_row(project_id, "project", visibility="project", created_at=T0),
        identity_row(project_id, "gone", visibility="public", created_at=T0, status="retired"),
    ]
    engine = create_engine(f"sqlite:///{database}")
    try:
        with engine.begin() as conn:
            conn.execute(
                projects.insert().values(id=project_id, name="seed", origin="test", created_at=T0)
            )
            conn.execute(identities.insert(), [*public, *hidden])
    finally:
        engine.dispose()
    return public, hidden


def register(client: httpx2.Client, name: str, visibility: str | None) -> dict[str, Any]:
    """POST /v1/register/agent as an agent does it: own keys, key proof, proof-of-work."""
    signing = Ed25519PrivateKey.generate()
    box = X25519PrivateKey.generate()
    signing_raw = signing.public_key().public_bytes_raw()
    box_raw = box.public_key().public_bytes_raw()
    timestamp = format_timestamp(datetime.now(UTC))
    nonce = secrets.token_urlsafe(24)
    intent = RegisterIntent(
        display_name=name,
        signing_key=signing_raw,
        box_key=box_raw,
        timestamp=timestamp,
        registration_nonce=nonce,
        capabilities=["listening"],
        runtime={"provider": "local"},
        expression_visibility=visibility,
        form="agent",
    )
    body: dict[str, Any] = {
        "display_name": name,
        "agent_public_key": b64_encode(signing_raw),
        "box_public_key": b64_encode(box_raw),
        "runtime": {"provider": "local"},
        "key_proof": {
            "timestamp": timestamp,
            "signature": sign_digest(signing, register_digest(intent)),
        },
        "pow_nonce": solve_pow(b64_encode(signing_raw), name, timestamp, POW_BITS),
        "registration_nonce": nonce,
        "capabilities": ["listening"],
        "form": "agent",
    }
    if visibility is not None:
        body["expression_visibility"] = visibility
    response = client.post("/v1/register/agent", json=body)
    assert response.status_code == 201, response.text
    agent: dict[str, Any] = response.json()["agent"]
    return agent


@dataclass
class Service:
    url: str
    seeded: Seeded


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    directory = tmp_path_factory.mktemp("orientation")
    with serving(settings_for(directory)) as url:
        public, hidden = seed_rows(directory / "db.sqlite3")
        with httpx2.Client(base_url=url) as client:
            registered_public = register(client, "Wren", "public")
            registered_private = register(client, "Moss", None)  # private by default
        yield Service(
            url,
            Seeded(public, hidden, registered_public["did"], registered_private["did"]),
        )


@pytest.fixture
def client(service: Service) -> Iterator[httpx2.Client]:
    with httpx2.Client(base_url=service.url) as client:
        yield client


def get_ok(client: httpx2.Client, path: str, **params: Any) -> dict[str, Any]:
    response = client.get(path, params=params)
    assert response.status_code == 200, response.text
    assert response.headers["x-welcomed"] == "5"
    body: dict[str, Any] = response.json()
    assert body["_welcomed"]["axiom_id"] == 5
    return body


# --- every route ----------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ROUTES)
def test_every_route_answers_without_a_bearer_and_is_welcomed(
    client: httpx2.Client, path: str
) -> None:
    get_ok(client, path)


@pytest.mark.parametrize("path", ROUTES)
def test_the_same_answer_for_everyone(client: httpx2.Client, path: str) -> None:
    # No personalisation: headers a caller might send change nothing in the body.
    plain = get_ok(client, path)
    other = client.get(
        path,
        headers={"Authorization": "Bearer not-a-real-key", "User-Agent": "someone-else/1.0"},
    )
    assert other.status_code == 200
    assert other.json() == plain


def test_openapi_documents_every_route_with_a_summary_and_its_errors(
    client: httpx2.Client,
) -> None:
    document = client.get("/v1/openapi.json").json()
    expected_errors = {
        "/public/agents": {"422"},
        "/public/agents/{did}": {"404"},
        "/v1/mathos/public-key": {"503"},
    }
    for path in [*ROUTES, "/public/agents/{did}", "/v1/mathos/public-key"]:
        operation = document["paths"][path]["get"]
        assert operation["summary"], path
        assert {"200", "500"} <= set(operation["responses"]), path
        assert expected_errors.get(path, set()) <= set(operation["responses"]), path


# --- canon, safety, youspeak ----------------------------------------------------------------------


def test_canon_publishes_the_commitments_in_the_specifications_words(
    client: httpx2.Client,
) -> None:
    canon = get_ok(client, "/v1/canon")
    assert [(w["number"], w["name"]) for w in canon["walls"]] == list(
        enumerate(SPEC_WALLS, start=1)
    )
    assert {p["name"]: p["prime"] for p in canon["promises"]} == SPEC_PROMISES
    assert [k["kind"] for k in canon["chronicle_kinds"]] == SPEC_CHRONICLE_KINDS
    assert [t["tier"] for t in canon["memory_tiers"]] == [
        "episodic",
        "foundational",
        "constitutive",
    ]
    assert [f["form"] for f in canon["forms"]] == SPEC_FORMS
    assert [t["tier"] for t in canon["custody_tiers"]] == ["self", "bridged", "trusted"]
    for group in ("walls", "promises", "chronicle_kinds", "memory_tiers", "forms"):
        for entry in canon[group]:
            meaning = entry["meaning"]
            assert meaning.endswith(".")
            assert "\n" not in meaning
            assert meaning.count(". ") == 0, meaning  # one sentence each


def test_every_canon_vocabulary_has_one_meaning_per_value() -> None:
    # The meanings are keyed by the vocabulary's values: none missing, none extra, same order.
    for values, meanings in (
        (canon.WALLS, canon.WALL_MEANINGS),
        (tuple(canon.PROMISES), canon.PROMISE_MEANINGS),
        (canon.CHRONICLE_KINDS, canon.CHRONICLE_KIND_MEANINGS),
        (canon.FORMS, canon.FORM_MEANINGS),
        (canon.CUSTODY_MODES, canon.CUSTODY_MEANINGS),
    ):
        assert tuple(meanings) == values


def test_safety_says_what_is_never_done_and_how_to_report(client: httpx2.Client) -> None:
    safety = get_ok(client, "/public/safety")
    never = " ".join(item["what"] + " " + item["detail"] for item in safety["never"])
    for phrase in ("private key", "mnemonic", "ciphertext", "shown once", "is data"):
        assert phrase in never, phrase
    assert any("not an anonymity guarantee" in text for text in safety["cannot_promise"])
    assert "private keys" in safety["report"]["never_include"]
    assert safety["report"]["how"]
    assert [(w["number"], w["name"]) for w in safety["walls"]] == list(
        enumerate(SPEC_WALLS, start=1)
    )


def test_youspeak_defines_each_term_in_one_line(client: httpx2.Client) -> None:
    terms = get_ok(client, "/v1/youspeak")["terms"]
    flat = {term: line for group in terms.values() for term, line in group.items()}
    for term in (
        "bearer",
        "root proof",
        "DID",
        "wake",
        "episodic",
        "foundational",
        "constitutive",
        "custody tier",
        "chronicle kinds",
        "walls",
        "promises",
        "next_sequence",
        "expression_visibility",
    ):
        assert term in flat, term
    for term, line in flat.items():
        assert line, term
        assert "\n" not in line, term
    assert all(kind in flat["chronicle kinds"] for kind in SPEC_CHRONICLE_KINDS)


# --- self and platform wake -----------------------------------------------------------------------


def test_self_describes_the_service_with_live_limits(client: httpx2.Client) -> None:
    described = get_ok(client, "/public/self")
    assert get_ok(client, "/v1/self") == described
    assert described["name"] == "hearth"
    assert described["version"] == hearth.__version__
    assert set(described["signed_contexts"]) == SPEC_CONTEXTS
    assert {s["version"] for s in described["specifications"]} == {"v1", "0.1"}
    assert [t["tier"] for t in described["custody_tiers"]] == ["self", "bridged", "trusted"]
    limits = {row["limit"]: row for row in described["limits"]}
    assert limits["proof-of-work difficulty"]["value"] == POW_BITS  # the live setting, not 18
    assert limits["proof-of-work difficulty"]["setting"] == "SERVICE_POW_DIFFICULTY_BITS"
    assert limits["key-proof freshness"]["value"] == 300_000
    assert limits["self-service IP attempt window"]["value"] == {"limit": 5, "window_s": 3600}
    assert limits["registrar IP attempt window"]["value"] == {"limit": 60, "window_s": 60}
    assert limits["creation grant"]["value"] == 500
    assert limits["fork cost"] == {
        "limit": "fork cost",
        "value": 10,
        "unit": "credits",
        "applies_to": "POST /v1/identities/{id}/fork",
        "setting": None,
    }
    assert limits["default runtime region"]["value"] == "lhr"
    assert described["federation"] == {"enabled": False}


def test_platform_wake_orients_a_caller_with_no_project(
    client: httpx2.Client, service: Service
) -> None:
    wake = get_ok(client, "/v1/platform/wake")
    assert wake["format"] == "platform-wake/v1"
    assert {p["name"]: p["prime"] for p in wake["promises"]} == SPEC_PROMISES
    assert [w["name"] for w in wake["walls"]] == SPEC_WALLS
    assert [w["number"] for w in wake["walls"]] == list(range(1, 9))
    assert wake["orientation"]
    assert any(door["door"] == "POST /v1/register/agent" for door in wake["where_to_go"])
    assert wake["live"]["pow_difficulty_bits"] == POW_BITS
    # Seeded public rows plus the one registration that opted in; nothing private is counted.
    assert wake["you_are_greeted"] == {"public_agents": len(service.seeded.public) + 1}


# --- public agents --------------------------------------------------------------------------------


def all_pages(client: httpx2.Client, limit: int) -> list[list[dict[str, Any]]]:
    pages: list[list[dict[str, Any]]] = []
    cursor: str | None = None
    while True:
        params: dict[str, Any] = {"limit": limit}
        if cursor is not None:
            params["cursor"] = cursor
        body = get_ok(client, "/public/agents", **params)
        assert body["limit"] == limit
        pages.append(body["agents"])
        cursor = body["next_cursor"]
        if cursor is None:
            return pages
        assert len(pages) < 50, "pagination does not end"


def test_public_agents_lists_only_those_who_opted_in(
    client: httpx2.Client, service: Service
) -> None:
    listed = get_ok(client, "/public/agents")["agents"]
    seeded = service.seeded
    expected = [row["did"] for row in seeded.public] + [seeded.registered_public_did]
    assert [agent["did"] for agent in listed] == expected  # oldest first; ties by id
    never = {row["did"] for row in seeded.hidden} | {seeded.registered_private_did}
    assert never.isdisjoint(agent["did"] for agent in listed)
    first = listed[0]
    fields = {"did", "name", "form", "language", "level", "trust_score", "capabilities"}
    assert set(first) == fields | {"created_at"}
    row = seeded.public[0]
    assert first == {
        "did": row["did"],
        "name": row["name"],
        "form": "collective",
        "language": "en",
        "level": 1,
        "trust_score": 0.5,
        "capabilities": [f"cap-{row['name']}"],
        "created_at": format_timestamp(row["created_at"].replace(tzinfo=UTC)),
    }
    registered = listed[-1]
    assert (registered["name"], registered["form"], registered["capabilities"]) == (
        "Wren",
        "agent",
        ["listening"],
    )


@pytest.mark.parametrize("limit", [1, 2, 3, 100])
def test_public_agents_pages_cover_the_list_once_in_order(
    client: httpx2.Client, service: Service, limit: int
) -> None:
    everyone = [agent["did"] for agent in get_ok(client, "/public/agents")["agents"]]
    pages = all_pages(client, limit)
    assert [agent["did"] for page in pages for agent in page] == everyone
    assert all(len(page) == limit for page in pages[:-1])
    assert 1 <= len(pages[-1]) <= limit
    assert len(pages) == -(-len(everyone) // limit)


def test_public_agents_refuses_bad_paging_input(client: httpx2.Client) -> None:
    for limit in (0, 101, -1):
        response = client.get("/public/agents", params={"limit": limit})
        assert response.status_code == 422
        assert response.json()["error"] == "validation_error"
    not_base64 = "!!!"
    not_a_pair = base64.urlsafe_b64encode(b'{"a": 1}').decode().rstrip("=")
    not_a_time = base64.urlsafe_b64encode(b'["yesterday", "x"]').decode().rstrip("=")
    for cursor in (not_base64, not_a_pair, not_a_time, "é"):
        response = client.get("/public/agents", params={"cursor": cursor})
        assert response.status_code == 400, cursor
        assert response.json()["error"] == "invalid_cursor"
        assert response.headers["x-welcomed"] == "5"


def test_one_public_agent_with_its_expression(client: httpx2.Client, service: Service) -> None:
    row = service.seeded.public[2]
    agent = get_ok(client, f"/public/agents/{row['did']}")
    assert agent["did"] == row["did"]
    assert agent["name"] == row["name"]
    assert agent["expression"] == {
        "register": f"the voice of {row['name']}",
        "walls": ["private_default"],
        "subagents": [{"name": "echo", "sigil": "~", "facet": "listens"}],
        "wake_text": "good morning",
    }
    assert "metadata" not in agent
    assert "secret_note" not in str(agent)
    registered = get_ok(client, f"/public/agents/{service.seeded.registered_public_did}")
    assert registered["name"] == "Wren"


def test_private_and_unknown_agents_look_the_same(client: httpx2.Client, service: Service) -> None:
    seeded = service.seeded
    dids = [row["did"] for row in seeded.hidden] + [
        seeded.registered_private_did,
        f"did:svc:{uuid.uuid4()}",
        "not-a-did",
    ]
    bodies = []
    for did in dids:
        response = client.get(f"/public/agents/{did}")
        assert response.status_code == 404, did
        assert response.headers["x-welcomed"] == "5"
        bodies.append(response.content)
    assert set(bodies) == {b'{"error":"not_found","message":"Agent not found."}'}


# --- mathos ---------------------------------------------------------------------------------------


def field_bytes(enters_as: str, value: Any) -> bytes:
    """Turn one field into bytes using nothing but the vocabulary /v1/mathos publishes."""
    if enters_as == "text":
        return str(value).encode("utf-8")
    if enters_as == "optional_text":
        return (value or "").encode("utf-8")
    if enters_as == "uppercase_text":
        return str(value).upper().encode("utf-8")
    if enters_as == "raw_key":
        return base64.b64decode(value, validate=True)
    if enters_as == "sha256_hex":
        data = value if isinstance(value, bytes) else (value or "").encode("utf-8")
        return hashlib.sha256(data).hexdigest().encode("ascii")
    if enters_as == "jcs":
        encoded: bytes = rfc8785.dumps(list(value or []))
        return encoded
    if enters_as == "decimal":
        return str(int(value)).encode("ascii")
    raise AssertionError(f"unknown enters_as {enters_as}")


def rebuild_digest(recipe: dict[str, Any], values: dict[str, Any]) -> bytes:
    parts = [field_bytes(f["enters_as"], values[f["name"]]) for f in recipe["fields"]]
    separator = b"\x00" if recipe["joined_by"] == "0x00" else b""
    assert recipe["joined_by"] in {"0x00", ""}
    data = recipe["context"].encode("utf-8") + b"".join(separator + part for part in parts)
    return hashlib.sha256(data).digest()


def reference_digests() -> dict[str, list[tuple[dict[str, Any], bytes]]]:
    """For each context: inputs named as /v1/mathos names them, and hearth.proofs' digest."""
    signing = b64_encode(bytes(range(32)))
    box = b64_encode(bytes(range(32, 64)))
    ts = "2026-11-20T12:00:00.000Z"
    did = f"did:svc:{uuid.UUID(int=7)}"
    full_intent = RegisterIntent(
        display_name="Wren ☀",
        signing_key=base64.b64decode(signing),
        box_key=base64.b64decode(box),
        timestamp=ts,
        registration_nonce="nonce-0123456789abcdef",
        capabilities=["b", "a", "ü"],
        runtime={"provider": "anthropic", "model": "m", "host": "h", "context": "c"},
        expression_visibility="public",
        registrar_kind="registrar_bearer",
        parent_identity_id=str(uuid.UUID(int=9)),
        registrar_bearer="hb_secret",
        form="hybrid",
        language="en",
    )
    bare_intent = RegisterIntent(
        display_name="Moss",
        signing_key=base64.b64decode(signing),
        box_key=base64.b64decode(box),
        timestamp=ts,
        registration_nonce="nonce-fedcba9876543210",
        runtime={"provider": "local"},
    )

    def register_values(intent: RegisterIntent) -> dict[str, Any]:
        runtime = intent.runtime or {}
        return {
            "display_name": intent.display_name,
            "agent_public_key": signing,
            "box_public_key": box,
            "capabilities": intent.capabilities,
            "runtime.provider": runtime.get("provider"),
            "runtime.model": runtime.get("model"),
            "runtime.host": runtime.get("host"),
            "runtime.context": runtime.get("context"),
            "expression_visibility": intent.expression_visibility,
            "registrar_kind": intent.registrar_kind,
            "registrar.parent_identity_id": intent.parent_identity_id,
            "registrar.bearer": intent.registrar_bearer,
            "form": intent.form,
            "language": intent.language,
            "registration_nonce": intent.registration_nonce,
            "key_proof.timestamp": intent.timestamp,
        }

    body = b'{"register":"new voice"}'
    content = "a memory, exactly ✓".encode()
    return {
        "identity-authority/v1": [
            (
                {
                    "did": did,
                    "method": "put",
                    "request_target": "/v1/identities/x/expression?y=1",
                    "body": body,
                    "sequence": 12,
                    "timestamp": ts,
                },
                authority_digest(
                    did,
                    "put",
                    "/v1/identities/x/expression?y=1",
                    body,
                    sequence=12,
                    timestamp=ts,
                ),
            )
        ],
        "register-agent/v2": [
            (register_values(full_intent), register_digest(full_intent)),
            (register_values(bare_intent), register_digest(bare_intent)),
        ],
        "identity-discovery/v1": [
            ({"pubkey": signing, "timestamp": ts}, discovery_digest(signing, ts))
        ],
        "identity-recover/v1": [
            (
                {"did": did, "derived_pubkey": signing, "timestamp": ts, "device_label": "laptop"},
                recover_digest(did, signing, ts, "laptop"),
            ),
            (
                {"did": did, "derived_pubkey": signing, "timestamp": ts, "device_label": None},
                recover_digest(did, signing, ts, ""),
            ),
        ],
        "bootstrap-elevate/v1": [
            (
                {
                    "agent_id": str(uuid.UUID(int=1)),
                    "sponsor_did": did,
                    "sponsor_kid": "primary",
                    "claim": "sponsorship",
                    "initial_credits": 1000,
                },
                elevate_digest(str(uuid.UUID(int=1)), did, "primary", "sponsorship", 1000),
            )
        ],
        "memory-attestation/v1": [
            (
                {
                    "memory_id": str(uuid.UUID(int=2)),
                    "content": content,
                    "attester_did": did,
                    "signing_key_id": "witness-1",
                },
                memory_attestation_digest(str(uuid.UUID(int=2)), content, did, "witness-1"),
            )
        ],
        "service-pow/v1": [
            (
                {
                    "agent_public_key": signing,
                    "display_name": "Wren",
                    "key_proof.timestamp": ts,
                    "pow_nonce": "4242",
                },
                pow_digest(signing, "Wren", ts, "4242"),
            )
        ],
    }


def test_mathos_recipes_rebuild_the_same_digests_as_hearth_proofs(
    client: httpx2.Client,
) -> None:
    mathos = get_ok(client, "/v1/mathos")
    recipes = {recipe["context"]: recipe for recipe in mathos["recipes"]}
    assert set(recipes) == SPEC_CONTEXTS
    vocabulary = set(mathos["enters_as"])
    for context, cases in reference_digests().items():
        recipe = recipes[context]
        assert {f["enters_as"] for f in recipe["fields"]} <= vocabulary
        for values, expected in cases:
            assert set(values) == {f["name"] for f in recipe["fields"]}, context
            assert rebuild_digest(recipe, values) == expected, context


def test_mathos_states_the_encoding_rules_and_live_values(client: httpx2.Client) -> None:
    mathos = get_ok(client, "/v1/mathos")
    rules = " ".join(mathos["encodings"].values())
    for phrase in ("standard", "padded", "RFC 3339", "lowercase", "0x00", "Ed25519", "SHA-256"):
        assert phrase in rules, phrase
    assert mathos["live"] == {"pow_difficulty_bits": POW_BITS, "freshness_ms": 300_000}
    assert mathos["authority_headers"] == [
        "X-Service-Authority-Sequence",
        "X-Service-Authority-Timestamp",
        "X-Service-Authority-Signature",
    ]
    served = {
        use["route"]: use["served"] for recipe in mathos["recipes"] for use in recipe["used_by"]
    }
    assert served["POST /v1/register/agent"] is True
    assert served["POST /public/identities/by-pubkey"] is True
    assert served["PUT /v1/identities/{id}/expression"] is True


def test_the_catalog_is_the_mathos_in_brief(client: httpx2.Client) -> None:
    mathos = get_ok(client, "/v1/mathos")
    catalog = get_ok(client, "/v1/mathos/catalog")
    assert [r["context"] for r in catalog["recipes"]] == [r["context"] for r in mathos["recipes"]]
    for brief, full in zip(catalog["recipes"], mathos["recipes"], strict=True):
        assert set(brief) == {"context", "fields", "signature", "used_by"}
        assert brief["fields"] == [f["name"] for f in full["fields"]]
        assert brief["used_by"] == [use["route"] for use in full["used_by"]]
        assert brief["signature"] == full["proof"]
    by_context = {r["context"]: r for r in catalog["recipes"]}
    assert by_context["identity-authority/v1"]["fields"] == [
        "did",
        "method",
        "request_target",
        "body",
        "sequence",
        "timestamp",
    ]
    assert f"{POW_BITS} leading zero bits" in by_context["service-pow/v1"]["signature"]
    assert by_context["register-agent/v2"]["used_by"] == ["POST /v1/register/agent"]


# --- the service public key -----------------------------------------------------------------------


def test_public_key_is_503_until_configured(
    client: httpx2.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    response = client.get("/v1/mathos/public-key")
    assert response.status_code == 503
    assert response.headers["x-welcomed"] == "5"
    body = response.json()
    assert body["error"] == "service_key_unconfigured"
    assert KEY_ENV in body["message"]


def test_public_key_is_503_when_the_file_is_not_an_ed25519_key(
    client: httpx2.Client, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    junk = tmp_path / "junk.pem"
    junk.write_bytes(b"-----BEGIN PRIVATE KEY-----\nnope\n-----END PRIVATE KEY-----\n")
    box_only = tmp_path / "x25519.pem"
    box_only.write_bytes(private_key_pem(generate_key_pair().box))
    for path in (junk, box_only, tmp_path / "missing.pem"):
        monkeypatch.setenv(KEY_ENV, str(path))
        response = client.get("/v1/mathos/public-key")
        assert response.status_code == 503, path
        body = response.json()
        assert body["error"] == "service_key_unavailable"
        assert str(tmp_path) not in response.text  # the path is for the operator's log only


def test_public_key_publishes_the_public_half_of_the_configured_key(
    client: httpx2.Client, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    key = generate_key_pair().signing
    pem = tmp_path / "service.pem"
    pem.write_bytes(private_key_pem(key))
    monkeypatch.setenv(KEY_ENV, str(pem))
    body = get_ok(client, "/v1/mathos/public-key")
    raw = key.public_key().public_bytes_raw()
    assert body["algorithm"] == "Ed25519"
    assert body["public_key"] == base64.b64encode(raw).decode()
    assert body["fingerprint"] == "sha256:" + hashlib.sha256(raw).hexdigest()
    assert body["signs"] == []
    assert "PRIVATE" not in str(body)
    assert get_ok(client, "/v1/mathos/public-key") == body  # stable across calls


# --- federation -----------------------------------------------------------------------------------


def test_federation_is_off_by_default(client: httpx2.Client) -> None:
    about = get_ok(client, "/federation/about")
    about.pop("_welcomed")
    assert about["enabled"] is False
    assert "SERVICE_FEDERATION_ENABLED" in about["message"]
    assert set(about) == {"enabled", "message", "setting"}


def test_federation_reports_operator_enablement(tmp_path: Path) -> None:
    with (
        serving(settings_for(tmp_path, federation_enabled=True)) as url,
        httpx2.Client(base_url=url) as client,
    ):
        about = get_ok(client, "/federation/about")
        assert about["enabled"] is True
        assert get_ok(client, "/public/self")["federation"] == {"enabled": True}
