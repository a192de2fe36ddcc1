"""The async engine, with one write discipline that holds on SQLite and PostgreSQL alike."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine


def utcnow() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def epoch_ms() -> int:
    return int(datetime.now(UTC).timestamp() * 1000)


class Database:
    """Owns the engine; ``write()`` and ``read()`` are the only ways to a connection.

    SQLite allows one writer: a deferred transaction that later writes can fail at once with
    "database is locked". Writes therefore start with ``BEGIN IMMEDIATE`` (waiting on the busy
    timeout across processes) and are queued in-process by a lock, so the process never spins
    on the file lock. WAL lets reads go on beside the writer; ``synchronous=NORMAL`` in WAL mode
    keeps every commit across a crash of the process.
    """

    def __init__(self, url: str, *, echo: bool = False, pool_size: int = 10) -> None:
        self.url = url
        self.is_sqlite = url.startswith("sqlite")
        kwargs: dict[str, Any] = {"echo": echo}
        if self.is_sqlite:
            if ":memory:" in url or url.rstrip("/").endswith("sqlite+aiosqlite:"):
                raise ValueError("use a SQLite file; an in-memory database is lost per connection")
            kwargs["connect_args"] = {"timeout": 30}
        else:
            kwargs.update(pool_size=pool_size, max_overflow=pool_size, pool_pre_ping=True)
        self.engine: AsyncEngine = create_async_engine(url, **kwargs)
        self._write_lock = asyncio.Lock() if self.is_sqlite else None
        if self.is_sqlite:
            _sqlite_pragmas(self.engine)

    @asynccontextmanager
    async def write(self) -> AsyncIterator[AsyncConnection]:
        """One transaction that may write; committed on success, rolled back on error."""
        if self._write_lock is None:
            async with self.engine.begin() as conn:
                yield conn
            return
        async with self._write_lock, self.engine.connect() as plain:
            conn = await plain.execution_options(hearth_write=True)
            async with conn.begin():
                yield conn

    @asynccontextmanager
    async def read(self) -> AsyncIterator[AsyncConnection]:
        async with self.engine.connect() as conn:
            yield conn

    async def dispose(self) -> None:
        await self.engine.dispose()


def _sqlite_pragmas(engine: AsyncEngine) -> None:
    @event.listens_for(engine.sync_engine, "connect")
    def _connect(dbapi_connection: Any, _record: Any) -> None:
        # Autocommit at the driver, so that the "begin" hook below decides how a transaction
        # starts (pysqlite's own implicit BEGIN is always DEFERRED).
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        for pragma in (
            "PRAGMA journal_mode=WAL",
            "PRAGMA synchronous=NORMAL",
            "PRAGMA foreign_keys=ON",
            "PRAGMA busy_timeout=30000",
        ):
            cursor.execute(pragma)
        cursor.close()

    @event.listens_for(engine.sync_engine, "begin")
    def _begin(conn: Any) -> None:
        immediate = conn.get_execution_options().get("hearth_write", False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


__all__ = ["Database", "epoch_ms", "utcnow"]
