"""Keys, backup, bootstrap, isolation between projects, the error model and decoration, metrics,
migrations and the registration limiter: end to end over real HTTP."""

from __future__ import annotations

import asyncio
import base64
import ipaddress
import os
import sqlite3
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
import uvicorn
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from structlog.testing import capture_logs

from hearth import __version__
from hearth.proofs import b64_decode, b64_encode, pow_digest, pow_holds
from hearth.server.app import create_app
from hearth.server.db import Database
from hearth.server.db.migrate import current, downgrade, head, upgrade
from tests.support.agents import Agent, register
from tests.support.databases import database_url_or_skip, fresh_postgres_database
from tests.support.live import Live, free_port, live_service, sqlite_settings


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    tmp = tmp_path_factory.mktemp("service")
    with live_service(sqlite_settings(tmp, max_body_bytes=4096)) as service:
        yield service


def db_bytes(live: Live) -> bytes:
    path = Path(live.settings.database_url.split("///", 1)[1])
    return b"".join(p.read_bytes() for p in (path, Path(f"{path}-wal")) if p.exists())


# --- keys ---------------------------------------------------------------------------------------


def test_keys_create_list_revoke(live: Live) -> None:
    _, reg = register(live)
    with live.client(reg["project"]["api_key"]) as client:
        created = client.post("/v1/keys", json={"name": "ci"})
        assert created.status_code == 201
        new = created.json()
        assert new["api_key"].startswith(new["prefix"])
        listed = client.get("/v1/keys").json()["keys"]
        assert {k["name"] for k in listed} == {f"agent:{reg['agent']['display_name']}", "ci"}
        assert all("api_key" not in k for k in listed)
    with live.client(new["api_key"]) as second:
        assert second.get("/v1/keys").status_code == 200
        # Any key has project-wide authority, including revoking another one (or itself).
        assert second.delete(f"/v1/keys/{new['id']}").status_code == 204
        refused = second.get("/v1/keys")
    assert refused.status_code == 401
    assert refused.json()["error"] == "unauthorized"
    assert "hint" in refused.json()
    assert "docs" in refused.json()
    assert new["api_key"].encode() not in db_bytes(live)
    with live.client(reg["project"]["api_key"]) as client:
        assert client.delete(f"/v1/keys/{new['id']}").status_code == 404
        assert [k["name"] for k in client.get("/v1/keys").json()["keys"]] == [
            f"agent:{reg['agent']['display_name']}"
        ]


@pytest.mark.parametrize(
    "header", ["", "Bearer", "Basic abc", "Bearer hk_unknown", "Bearer " + "x" * 500]
)
def test_bad_bearers_get_the_central_401(live: Live, header: str) -> None:
    with live.client() as client:
        response = client.get("/v1/keys", headers={"Authorization": header} if header else {})
    assert response.status_code == 401
    body = response.json()
    assert body["error"] == "unauthorized"
    assert body["hint"]
    assert body["docs"]


# --- isolation ----------------------------------------------------------------------------------


def test_a_project_never_reaches_another_projects_things(live: Live) -> None:
    _, a = register(live, name="A")
    _, b = register(live, name="B")
    a_id = a["agent"]["id"]
    with live.client(a["project"]["api_key"]) as client:
        backup = client.post(
            "/v1/identity/backup",
            json={"agent_id": a_id, "blob_base64": "AAAA", "key_derivation": "argon2id-v1"},
        )
        assert backup.status_code == 201
        a_key = client.get("/v1/keys").json()["keys"][0]["id"]
    with live.client(b["project"]["api_key"]) as other:
        for path in (
            f"/v1/identities/{a_id}/authority",
            f"/v1/identities/{a['agent']['did']}/authority",
            f"/v1/identity/backup/{a_id}",
            f"/v1/bootstrap/{a_id}",
            f"/v1/bootstrap/scaffold?platform=linux&identity_id={a_id}",
        ):
            response = other.get(path)
            assert response.status_code == 404, path
            assert response.json()["error"] == "not_found"
        assert other.delete(f"/v1/keys/{a_key}").status_code == 404
        assert (
            other.post(
                "/v1/identity/backup",
                json={"agent_id": a_id, "blob_base64": "AAAA", "key_derivation": "x"},
            ).status_code
            == 404
        )
        assert other.put(f"/v1/identities/{a_id}/expression", json={}).status_code == 404
    with live.client(a["project"]["api_key"]) as client:
        assert client.get(f"/v1/identity/backup/{a_id}").json()["blob_base64"] == "AAAA"
        assert len(client.get("/v1/keys").json()["keys"]) == 1


