"""The real service on a real socket, for end-to-end tests, and the callers' side of arrival.

Tests talk HTTP to uvicorn on 127.0.0.1 (no ASGI shortcut): what they check is what a client
sees. Registration bodies are built here from ``hearth.proofs`` alone, independent of the SDK.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Self, TypeVar

import asyncpg
import httpx2
import pytest
import sqlalchemy as sa
import uvicorn
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from hearth.proofs import (
    RegisterIntent,
    authority_digest,
    b64_encode,
    format_timestamp,
    register_digest,
    sign_digest,
    solve_pow,
)
from hearth.server.app import create_app
from hearth.server.db import Database, counters
from hearth.server.db.tables import wake_counts
from hearth.server.serving import uvicorn_options
from hearth.server.settings import Settings

T = TypeVar("T")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Live:
    base_url: str
    settings: Settings
    app: Any

    def client(self, bearer: str | None = None) -> httpx2.Client:
        headers = {"Authorization": f"Bearer {bearer}"} if bearer else {}
        # Plain HTTP on loopback: no TLS context to build (loading CA roots costs ~50 ms).
        return httpx2.Client(base_url=self.base_url, headers=headers, timeout=30, verify=False)


@contextmanager
def live_service(settings: Settings, *, as_embedded: bool = False) -> Iterator[Live]:
    """The app on a port of its own. Without a public address it is given its bound one, as
    `hearth serve` does on loopback, unless ``as_embedded``: settings untouched, as an embedder
    would serve it."""
    port = free_port()
    if settings.public_base_url is None and not as_embedded:
        # As `hearth serve` does on loopback: the public address is the bound one.
        settings = settings.model_copy(update={"public_base_url": f"http://127.0.0.1:{port}"})
    app = create_app(settings)
    # Served as `hearth serve` serves it (head limits, log format), on a port of its own.
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=port,
        lifespan="on",
        **uvicorn_options(settings, own_process=False),
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    for _ in range(1000):
        if server.started or not thread.is_alive():
            break
        threading.Event().wait(0.01)
    if not server.started:
        raise RuntimeError("the service did not start")
    try:
        yield Live(f"http://127.0.0.1:{port}", settings, app)
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def sqlite_settings(tmp_path: Any, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "database_url": f"sqlite+aiosqlite:///{tmp_path}/hearth.sqlite3",
        "pow_difficulty_bits": 8,
        "log_level": "warning",
        "packages_dir": tmp_path / "dist",
        "blocks_dir": tmp_path / "blocks",
        # Tests register many agents from one address; the limiter's own tests set it low.
        "self_service_limit": 100_000,
        "registrar_limit": 100_000,
        # Each stored block is in the provider record at once (production groups a burst).
        "provider_record_delay_seconds": 0,
    }
    values.update(overrides)
    return Settings(**values)


def in_db(live: Live, fn: Callable[[sa.Connection], T]) -> T:
    """Run ``fn`` in one transaction on the service's database, beside the running service."""

    async def run() -> T:
        db = Database(live.settings.database_url)
        try:
            return await db.transaction(fn)
        finally:
            await db.dispose()

    return asyncio.run(run())


def counters_exact(live: Live) -> None:
    """Every counter the database keeps for the wake (db/counters.py) equals the count of its
    rows, and no count of rows lacks its counter."""

    def check(conn: sa.Connection) -> None:
        expected: dict[tuple[str, str, str], int] = {}
        for counted in counters.COUNTED:
            for project, scope, kind, total in conn.exec_driver_sql(counters.count_query(counted)):
                expected[(project, scope, kind)] = int(total)
        kept = {
            (r.project_id, r.scope, r.kind): int(r.total)
            for r in conn.execute(sa.select(wake_counts))
            if r.total != 0
        }
        assert kept == expected

    in_db(live, check)


def database_url_or_skip() -> str:
    url = os.environ.get("SERVICE_TEST_DATABASE_URL")
    if not url:
        if os.environ.get("CI") == "true":
            pytest.fail("SERVICE_TEST_DATABASE_URL must be set under CI (PostgreSQL tests)")
        pytest.skip("SERVICE_TEST_DATABASE_URL is not set: PostgreSQL tests skipped")
    return url


