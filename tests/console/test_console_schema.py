"""Migration 0016, the console's sessions: the table as db/tables.py declares it, and gone
again on the way down."""

from __future__ import annotations

import asyncio
from pathlib import Path

import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from hearth.server.db import Database, metadata
from hearth.server.db.migrate import current, downgrade, upgrade


def test_migration_0016_makes_the_sessions_table_and_takes_it_away(tmp_path: Path) -> None:
    asyncio.run(walk(f"sqlite+aiosqlite:///{tmp_path}/schema.sqlite3"))


async def walk(url: str) -> None:
    db = Database(url)

    def drift(conn: sa.Connection) -> list[str]:
        diffs = compare_metadata(MigrationContext.configure(conn), metadata)
        return [repr(d) for d in diffs if "console_sessions" in repr(d)]

    def tables(conn: sa.Connection) -> set[str]:
        return set(sa.inspect(conn).get_table_names())

    try:
        await upgrade(db.engine)
        async with db.engine.connect() as conn:
            assert "console_sessions" in await conn.run_sync(tables)
            assert await conn.run_sync(drift) == []
        await downgrade(db.engine, "0015")
        assert await current(db.engine) == "0015"
        async with db.engine.connect() as conn:
            assert "console_sessions" not in await conn.run_sync(tables)
    finally:
        await db.dispose()
