"""The service's database beside the running service: work in one transaction on it, PostgreSQL
databases of a test's own (skipped without SERVICE_TEST_DATABASE_URL, failed under CI), and the
wake's counters checked against their rows."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import pytest
import sqlalchemy as sa

from hearth.server.db import Database, counters
from hearth.server.db.tables import wake_counts

from .postgres import fresh_database

if TYPE_CHECKING:  # the live service imports this module (live_on)
    from tests.support.live import Live

T = TypeVar("T")


def in_db(
    database: Live | str, fn: Callable[..., T], *args: Any, write: bool = True, **kwargs: Any
) -> T:
    """``fn(conn, *args, **kwargs)`` on ``database`` (a live service's, or a URL), beside the
    running service: in one transaction, or with ``write=False`` over one read-only snapshot.
    The moves no route makes (the orchestrator's, a test's seeding) go through here."""
    url = database if isinstance(database, str) else database.settings.database_url

    async def run() -> T:
        db = Database(url)
        try:
            if write:
                return await db.transaction(fn, *args, **kwargs)
            return await db.snapshot(fn, *args, **kwargs)
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
    with fresh_database(database_url_or_skip(), prefix="hearth_test") as url:
        yield url


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
