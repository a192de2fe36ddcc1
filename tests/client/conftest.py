"""A real hearth service over real HTTP on loopback, for client and CLI tests."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import uvicorn

from hearth.server.app import create_app
from hearth.server.settings import Settings

POW_BITS = 8


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def serve(directory: Path) -> Iterator[str]:
    """Run the service (SQLite in ``directory``) in a thread; yields its base URL."""
    app = create_app(
        Settings(
            database_url=f"sqlite+aiosqlite:///{directory}/db.sqlite3",
            pow_difficulty_bits=POW_BITS,
            log_level="warning",
        )
    )
    port = _free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="hearth-live-service", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            thread.join(5)
            raise RuntimeError("the live service did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(30)


@pytest.fixture
def live_service(tmp_path: Path) -> Iterator[str]:
    """A fresh service per test: its own database, and its own per-IP registration limiter
    (five self-service registrations per hour from 127.0.0.1)."""
    directory = tmp_path / "service"
    directory.mkdir()
    with serve(directory) as base_url:
        yield base_url
