"""``GET /healthz`` and ``GET /readyz`` over real HTTP, on SQLite and on PostgreSQL.

Ready after start; not ready (503 in the error shape, the failing check named) when the database
is behind this release's migrations or has no schema at all, or when the block store cannot take
a block; ready still when Redis is down, which is reported. The answers hold nothing secret, and a
probe makes no block store and leaves no file behind.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import httpx2
import pytest

from hearth.adds import cid_for_bytes
from hearth.server.db import Database
from hearth.server.db.migrate import downgrade, upgrade
from hearth.server.services.readiness import PROBE_PREFIX, expected_heads
from tests.support.agents import register
from tests.support.live import Live, free_port, live_on

BACKENDS = ["sqlite", "postgresql"]


def readyz(live: Live) -> httpx2.Response:
    with live.client() as client:
        return client.get("/readyz")


def checks_of(response: httpx2.Response) -> dict[str, Any]:
    body = response.json()
    checks: dict[str, Any] = (
        body["checks"] if response.status_code == 200 else body["details"]["checks"]
    )
    return checks


def migrate(url: str, action: Any, revision: str) -> None:
    async def run() -> None:
        db = Database(url)
        try:
            await action(db.engine, revision)
        finally:
            await db.dispose()

    asyncio.run(run())


@pytest.mark.parametrize("backend", BACKENDS)
def test_ready_after_start(backend: str, tmp_path: Path) -> None:
    with live_on(backend, tmp_path) as live:
        response = readyz(live)
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["status"] == "ready"
        checks = body["checks"]
        assert set(checks) == {"database", "blocks", "redis"}
        head = ",".join(sorted(expected_heads()))
        assert checks["database"] == {"ok": True, "revision": head, "head": head}
        # No block yet: the store is not made, and a probe does not make it.
        assert checks["blocks"] == {"ok": True, "store": "absent"}
        assert not live.settings.blocks_dir.exists()
        assert checks["redis"] == {"ok": True, "state": "not_configured", "required": False}

        # Once a block is stored, the store itself is probed, and the probe leaves nothing.
        _, registered = register(live)
        data = b"a block for the store"
        with live.client(registered["project"]["api_key"]) as client:
            put = client.put(f"/v1/adds/blocks/{cid_for_bytes(data)}", content=data)
        assert put.status_code == 201, put.text
        response = readyz(live)
        assert response.status_code == 200, response.text
        assert checks_of(response)["blocks"] == {"ok": True, "store": "present"}
        assert not list(live.settings.blocks_dir.glob(PROBE_PREFIX + "*"))


@pytest.mark.parametrize("backend", BACKENDS)
def test_not_ready_when_the_database_is_behind_this_release(backend: str, tmp_path: Path) -> None:
    with live_on(backend, tmp_path) as live:
        url = live.settings.database_url
        migrate(url, downgrade, "-1")
        response = readyz(live)
        assert response.status_code == 503, response.text
        body = response.json()
        assert body["error"] == "not_ready"
        assert "database" in body["message"]
        database = body["details"]["checks"]["database"]
        assert database["ok"] is False
        assert database["revision"] != database["head"]
        assert "head" in database["problem"]
        assert body["details"]["checks"]["blocks"]["ok"] is True

        migrate(url, upgrade, "head")
        assert readyz(live).status_code == 200


@pytest.mark.parametrize("backend", BACKENDS)
def test_healthz_answers_and_readyz_refuses_without_a_schema(backend: str, tmp_path: Path) -> None:
    # The service refuses to start on an unmigrated database, so the schema goes afterwards.
    with live_on(backend, tmp_path) as live:
        migrate(live.settings.database_url, downgrade, "base")
        with live.client() as client:
            health = client.get("/healthz")
        assert health.status_code == 200
        assert health.json()["status"] == "ok"  # the process answers, whatever it depends on

        response = readyz(live)
        assert response.status_code == 503, response.text
        database = checks_of(response)["database"]
        assert database["ok"] is False
        assert database["revision"] is None
        assert database["problem"] == "not migrated (no revision)"


@pytest.mark.parametrize("backend", BACKENDS)
def test_not_ready_when_the_block_store_cannot_be_made(backend: str, tmp_path: Path) -> None:
    # A parent that is a regular file stops the store whoever runs the tests (root included).
    parent = tmp_path / "a-file"
    parent.write_text("in the way")
    with live_on(backend, tmp_path, blocks_dir=parent / "blocks") as live:
        response = readyz(live)
        assert response.status_code == 503, response.text
        body = response.json()
        assert body["error"] == "not_ready"
        assert body["message"] == "Not ready: blocks."
        checks = body["details"]["checks"]
        assert checks["blocks"]["ok"] is False
        assert "not a directory" in checks["blocks"]["problem"]
        assert checks["database"]["ok"] is True
        assert str(tmp_path) not in response.text  # no path is reported


@pytest.mark.parametrize("backend", BACKENDS)
def test_not_ready_when_the_block_store_is_not_writable(backend: str, tmp_path: Path) -> None:
    # File modes do not stop root (CI runs as root); the immutable attribute does.
    as_root = os.geteuid() == 0
    if as_root and shutil.which("chattr") is None:
        pytest.skip("running as root without chattr: nothing here can make a directory unwritable")
    with live_on(backend, tmp_path) as live:
        _, registered = register(live)
        data = b"makes the store"
        with live.client(registered["project"]["api_key"]) as client:
            assert client.put(f"/v1/adds/blocks/{cid_for_bytes(data)}", content=data).is_success
        blocks = live.settings.blocks_dir
        if as_root:
            subprocess.run(["chattr", "+i", str(blocks)], check=True)
        else:
            blocks.chmod(0o500)
        try:
            response = readyz(live)
        finally:
            if as_root:
                subprocess.run(["chattr", "-i", str(blocks)], check=True)
            else:
                blocks.chmod(0o700)
        assert response.status_code == 503, response.text
        expected = "not writable (EPERM)" if as_root else "not writable (EACCES)"
        assert checks_of(response)["blocks"] == {"ok": False, "problem": expected}


@pytest.mark.parametrize("backend", BACKENDS)
def test_redis_down_is_reported_and_still_ready(backend: str, tmp_path: Path) -> None:
    # Nothing listens on this port; the password must never be echoed.
    url = f"redis://:hunter2-secret@127.0.0.1:{free_port()}/0"
    with live_on(backend, tmp_path, redis_url=url) as live:
        response = readyz(live)
        assert response.status_code == 200, response.text
        assert checks_of(response)["redis"] == {"ok": True, "state": "down", "required": False}
        assert "hunter2" not in response.text


@pytest.mark.parametrize("limiter_enabled", [True, False])
def test_redis_up_is_reported(limiter_enabled: bool, tmp_path: Path) -> None:
    # Through the limiter's probe, or (limiter off) through the event bus's connection.
    url = os.environ.get("SERVICE_TEST_REDIS_URL")
    if not url:
        if os.environ.get("CI") == "true":
            pytest.fail("SERVICE_TEST_REDIS_URL must be set under CI")
        pytest.skip("SERVICE_TEST_REDIS_URL is not set: Redis tests skipped")
    with live_on("sqlite", tmp_path, redis_url=url, limiter_enabled=limiter_enabled) as live:
        response = readyz(live)
        assert response.status_code == 200, response.text
        assert checks_of(response)["redis"] == {"ok": True, "state": "up", "required": False}
