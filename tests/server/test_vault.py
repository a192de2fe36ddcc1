"""The vault over real HTTP: secrets sealed at rest and never answered, names and namespaces,
isolation, refusals, logs free of values, the sealing keys, and migration 0004 on both databases.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import sqlite3
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import schemathesis
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from hearth.proofs.sealing import associated_data, open_sealed
from hearth.server.db import Database, metadata
from hearth.server.db.migrate import current, downgrade, head, upgrade
from hearth.server.db.tables import vault_keys, vault_secrets
from hearth.server.errors import ApiError
from hearth.server.observability import configure_logging
from hearth.server.services import vault
from tests.support.databases import database_url_or_skip, fresh_postgres_database
from tests.support.listings import paged
from tests.support.live import Live, live_service, sqlite_settings
from tests.support.openapi import conforms
from tests.support.runtimes import new_project


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    tmp = tmp_path_factory.mktemp("vault")
    with live_service(sqlite_settings(tmp)) as service:
        yield service


def a_secret() -> str:
    return "sk-test-" + secrets.token_urlsafe(32)


def db_path(live: Live) -> Path:
    return Path(live.settings.database_url.split("///", 1)[1])


def db_bytes(live: Live) -> bytes:
    path = db_path(live)
    return b"".join(p.read_bytes() for p in (path, Path(f"{path}-wal")) if p.exists())


async def _with_db(url: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
    db = Database(url)
    try:
        return await db.snapshot(fn, *args, **kwargs)
    finally:
        await db.dispose()


def read_secret(live: Live, project_id: str, name: str, master_key: str | None = None) -> str:
    value: str = asyncio.run(
        _with_db(
            live.settings.database_url,
            vault.read_secret,
            project_id,
            name,
            master_key=master_key,
        )
    )
    return value


# --- the routes ---------------------------------------------------------------------------------


def test_put_get_list_replace_delete(live: Live) -> None:
    bearer, project_id, _ = new_project(live)
    first, second = a_secret(), a_secret()
    with live.client(bearer) as client:
        created = client.put("/v1/vault/openai-key", json={"value": first})
        fetched = client.get("/v1/vault/openai-key")
        replaced = client.put(
            "/v1/vault/openai-key", json={"value": second, "description": "the team's key"}
        )
        listed = client.get("/v1/vault")
        value_now = read_secret(live, project_id, "openai-key")
        deleted = client.delete("/v1/vault/openai-key")
        gone = client.get("/v1/vault/openai-key")
        deleted_again = client.delete("/v1/vault/openai-key")
        empty = client.get("/v1/vault")
    assert created.status_code == 201, created.text
    record = created.json()
    assert record["name"] == "openai-key"
    assert record["version"] == 1
    assert record["identity_id"] is None
    assert record["description"] is None
    assert record["sealing"] == vault.LOCAL
    assert "value" not in record
    assert fetched.status_code == 200
    assert fetched.json() == record
    assert replaced.status_code == 200
    assert replaced.json()["version"] == 2
    assert replaced.json()["description"] == "the team's key"
    assert replaced.json()["created_at"] == record["created_at"]
    assert listed.json()["items"] == [
        {k: v for k, v in replaced.json().items() if k != "_welcomed"}
    ]
    assert listed.json()["next_cursor"] is None
    assert value_now == second
    assert deleted.status_code == 204
    assert gone.status_code == 404
    assert gone.json() == {"error": "not_found", "message": "Vault secret not found."}
    assert deleted_again.status_code == 404
    assert empty.json()["items"] == []
    for response in (created, fetched, replaced, listed):
        assert first not in response.text
        assert second not in response.text


def test_listing_pages_by_name(live: Live) -> None:
    bearer, _, _ = new_project(live)
    names = [f"key-{index:02d}" for index in range(7)]
    with live.client(bearer) as client:
        for name in reversed(names):
            assert client.put(f"/v1/vault/{name}", json={"value": "v"}).status_code == 201
        seen = paged(lambda params: client.get("/v1/vault", params=params).json(), "name", limit=3)
        bad = client.get("/v1/vault", params={"cursor": "!!"})
    assert seen == names
    assert bad.status_code == 400
    assert bad.json()["error"] == "invalid_cursor"


def test_identity_namespace(live: Live) -> None:
    bearer, project_id, agent_id = new_project(live)
    other_bearer, _, other_agent = new_project(live)
    config = a_secret()
    with live.client(bearer) as client:
        put = client.put(f"/v1/vault/{agent_id}:config", json={"value": config})
        plain = client.put("/v1/vault/shared", json={"value": "project-wide"})
        only_agent = client.get("/v1/vault", params={"identity_id": agent_id}).json()
        everything = client.get("/v1/vault").json()
        foreign = client.put(f"/v1/vault/{other_agent}:config", json={"value": "x"})
        unknown = client.put(f"/v1/vault/{uuid.uuid4()}:config", json={"value": "x"})
        upper = client.put(f"/v1/vault/{agent_id.upper()}:config", json={"value": "x"})
        bare = client.put(f"/v1/vault/{agent_id}:", json={"value": "x"})
        foreign_list = client.get("/v1/vault", params={"identity_id": other_agent})
    assert put.status_code == 201
    assert put.json()["identity_id"] == agent_id
    assert plain.json()["identity_id"] is None
    assert [item["name"] for item in only_agent["items"]] == [f"{agent_id}:config"]
    assert len(everything["items"]) == 2
    assert read_secret(live, project_id, f"{agent_id}:config") == config
    for response in (foreign, unknown):
        assert response.status_code == 404
        assert response.json()["message"] == "Identity not found."
    for response in (upper, bare):
        assert response.status_code == 422
        assert response.json()["error"] == "invalid_vault_name"
    assert foreign_list.status_code == 404
    with live.client(other_bearer) as other:
        assert other.get("/v1/vault").json()["items"] == []


def test_another_projects_secrets_do_not_exist(live: Live) -> None:
    owner, owner_project, _ = new_project(live)
    stranger, stranger_project, _ = new_project(live)
    mine, theirs = a_secret(), a_secret()
    with live.client(owner) as client:
        assert client.put("/v1/vault/api", json={"value": mine}).status_code == 201
    with live.client(stranger) as client:
        assert client.get("/v1/vault/api").status_code == 404
        assert client.delete("/v1/vault/api").status_code == 404
        assert client.get("/v1/vault").json()["items"] == []
        # The same name in another project is another secret.
        assert client.put("/v1/vault/api", json={"value": theirs}).status_code == 201
    assert read_secret(live, owner_project, "api") == mine
    assert read_secret(live, stranger_project, "api") == theirs
    with live.client(owner) as client:
        assert client.get("/v1/vault/api").json()["version"] == 1


@pytest.mark.parametrize(
    ("name", "body"),
    [
        ("ok", {"value": ""}),
        ("ok", {"value": "x" * 65_537}),
        ("ok", {"value": 12}),
        ("ok", {}),
        ("ok", {"value": "x", "plaintext": True}),
        ("ok", {"value": "x", "description": "d" * 501}),
        ("-leading-dash", {"value": "x"}),
        ("sp ace", {"value": "x"}),
        ("x" * 201, {"value": "x"}),
    ],
    ids=[
        "empty",
        "too-long",
        "not-text",
        "missing",
        "extra",
        "description",
        "dash",
        "space",
        "201",
    ],
)
def test_bad_puts_are_422_and_store_nothing(live: Live, name: str, body: Any) -> None:
    bearer, _, _ = new_project(live)
    with live.client(bearer) as client:
        response = client.put(f"/v1/vault/{name}", json=body)
        listed = client.get("/v1/vault").json()["items"]
    assert response.status_code == 422, response.text
    assert response.json()["error"] == "validation_error"
    assert listed == []


def test_unauthenticated_is_401(live: Live) -> None:
    with live.client() as anonymous:
        for method, path in (
            ("GET", "/v1/vault"),
            ("GET", "/v1/vault/x"),
            ("PUT", "/v1/vault/x"),
            ("DELETE", "/v1/vault/x"),
        ):
            response = anonymous.request(method, path, json={"value": "x"})
            assert response.status_code == 401, (method, path)
            assert response.json()["error"] == "unauthorized"


# --- at rest ------------------------------------------------------------------------------------


def test_values_are_sealed_at_rest_and_bound_to_their_row(live: Live) -> None:
    bearer, project_id, _ = new_project(live)
    value = a_secret()
    with live.client(bearer) as client:
        assert client.put("/v1/vault/sealed", json={"value": value}).status_code == 201
        assert client.put("/v1/vault/other", json={"value": "another"}).status_code == 201
    with sqlite3.connect(db_path(live)) as db:
        sealing, ciphertext = db.execute(
            "select sealing, ciphertext from vault_secrets where project_id = ? and name = ?",
            (project_id, "sealed"),
        ).fetchone()
        ((key,),) = db.execute("select key from vault_keys").fetchall()
    assert sealing == vault.LOCAL
    assert len(ciphertext) == 12 + len(value) + 16
    assert value.encode() not in ciphertext
    assert value.encode() not in db_bytes(live)
    aad = associated_data(b"hearth-vault/v1", project_id.encode(), b"sealed")
    assert open_sealed(key, ciphertext, aad) == value.encode()
    # A ciphertext moved to another row does not open there.
    with sqlite3.connect(db_path(live)) as db:
        db.execute(
            "update vault_secrets set ciphertext = ? where project_id = ? and name = ?",
            (ciphertext, project_id, "other"),
        )
    with pytest.raises(vault.VaultUnavailable, match="does not open"):
        read_secret(live, project_id, "other")
    with pytest.raises(ApiError) as missing:
        read_secret(live, project_id, "absent")
    assert missing.value.status == 404


def test_master_key_seals_and_earlier_values_stay_readable(tmp_path: Path) -> None:
    before, after = a_secret(), a_secret()
    with live_service(sqlite_settings(tmp_path)) as service:
        bearer, project_id, _ = new_project(service)
        with service.client(bearer) as client:
            assert client.put("/v1/vault/early", json={"value": before}).status_code == 201
    with live_service(sqlite_settings(tmp_path, kms_master_key="master one")) as service:
        with service.client(bearer) as client:
            put = client.put("/v1/vault/late", json={"value": after})
        assert put.json()["sealing"] == vault.KMS
        assert read_secret(service, project_id, "late", "master one") == after
        assert read_secret(service, project_id, "early", "master one") == before
        assert read_secret(service, project_id, "early") == before
        for wrong in (None, "master two"):
            with pytest.raises(vault.VaultUnavailable):
                read_secret(service, project_id, "late", wrong)
        assert after.encode() not in db_bytes(service)


def test_master_key_alone_needs_no_stored_key(tmp_path: Path) -> None:
    value = a_secret()
    with live_service(sqlite_settings(tmp_path, kms_master_key="m")) as service:
        bearer, project_id, _ = new_project(service)
        with service.client(bearer) as client:
            assert client.put("/v1/vault/k", json={"value": value}).status_code == 201
        assert read_secret(service, project_id, "k", "m") == value
    with sqlite3.connect(tmp_path / "hearth.sqlite3") as db:
        assert db.execute("select count(*) from vault_keys").fetchone() == (0,)


def test_values_never_reach_a_response_or_a_log(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    """Every route, success and refusal, with the service logging at debug level."""
    value = a_secret()
    caplog.set_level(logging.DEBUG)
    texts: list[str] = []
    try:
        with live_service(sqlite_settings(tmp_path, log_level="debug")) as service:
            bearer, project_id, agent_id = new_project(service)
            with service.client(bearer) as client:
                for response in (
                    client.put("/v1/vault/llm", json={"value": value}),
                    client.put("/v1/vault/llm", json={"value": value, "description": "d"}),
                    client.put(f"/v1/vault/{agent_id}:config", json={"value": value}),
                    client.put("/v1/vault/llm", json={"value": value, "extra": value}),
                    client.put("/v1/vault/llm", json={"value": value * 3000}),
                    client.put("/v1/vault/-bad", json={"value": value}),
                    client.put(f"/v1/vault/{uuid.uuid4()}:x", json={"value": value}),
                    client.put("/v1/vault/llm", content=b'{"value": "' + value.encode() + b'"'),
                    client.get("/v1/vault/llm"),
                    client.get("/v1/vault"),
                    client.get("/v1/vault", params={"identity_id": agent_id}),
                    client.delete(f"/v1/vault/{agent_id}:config"),
                ):
                    assert response.status_code < 500, response.text
                    texts.append(response.text)
                    texts.extend(f"{k}: {v}" for k, v in response.headers.items())
            assert read_secret(service, project_id, "llm") == value
    finally:
        # The service configured structlog to print to this test's captured stderr; point it
        # back at the real one, at the level the other tests' services use.
        with capfd.disabled():
            configure_logging("json", "warning")
    captured = capfd.readouterr()
    assert "request" in captured.err  # the debug request lines were written, and read here
    for text in [*texts, captured.out, captured.err, caplog.text]:
        assert value not in text


# --- PostgreSQL ---------------------------------------------------------------------------------


def test_vault_on_postgresql(tmp_path: Path) -> None:
    database_url_or_skip()
    with (
        fresh_postgres_database() as url,
        live_service(sqlite_settings(tmp_path, database_url=url)) as service,
    ):
        bearer, project_id, agent_id = new_project(service)
        values = {f"k{index}": a_secret() for index in range(12)}

        def put(item: tuple[str, str]) -> int:
            with service.client(bearer) as client:
                return client.put(f"/v1/vault/{item[0]}", json={"value": item[1]}).status_code

        # The first writers race to create the installation key: one row, one key for all.
        with ThreadPoolExecutor(len(values)) as pool:
            assert list(pool.map(put, values.items())) == [201] * len(values)
        with service.client(bearer) as client:
            replaced = client.put("/v1/vault/k0", json={"value": "new"})
            spaced = client.put(f"/v1/vault/{agent_id}:config", json={"value": "c"})
            listed = client.get("/v1/vault", params={"limit": 5}).json()
        assert replaced.status_code == 200
        assert replaced.json()["version"] == 2
        assert spaced.json()["identity_id"] == agent_id
        assert len(listed["items"]) == 5
        assert listed["next_cursor"] is not None
        values["k0"] = "new"
        for name, value in values.items():
            assert read_secret(service, project_id, name) == value

        def stored(conn: sa.Connection) -> tuple[int, list[bytes]]:
            keys = conn.execute(sa.select(sa.func.count()).select_from(vault_keys))
            rows = conn.execute(sa.select(vault_secrets.c.ciphertext)).scalars()
            return int(keys.scalar_one()), [bytes(r) for r in rows]

        count, ciphertexts = asyncio.run(_with_db(url, stored))
        assert count == 1
        for value in values.values():
            assert all(value.encode() not in c for c in ciphertexts)


# --- the OpenAPI document -----------------------------------------------------------------------


def test_vault_routes_answer_as_documented(live: Live) -> None:
    api_schema = schemathesis.openapi.from_url(
        f"{live.base_url}/v1/openapi.json", config=schemathesis.Config()
    )
    bearer, _, agent_id = new_project(live)
    with live.client(bearer) as client:
        label = "PUT /v1/vault/{name}"
        conforms(api_schema, label, client.put("/v1/vault/doc", json={"value": "v"}), 201)
        conforms(api_schema, label, client.put("/v1/vault/doc", json={"value": "w"}), 200)
        conforms(
            api_schema,
            label,
            client.put(f"/v1/vault/{uuid.uuid4()}:config", json={"value": "v"}),
            404,
        )
        conforms(
            api_schema,
            label,
            client.put(f"/v1/vault/{agent_id.upper()}:config", json={"value": "v"}),
            422,
        )
        conforms(api_schema, "GET /v1/vault/{name}", client.get("/v1/vault/doc"), 200)
        conforms(api_schema, "GET /v1/vault/{name}", client.get("/v1/vault/absent"), 404)
        conforms(api_schema, "GET /v1/vault", client.get("/v1/vault"), 200)
        conforms(api_schema, "GET /v1/vault", client.get("/v1/vault?cursor=.x"), 400)
        conforms(api_schema, "DELETE /v1/vault/{name}", client.delete("/v1/vault/doc"), 204)
        conforms(api_schema, "DELETE /v1/vault/{name}", client.delete("/v1/vault/doc"), 404)


# --- the migration ------------------------------------------------------------------------------

TABLES = {"wallet_transfers", "vault_secrets", "vault_keys"}


async def _walk_migration(url: str) -> list[Any]:
    db = Database(url)

    def state(conn: sa.Connection) -> tuple[set[str], bool]:
        inspector = sa.inspect(conn)
        ledger_indexes = {index["name"] for index in inspector.get_indexes("ledger")}
        return set(inspector.get_table_names()) & TABLES, "ix_ledger_wallet_created" in (
            ledger_indexes
        )

    def drift(conn: sa.Connection) -> list[str]:
        diffs = compare_metadata(MigrationContext.configure(conn), metadata)
        names = (*TABLES, "ix_ledger_wallet_created")
        return [repr(d) for d in diffs if any(name in repr(d) for name in names)]

    async def look() -> Any:
        async with db.engine.connect() as conn:
            return await conn.run_sync(state)

    seen: list[Any] = []
    try:
        await upgrade(db.engine)
        seen += [await current(db.engine), await look()]
        async with db.engine.connect() as conn:
            seen.append(await conn.run_sync(drift))
        await downgrade(db.engine, "0003")
        seen += [await current(db.engine), await look()]
        await upgrade(db.engine)
        seen += [await current(db.engine), await look()]
    finally:
        await db.dispose()
    return seen


def expected_walk() -> list[Any]:
    return [head(), (TABLES, True), [], "0003", (set(), False), head(), (TABLES, True)]


def test_migration_0004_up_and_down_on_sqlite(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path}/m.sqlite3"
    assert asyncio.run(_walk_migration(url)) == expected_walk()


def test_migration_0004_up_and_down_on_postgresql() -> None:
    database_url_or_skip()
    with fresh_postgres_database() as url:
        assert asyncio.run(_walk_migration(url)) == expected_walk()
