"""The service's public address comes from configuration, never from a request, and the provider
record is signed at start and on writes, never on a GET (issue 14, item 2)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
import sqlalchemy as sa

from hearth.adds import cid_for_bytes, validate
from hearth.server.db import Database
from hearth.server.settings import Settings
from tests.support.agents import Registered
from tests.support.databases import database_url_or_skip, fresh_postgres_database
from tests.support.live import live_service, sqlite_settings

PUBLIC = "https://hearth.example:8443"
HOSTS = ["evil.example:666", "other.example", "127.0.0.1:1"]


def table_count(settings: Settings, table: str) -> int:
    async def count() -> int:
        db = Database(settings.database_url)
        try:
            async with db.engine.connect() as conn:
                return int((await conn.execute(sa.text(f"select count(*) from {table}"))).scalar())
        finally:
            await db.dispose()

    return asyncio.run(count())


def put_block(client: httpx2.Client, data: bytes) -> None:
    response = client.put(
        f"/v1/adds/blocks/{cid_for_bytes(data)}",
        content=data,
        headers={"Content-Type": "application/octet-stream"},
    )
    assert response.status_code == 201, response.text


def record(client: httpx2.Client, **headers: str) -> dict[str, Any]:
    response = client.get("/v1/adds/provider-record", headers=headers)
    assert response.status_code == 200, response.text
    document: dict[str, Any] = json.loads(response.content)
    return document


@contextmanager
def database(kind: str, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """Settings overrides naming one database that outlives several services (restarts)."""
    if kind == "sqlite":
        yield {}
        return
    database_url_or_skip()
    with fresh_postgres_database() as url:
        yield {"database_url": url}


KINDS = ["sqlite", "postgresql"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_get_writes_nothing_and_the_host_header_is_never_read(kind: str, tmp_path: Path) -> None:
    """The audit: 100 GETs of the provider record under alternating Host headers stored 101
    records naming those hosts. Now: none stored, and every answer names the configured
    address; links elsewhere and receipts do too."""
    with database(kind, tmp_path) as db:
        settings = sqlite_settings(tmp_path, public_base_url=PUBLIC, **db)
        with live_service(settings) as live, live.client() as public:
            # A fresh service: reading the record makes nothing, not even the provider key.
            for host in HOSTS:
                assert (
                    public.get("/v1/adds/provider-record", headers={"Host": host}).json()["error"]
                    == "no_inventory"
                )
            assert table_count(settings, "provider_keys") == 0
            owner = Registered.new(live)
            with owner.client() as client:
                put_block(client, b"one block")
            first = record(public)
            before = table_count(settings, "adds_provider_records")
            answers = [record(public, Host=HOSTS[i % len(HOSTS)]) for i in range(100)]
            after = table_count(settings, "adds_provider_records")
            with owner.client() as client:
                issued = client.post(
                    "/v1/adds/receipts",
                    json={"items": [cid_for_bytes(b"one block")], "commitment": "store"},
                    headers={"Host": HOSTS[0]},
                )
                packages = client.get("/.well-known/love-packages", headers={"Host": HOSTS[0]})
    assert (before, after) == (1, 1)
    assert all(answer == first for answer in answers)
    assert first["provider"]["id"] == "hearth.example:8443"
    assert first["endpoints"] == [
        {"transport": "https", "uri_template": f"{PUBLIC}/v1/adds/blocks/{{cid}}"},
        {"transport": "https", "uri_template": f"{PUBLIC}/ipfs/{{cid}}?format=raw"},
    ]
    assert issued.status_code == 201, issued.text
    receipt = json.loads(issued.content)
    assert receipt["provider"]["id"] == "hearth.example:8443"
    assert receipt["provider_record"] == validate(json.dumps(first).encode()).cid
    assert packages.status_code == 200
    assert "example:666" not in packages.text
    assert PUBLIC in packages.text


@pytest.mark.parametrize("kind", KINDS)
def test_a_restart_issues_a_record_only_when_the_configuration_changed(
    kind: str, tmp_path: Path
) -> None:
    with database(kind, tmp_path) as db:
        first_address = sqlite_settings(tmp_path, public_base_url="https://a.example", **db)
        with live_service(first_address) as live:
            with Registered.new(live).client() as client:
                put_block(client, b"a block kept across restarts")
            with live.client() as public:
                one = record(public)
        counts = []
        seen = []
        for overrides in [
            {"public_base_url": "https://a.example"},  # nothing changed: no new record
            {"public_base_url": "https://b.example:9443"},  # a new address: one new record
            {"public_base_url": "https://b.example:9443"},
            {"public_base_url": "https://b.example:9443", "provider_id": "hearth-b"},
        ]:
            settings = sqlite_settings(tmp_path, **{**db, **overrides})
            with live_service(settings) as live:
                # Counted before any request: the record was signed when the service started.
                counts.append(table_count(settings, "adds_provider_records"))
                with live.client() as public:
                    seen.append(record(public, Host="evil.example:666"))
    assert one["sequence"] == 1
    assert counts == [1, 2, 2, 3]
    assert [r["sequence"] for r in seen] == [1, 2, 2, 3]
    assert seen[0] == one
    assert seen[1]["supersedes"] == validate(json.dumps(one).encode()).cid
    assert seen[1]["endpoints"][0]["uri_template"] == "https://b.example:9443/v1/adds/blocks/{cid}"
    assert seen[1]["provider"]["id"] == "b.example:9443"
    assert seen[1]["inventory"] == one["inventory"]
    assert seen[3]["provider"]["id"] == "hearth-b"


@pytest.mark.parametrize("kind", KINDS)
def test_a_record_near_expiry_is_signed_again_at_start(kind: str, tmp_path: Path) -> None:
    with database(kind, tmp_path) as db:
        settings = sqlite_settings(tmp_path, **db)
        with live_service(settings) as live:
            with Registered.new(live).client() as client:
                put_block(client, b"a block")
            with live.client() as public:
                first = record(public)

        async def age() -> None:
            engine = Database(settings.database_url)
            try:
                async with engine.engine.begin() as conn:
                    await conn.execute(
                        sa.text("update adds_provider_records set expires_at = :t"),
                        {"t": int(time.time()) + 3600},
                    )
            finally:
                await engine.dispose()

        asyncio.run(age())
        with live_service(settings) as live, live.client() as public:
            renewed = record(public)
    assert renewed["sequence"] == first["sequence"] + 1
    assert renewed["inventory"] == first["inventory"]
    assert renewed["expires_at"] - renewed["issued_at"] == 7 * 86_400


@pytest.mark.parametrize("kind", KINDS)
def test_a_burst_of_blocks_is_one_new_record(kind: str, tmp_path: Path) -> None:
    """With a delay (production's default is 5 s): the first block is in the record at once;
    the blocks stored within the delay after it are in one further record, signed by the
    keeper when the delay ends, never by the GETs that look for it."""
    with database(kind, tmp_path) as db:
        settings = sqlite_settings(tmp_path, provider_record_delay_seconds=5, **db)
        blocks = [f"block {i}".encode() for i in range(5)]
        with live_service(settings) as live, Registered.new(live).client() as client:
            put_block(client, blocks[0])
            first = record(client)
            for data in blocks[1:]:
                put_block(client, data)
            # Within the delay (these requests take milliseconds), reading signs nothing.
            right_after = record(client)
            deadline = time.monotonic() + 60  # guards against a hang; the delay is 5 s
            latest = record(client)
            while latest["sequence"] == 1 and time.monotonic() < deadline:
                time.sleep(0.2)
                latest = record(client)
            stored = table_count(settings, "adds_provider_records")
    assert [item["cid"] for item in first["inventory"]] == [cid_for_bytes(blocks[0])]
    assert right_after == first
    assert latest["sequence"] == 2
    assert {item["cid"] for item in latest["inventory"]} == {cid_for_bytes(b) for b in blocks}
    assert stored == 2


# --- an app served without `hearth serve` and without a public address --------------------------


def test_without_a_public_address_links_name_the_socket_and_no_record_is_signed(
    tmp_path: Path,
) -> None:
    settings = sqlite_settings(tmp_path)
    assert settings.public_base_url is None
    with live_service(settings, as_embedded=True) as live:
        with live.client() as public:
            packages = public.get("/.well-known/love-packages", headers={"Host": HOSTS[0]})
        with Registered.new(live).client() as client:
            put_block(client, b"a block")
            refused = client.get("/v1/adds/provider-record", headers={"Host": HOSTS[0]})
    assert packages.status_code == 200
    assert "example:666" not in packages.text
    assert live.base_url in packages.text
    assert refused.status_code == 404
    assert refused.json()["error"] == "no_inventory"
    assert table_count(settings, "adds_provider_records") == 0