@contextmanager
def fresh_postgres_database() -> Iterator[str]:
    """A new empty database on the test server, dropped afterwards."""

    base = database_url_or_skip().replace("postgresql+asyncpg://", "postgresql://")
    name = f"hearth_test_{uuid.uuid4().hex[:12]}"

    async def run(sql: str) -> None:
        conn = await asyncpg.connect(base)
        try:
            await conn.execute(sql)
        finally:
            await conn.close()

    asyncio.run(run(f'CREATE DATABASE "{name}"'))
    head, _, _ = base.rpartition("/")
    try:
        yield f"{head}/{name}".replace("postgresql://", "postgresql+asyncpg://")
    finally:
        asyncio.run(run(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@contextmanager
def live_on(kind: str, tmp: Any, **overrides: Any) -> Iterator[Live]:
    """The live service on SQLite (``kind`` "sqlite") or on a fresh PostgreSQL database (any
    other kind; skipped when SERVICE_TEST_DATABASE_URL is not set), with ``overrides``."""
    if kind == "sqlite":
        with live_service(sqlite_settings(tmp, **overrides)) as live:
            yield live
        return
    database_url_or_skip()
    with (
        fresh_postgres_database() as url,
        live_service(sqlite_settings(tmp, database_url=url, **overrides)) as live,
    ):
        yield live


@contextmanager
def shared_database(tmp: Path, kind: str) -> Iterator[str]:
    """A database URL several server processes can share: a SQLite file in ``tmp`` or a fresh
    PostgreSQL database (skipped without SERVICE_TEST_DATABASE_URL)."""
    if kind == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp}/shared.sqlite3"
        return
    database_url_or_skip()
    with fresh_postgres_database() as url:
        yield url


# --- `hearth serve` as its own process ----------------------------------------------------------

HEARTH = str(Path(sys.executable).parent / "hearth")


@dataclass
class Served:
    """A running ``hearth serve``: its address, its process and its output (stdout and stderr
    together, one file)."""

    base_url: str
    process: subprocess.Popen[bytes]
    log: Path

    def lines(self) -> list[str]:
        return [line for line in self.log.read_text().splitlines() if line.strip()]


def serve_env(tmp: Path, database_url: str, port: int, **settings: str) -> dict[str, str]:
    """The environment of a test server: this one's without any inherited ``SERVICE_*`` (or a
    metrics directory), a low proof-of-work, room in the limiter, and ``settings`` (names
    without the prefix: ``serve_env(..., REDIS_URL=url)``)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("SERVICE_") and k != "PROMETHEUS_MULTIPROC_DIR"
    }
    env.update(
        {
            "SERVICE_DATABASE_URL": database_url,
            "SERVICE_PUBLIC_BASE_URL": f"http://127.0.0.1:{port}",
            "SERVICE_POW_DIFFICULTY_BITS": "8",
            "SERVICE_SELF_SERVICE_LIMIT": "100000",
            "SERVICE_REGISTRAR_LIMIT": "100000",
            "SERVICE_PACKAGES_DIR": str(tmp / "dist"),
            "SERVICE_BLOCKS_DIR": str(tmp / "blocks"),
            "SERVICE_WORKER_IN_PROCESS": "false",  # a test that needs think-loops says so
            "SERVICE_LOG_LEVEL": "warning",
        }
    )
    env.update({f"SERVICE_{name}": value for name, value in settings.items()})
    return env


@contextmanager
def hearth_serve(
    tmp: Path,
    env: Mapping[str, str],
    port: int,
    *,
    workers: int = 1,
    ready: Callable[[Served], bool] | None = None,
) -> Iterator[Served]:
    """``hearth serve`` on 127.0.0.1:``port`` with ``env``, until the block ends (SIGTERM, then
    SIGKILL after 30 s). It is up once ``ready`` says so; by default once ``GET /healthz``
    answers 200 on a new connection (so, with several workers, once one of them does)."""
    log = tmp / f"serve-{port}.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [HEARTH, "serve", "--host", "127.0.0.1", "--port", str(port)]
            + (["--workers", str(workers)] if workers != 1 else []),
            env=dict(env),
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    served = Served(f"http://127.0.0.1:{port}", process, log)

    def healthy(served: Served) -> bool:
        try:
            response = httpx2.get(
                f"{served.base_url}/healthz", timeout=1, headers={"Connection": "close"}
            )
        except httpx2.HTTPError:
            return False
        return response.status_code == 200

    try:
        deadline = time.monotonic() + 90  # a guard against a hung start, never a speed
        while not (ready or healthy)(served):
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, f"hearth serve did not start: {log.read_text()}"
            time.sleep(0.1)
        yield served
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def raw_public(key: Ed25519PrivateKey | X25519PrivateKey) -> bytes:
    return key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)


def now_text(offset_s: float = 0) -> str:
    return format_timestamp(datetime.now(UTC) + timedelta(seconds=offset_s))


@dataclass
class Agent:
    signing: Ed25519PrivateKey
    box: X25519PrivateKey

    @classmethod
    def new(cls) -> Agent:
        return cls(Ed25519PrivateKey.generate(), X25519PrivateKey.generate())

    @property
    def public_b64(self) -> str:
        return b64_encode(raw_public(self.signing))

    def registration(
        self,
        name: str = "Wren",
        *,
        difficulty: int = 8,
        timestamp: str | None = None,
        nonce: str | None = None,
        registrar_bearer: str | None = None,
        parent: str | None = None,
        sign_with: Ed25519PrivateKey | None = None,
        capabilities: list[str] | None = None,
    ) -> dict[str, Any]:
        timestamp = timestamp or now_text()
        nonce = nonce or secrets.token_urlsafe(24)
        mode = "registrar_bearer" if registrar_bearer else "self_service"
        runtime = {"provider": "local", "model": "test"}
        intent = RegisterIntent(
            display_name=name,
            signing_key=raw_public(self.signing),
            box_key=raw_public(self.box),
            timestamp=timestamp,
            registration_nonce=nonce,
            capabilities=capabilities,
            runtime=runtime,
            registrar_kind=mode,
            parent_identity_id=parent,
            registrar_bearer=registrar_bearer,
        )
        body: dict[str, Any] = {
            "display_name": name,
            "agent_public_key": self.public_b64,
            "box_public_key": b64_encode(raw_public(self.box)),
            "runtime": runtime,
            "key_proof": {
                "timestamp": timestamp,
                "signature": sign_digest(sign_with or self.signing, register_digest(intent)),
            },
            "registration_nonce": nonce,
        }
        if capabilities is not None:
            body["capabilities"] = capabilities
        if registrar_bearer:
            body["registrar"] = {"bearer": registrar_bearer}
            if parent:
                body["registrar"]["parent_identity_id"] = parent
        else:
            body["pow_nonce"] = solve_pow(self.public_b64, name, timestamp, difficulty)
        return body

    def root_headers(
        self,
        did: str,
        method: str,
        target: str,
        body: bytes,
        sequence: int,
        *,
        timestamp: str | None = None,
    ) -> dict[str, str]:
        timestamp = timestamp or now_text()
        digest = authority_digest(did, method, target, body, sequence=sequence, timestamp=timestamp)
        return {
            "X-Service-Authority-Sequence": str(sequence),
            "X-Service-Authority-Timestamp": timestamp,
            "X-Service-Authority-Signature": sign_digest(self.signing, digest),
            "Content-Type": "application/json",
        }


def register(live: Live, agent: Agent | None = None, **kwargs: Any) -> tuple[Agent, dict[str, Any]]:
    agent = agent or Agent.new()
    with live.client() as client:
        response = client.post(
            "/v1/register/agent",
            json=agent.registration(difficulty=live.settings.pow_difficulty_bits, **kwargs),
        )
    assert response.status_code == 201, response.text
    return agent, response.json()


def body_bytes(value: Any) -> bytes:
    """A JSON body as the tests send it: compact, so the signed bytes are the sent bytes."""
    return json.dumps(value, separators=(",", ":")).encode()


def every_page(fetch: Callable[[dict[str, Any]], Any], **params: Any) -> list[list[Any]]:
    """The items of each page of a listing, following ``next_cursor`` until it is null;
    ``fetch(params)`` returns one page's JSON body."""
    pages: list[list[Any]] = []
    cursor: str | None = None
    while True:
        page = fetch({**params, "cursor": cursor} if cursor else dict(params))
        pages.append(page["items"])
        cursor = page["next_cursor"]
        if cursor is None:
            return pages


def paged(fetch: Callable[[dict[str, Any]], Any], field: str = "id", /, **params: Any) -> list[Any]:
    """``field`` of every item of a listing, page after page (``every_page``)."""
    return [item[field] for items in every_page(fetch, **params) for item in items]


@dataclass
class Registered:
    """A registered agent_root identity, its keys and its project's bearer, on a live service."""

    live: Live
    agent: Agent
    reg: dict[str, Any]

    @classmethod
    def new(cls, live: Live) -> Self:
        agent, reg = register(live)
        return cls(live, agent, reg)

    @property
    def id(self) -> str:
        return str(self.reg["agent"]["id"])

    @property
    def did(self) -> str:
        return str(self.reg["agent"]["did"])

    def client(self) -> httpx2.Client:
        return self.live.client(self.reg["project"]["api_key"])

    def next_sequence(self) -> int:
        with self.client() as client:
            return int(client.get(f"/v1/identities/{self.id}/authority").json()["next_sequence"])

    def call(
        self, method: str, path: str, body: Any = None, *, proof: bool = False
    ) -> httpx2.Response:
        """``method path`` with ``body`` as JSON; with ``proof``, signed by the root key."""
        content = body_bytes(body) if body is not None else b""
        headers = {"Content-Type": "application/json"} if body is not None else {}
        if proof:
            headers = self.agent.root_headers(self.did, method, path, content, self.next_sequence())
        with self.client() as client:
            return client.request(method, path, content=content or None, headers=headers)
