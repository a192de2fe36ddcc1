"""The PostgreSQL pool without a pre-ping: connections the server ended are replaced at checkout,
and snapshots read in autocommit (no transaction left open, none needed).

Skipped without SERVICE_TEST_DATABASE_URL (PostgreSQL only: SQLite has no server to end them).
"""

from __future__ import annotations

import asyncio

import asyncpg
import sqlalchemy as sa

from hearth.server.db import Database
from tests.support.databases import fresh_postgres_database


def _backend(conn: sa.Connection) -> int:
    return int(conn.execute(sa.text("SELECT pg_backend_pid()")).scalar_one())


def _in_transaction(conn: sa.Connection) -> bool:
    # now() is the start of the current transaction: two statements of one transaction read
    # the same instant; in autocommit each statement is a transaction of its own.
    first = conn.execute(sa.text("SELECT now()")).scalar_one()
    conn.execute(sa.text("SELECT pg_sleep(0.01)"))
    return bool(first == conn.execute(sa.text("SELECT now()")).scalar_one())


async def _terminate(url: str, pid: int) -> None:
    plain = url.replace("postgresql+asyncpg://", "postgresql://")
    admin = await asyncpg.connect(plain)
    try:
        assert await admin.fetchval("SELECT pg_terminate_backend($1)", pid)
    finally:
        await admin.close()


def test_a_connection_the_server_ended_is_replaced_at_checkout() -> None:
    async def run(url: str) -> None:
        db = Database(url, pool_size=1)
        try:
            first = await db.snapshot(_backend)
            await _terminate(url, first)
            await asyncio.sleep(0.2)  # the event loop reads the end of the session
            second = await db.snapshot(_backend)
            assert second != first
            await _terminate(url, second)
            await asyncio.sleep(0.2)
            assert await db.transaction(_backend) not in {first, second}
        finally:
            await db.dispose()

    with fresh_postgres_database() as url:
        asyncio.run(run(url))


def test_snapshots_hold_no_transaction_and_see_every_commit() -> None:
    def write(conn: sa.Connection, value: int) -> None:
        conn.execute(sa.text("INSERT INTO t (v) VALUES (:v)"), {"v": value})

    def values(conn: sa.Connection) -> list[int]:
        return [int(v) for v in conn.execute(sa.text("SELECT v FROM t ORDER BY v")).scalars()]

    async def run(url: str) -> None:
        db = Database(url, pool_size=1)
        try:
            await db.transaction(lambda conn: conn.execute(sa.text("CREATE TABLE t (v int)")))
            assert not await db.snapshot(_in_transaction)
            assert await db.transaction(_in_transaction)
            await db.transaction(write, 1)
            assert await db.snapshot(values) == [1]
            await db.transaction(write, 2)
            assert await db.snapshot(values) == [1, 2]
        finally:
            await db.dispose()

    with fresh_postgres_database() as url:
        asyncio.run(run(url))
