"""The client tests' service: a fresh one per test, over real HTTP on loopback."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.live import embedded_service


@pytest.fixture
def live_service(tmp_path: Path) -> Iterator[str]:
    """A fresh service per test: its own database, and its own per-IP registration limiter
    (five self-service registrations per hour from 127.0.0.1)."""
    directory = tmp_path / "service"
    directory.mkdir()
    with embedded_service(directory) as base_url:
        yield base_url