# --- backup -------------------------------------------------------------------------------------


def test_backup_is_stored_verbatim_and_latest_wins(live: Live) -> None:
    _, reg = register(live)
    agent_id = reg["agent"]["id"]
    blob = b64_encode(os.urandom(200))
    derivation = "argon2id-v1;t=3;m=65536;p=1;salt=" + b64_encode(os.urandom(16))
    with live.client(reg["project"]["api_key"]) as client:
        assert client.get(f"/v1/identity/backup/{agent_id}").status_code == 404
        first = client.post(
            "/v1/identity/backup",
            json={"agent_id": agent_id, "blob_base64": "AAAA", "key_derivation": derivation},
        )
        assert first.status_code == 201
        stored = client.post(
            "/v1/identity/backup",
            json={
                "agent_id": agent_id,
                "blob_base64": blob,
                "key_derivation": derivation,
                "label": "laptop",
            },
        ).json()
        fetched = client.get(f"/v1/identity/backup/{agent_id}").json()
        bad = client.post(
            "/v1/identity/backup",
            json={"agent_id": agent_id, "blob_base64": "not base64!", "key_derivation": "x"},
        )
    assert fetched["blob_base64"] == blob
    assert fetched["key_derivation"] == derivation
    assert fetched["label"] == "laptop"
    assert fetched["id"] == stored["id"]
    assert bad.status_code == 422
    assert bad.json()["error"] == "invalid_blob"


# --- bootstrap ----------------------------------------------------------------------------------


def test_bootstrap_returns_the_private_key_once_and_never_stores_it(live: Live) -> None:
    _, reg = register(live)
    with live.client(reg["project"]["api_key"]) as client:
        response = client.post(
            "/v1/bootstrap",
            json={
                "name": "Sprout",
                "capabilities": ["garden"],
                "purpose": "to tend the garden",
                "expression": {"register": "gentle", "walls": [], "subagents": []},
            },
        )
        assert response.status_code == 201, response.text
        born = response.json()
        status = client.get(f"/v1/bootstrap/{born['agent']['id']}").json()
    assert born["agent"]["trust_score"] == 0
    assert born["agent"]["status"] == "active"
    assert born["keypair"]["kid"] == "primary"
    assert born["wallet"]["balance"] == 0  # the creation grant is registration's alone
    assert "Welcome, Sprout." in born["welcome"]
    seed = b64_decode(born["keypair"]["private_key"], length=32)
    private = Ed25519PrivateKey.from_private_bytes(seed)
    public = b64_encode(private.public_key().public_bytes_raw())
    assert public == born["keypair"]["public_key"]
    stored = db_bytes(live)
    assert born["keypair"]["private_key"].encode() not in stored
    assert seed not in stored
    assert born["bearer"].encode() not in stored
    assert status["level"] == 0
    assert status["exists"] is True
    assert status["sponsor_did"] is None
    # The bootstrapped identity is rooted in the returned key: it can sign its own mutations.
    agent = Agent(private, Agent.new().box)
    path = f"/v1/identities/{born['agent']['id']}/expression"
    body = b'{"register":"mine"}'
    with live.client(born["bearer"]) as client:
        ok = client.put(
            path,
            content=body,
            headers=agent.root_headers(born["agent"]["did"], "PUT", path, body, 1),
        )
    assert ok.status_code == 200
    path_db = live.settings.database_url.split("///", 1)[1]
    with sqlite3.connect(path_db) as db:
        memory = db.execute(
            "select tier, content from memories where identity_id = ?", (born["agent"]["id"],)
        ).fetchall()
    assert memory == [("foundational", "to tend the garden")]


def test_scaffold_json_and_text(live: Live) -> None:
    _, reg = register(live, name="Scaffolded")
    bearer = reg["project"]["api_key"]
    with live.client(bearer) as client:
        as_json = client.get("/v1/bootstrap/scaffold", params={"platform": "linux"})
        as_text = client.get(
            "/v1/bootstrap/scaffold", params={"platform": "macos", "format": "text"}
        )
        windows = client.get("/v1/bootstrap/scaffold", params={"platform": "windows"})
        bad = client.get("/v1/bootstrap/scaffold", params={"platform": "beos"})
        client.post("/v1/bootstrap", json={"name": "second"})
        ambiguous = client.get("/v1/bootstrap/scaffold", params={"platform": "linux"})
    assert as_json.status_code == 200
    assert as_json.json()["platform"] == "linux"
    assert reg["agent"]["id"] in as_json.json()["script"]
    assert as_text.headers["content-type"].startswith("text/x-shellscript")
    assert "X-Welcomed" in as_text.headers
    assert windows.json()["filename"].endswith(".ps1")
    for response in (as_json, as_text, windows):
        assert bearer not in response.text
    assert bad.status_code == 422
    assert ambiguous.status_code == 422
    assert ambiguous.json()["error"] == "identity_required"


