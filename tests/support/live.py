"""The real service on a real socket, for end-to-end tests: on SQLite or on a PostgreSQL
database of its own, as `hearth serve` serves it or as an embedder does.

Tests talk HTTP to uvicorn on 127.0.0.1 (no ASGI shortcut): what they check is what a client
sees.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import uvicorn

from hearth.server.app import create_app
from hearth.server.serving import uvicorn_options
from hearth.server.settings import Settings
from tests.support.databases import database_url_or_skip, fresh_postgres_database


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
def live_service(
    settings: Settings,
    *,
    as_embedded: bool = False,
    wrap: Callable[[Any], Any] | None = None,
) -> Iterator[Live]:
    """The app on a port of its own. Without a public address it is given its bound one, as
    `hearth serve` does on loopback, unless ``as_embedded``: settings untouched, as an embedder
    would serve it. ``wrap`` puts an ASGI layer around the app as served (``Live.app`` stays the
    app itself), for a test that watches every request arrive."""
    port = free_port()
    if settings.public_base_url is None and not as_embedded:
        # As `hearth serve` does on loopback: the public address is the bound one.
        settings = settings.model_copy(update={"public_base_url": f"http://127.0.0.1:{port}"})
    app = create_app(settings)
    # Served as `hearth serve` serves it (head limits, log format), on a port of its own.
    config = uvicorn.Config(
        app if wrap is None else wrap(app),
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


# The proof of work the client and CLI tests solve: production's, lowered.
POW_BITS = 8


@contextmanager
def embedded_service(directory: Path) -> Iterator[str]:
    """The service as an embedder serves it, with SQLite in ``directory`` and production's other
    settings (so its per-IP limiter: five self-service registrations an hour from 127.0.0.1);
    yields its base URL."""
    settings = Settings(
        database_url=f"sqlite+aiosqlite:///{directory}/db.sqlite3",
        pow_difficulty_bits=POW_BITS,
        log_level="warning",
    )
    with live_service(settings, as_embedded=True) as live:
        yield live.base_url


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


# --- `hearth serve` as its own process ----------------------------------------------------------