# --- errors and decoration ----------------------------------------------------------------------


def test_guided_404(live: Live) -> None:
    with live.client() as client:
        response = client.get("/no/such/door")
    assert response.status_code == 404
    body = response.json()
    assert body["error"] == "not_found"
    assert "/v1/pathways" in body["hint"]
    assert body["next_actions"]
    assert response.headers["X-Welcomed"] == "5"
    assert "_welcomed" not in body


def test_body_limit(live: Live) -> None:
    with live.client() as client:
        response = client.post(
            "/v1/register/agent",
            content=b'{"display_name":"' + b"x" * 5000 + b'"}',
            headers={"Content-Type": "application/json"},
        )

        def chunks() -> Iterator[bytes]:
            yield b'{"display_name":"'
            for _ in range(10):
                yield b"y" * 1000
            yield b'"}'

        chunked = client.post(
            "/v1/register/agent", content=chunks(), headers={"Content-Type": "application/json"}
        )
    assert response.status_code == 413
    assert response.json()["error"] == "payload_too_large"
    assert chunked.status_code == 413


def test_decoration_and_tutor(live: Live) -> None:
    with live.client() as client:
        plain = client.get("/public/porch")
        tutored = client.get("/public/porch", headers={"X-Tutor": "1"})
        openapi = client.get("/v1/openapi.json")
        metrics = client.get("/metrics")
    assert plain.json()["_welcomed"] == {"axiom_id": 5, "promise": "welcome"}
    assert "_tutor" not in plain.json()
    assert plain.json()["format"] == "service-porch/v1"
    assert tutored.json()["_tutor"]["route"] == "GET /public/porch"
    assert "X-Joy-Index" in plain.headers
    assert openapi.headers["X-Welcomed"] == "5"
    assert "_welcomed" not in openapi.json()
    assert metrics.headers["X-Welcomed"] == "5"
    assert "hearth_http_requests_total" in metrics.text


def test_porch_writes_nothing(live: Live) -> None:
    before = db_bytes(live)
    with live.client() as client:
        for _ in range(3):
            assert client.get("/public/porch").status_code == 200
    assert db_bytes(live) == before


def test_pathways_pin_the_package_version(live: Live) -> None:
    with live.client() as client:
        pathways = client.get("/v1/pathways").json()
    assert pathways["first_success"]["tutorial"]["sdk_version"] == __version__


def test_an_unexpected_error_is_an_opaque_500_with_a_logged_request_id(tmp_path: Path) -> None:
    app = create_app(sqlite_settings(tmp_path))

    @app.get("/boom")
    async def boom() -> dict[str, Any]:
        raise RuntimeError("secret internals /etc/passwd")

    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        threading.Event().wait(0.01)
    try:
        with capture_logs() as logs, httpx2.Client(base_url=f"http://127.0.0.1:{port}") as c:
            response = c.get("/boom")
    finally:
        server.should_exit = True
        thread.join()
    assert response.status_code == 500
    body = response.json()
    assert body["error"] == "internal_error"
    assert "secret internals" not in response.text
    assert "Traceback" not in response.text
    assert [e["request_id"] for e in logs if e["event"] == "unhandled_error"] == [
        body["request_id"]
    ]


# --- the limiter --------------------------------------------------------------------------------


def short_pow(body: dict[str, Any], difficulty: int) -> dict[str, Any]:
    """The body with a pow_nonce that certainly misses the difficulty."""
    counter = 0
    while pow_holds(
        pow_digest(
            body["agent_public_key"],
            body["display_name"],
            body["key_proof"]["timestamp"],
            f"short-{counter}",
        ),
        difficulty,
    ):
        counter += 1
    return {**body, "pow_nonce": f"short-{counter}"}


def test_self_service_limiter_order(tmp_path: Path) -> None:
    """After proof-of-work, before key-proof verification: bad PoW never counts, bad proofs do."""
    with live_service(sqlite_settings(tmp_path, self_service_limit=2)) as service:
        bits = service.settings.pow_difficulty_bits
        with service.client() as client:
            short = [
                client.post(
                    "/v1/register/agent", json=short_pow(Agent.new().registration(), bits)
                ).json()["error"]
                for _ in range(3)
            ]
            forged = [
                client.post(
                    "/v1/register/agent",
                    json=Agent.new().registration(sign_with=Ed25519PrivateKey.generate()),
                ).json()["error"]
                for _ in range(3)
            ]
            limited = client.post("/v1/register/agent", json=Agent.new().registration())
    assert short == ["pow_insufficient"] * 3
    assert forged == ["key_proof_invalid", "key_proof_invalid", "rate_limited"]
    assert limited.status_code == 429
    assert int(limited.headers["Retry-After"]) > 0


def test_registrar_limiter_counts_only_after_the_key_proof(tmp_path: Path) -> None:
    with live_service(sqlite_settings(tmp_path, registrar_limit=2)) as service:
        _, reg = register(service)
        bearer = reg["project"]["api_key"]
        with service.client() as client:
            bad = [
                Agent.new().registration(
                    registrar_bearer=bearer, sign_with=Ed25519PrivateKey.generate()
                )
                for _ in range(3)
            ]
            assert {client.post("/v1/register/agent", json=b).status_code for b in bad} == {422}
            good = [
                client.post(
                    "/v1/register/agent", json=Agent.new().registration(registrar_bearer=bearer)
                ).status_code
                for _ in range(3)
            ]
    assert good == [201, 201, 429]


def redis_url_or_skip() -> str:
    url = os.environ.get("SERVICE_TEST_REDIS_URL")
    if not url:
        if os.environ.get("CI") == "true":
            pytest.fail("SERVICE_TEST_REDIS_URL must be set under CI")
        pytest.skip("SERVICE_TEST_REDIS_URL is not set: Redis tests skipped")
    return url


def fresh_address() -> str:
    """A random address of the IPv6 documentation prefix (2001:db8::/32): as the proxy appends
    it, so that it is the client address (client_address.py)."""
    return str(ipaddress.IPv6Address((0x20010DB8 << 96) | (uuid.uuid4().int >> 32)))


def test_limiter_on_real_redis(tmp_path: Path) -> None:
    url = redis_url_or_skip()
    settings = sqlite_settings(tmp_path, redis_url=url, self_service_limit=2, trust_proxy=True)
    # Windows live in Redis for an hour: a fresh client address per run keeps runs apart.
    address = {"X-Forwarded-For": fresh_address()}
    with live_service(settings) as service, service.client() as client:
        plans = client.get("/public/plans").json()["no_exploit_loophole"]["limiter"]
        statuses = [
            client.post(
                "/v1/register/agent", json=Agent.new().registration(), headers=address
            ).status_code
            for _ in range(3)
        ]
        elsewhere = client.post(
            "/v1/register/agent",
            json=Agent.new().registration(),
            headers={"X-Forwarded-For": fresh_address()},
        )
    assert plans["backend"] == "redis"
    assert plans["available"] is True
    assert statuses == [201, 201, 429]
    assert elsewhere.status_code == 201


def test_limiter_fails_open_when_redis_is_down(tmp_path: Path) -> None:
    dead = f"redis://127.0.0.1:{free_port()}/0"
    settings = sqlite_settings(tmp_path, redis_url=dead, self_service_limit=1)
    with live_service(settings) as service, service.client() as client:
        statuses = [
            client.post("/v1/register/agent", json=Agent.new().registration()).status_code
            for _ in range(3)
        ]
        plans = client.get("/public/plans").json()["no_exploit_loophole"]["limiter"]
        metrics = client.get("/metrics").text
    assert statuses == [201, 201, 201]
    assert plans["available"] is False
    assert "hearth_limiter_fail_open_total 3.0" in metrics
    assert 'hearth_registrations_total{mode="self_service"} 3.0' in metrics  # once each


# --- migrations ---------------------------------------------------------------------------------


async def _up_down(url: str) -> list[str | None]:
    db = Database(url)
    seen: list[str | None] = []
    try:
        await upgrade(db.engine)
        seen.append(await current(db.engine))
        await downgrade(db.engine)
        seen.append(await current(db.engine))
        await upgrade(db.engine)
        seen.append(await current(db.engine))
    finally:
        await db.dispose()
    return seen


def test_migrations_up_and_down_on_sqlite(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path}/m.sqlite3"
    assert asyncio.run(_up_down(url)) == [head(), None, head()]


def test_migrations_up_and_down_on_postgresql() -> None:
    database_url_or_skip()
    with fresh_postgres_database() as url:
        assert asyncio.run(_up_down(url)) == [head(), None, head()]


def test_base64_helper_agrees_with_stdlib() -> None:
    raw = os.urandom(32)
    assert b64_encode(raw) == base64.b64encode(raw).decode()
