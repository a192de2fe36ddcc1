"""Migration 0017 on PostgreSQL: the wake counters' inserts and deletes counted per statement,
thoughts kept whole and uncompressed; the row triggers and default storage back on the way
down. SQLite's schema is untouched by it."""

from __future__ import annotations

import asyncio
from pathlib import Path

from hearth.server.db import Database
from hearth.server.db.migrate import current, downgrade, upgrade
from tests.support.databases import fresh_postgres_database

# pg_trigger.tgtype: bit 0 set for a row trigger, clear for a statement trigger.
TRIGGERS = (
    "SELECT tgname, (tgtype & 1) = 1 FROM pg_trigger"
    " WHERE tgrelid = 'memories'::regclass AND tgname LIKE 'hearth_count_%' ORDER BY tgname"
)
STORAGE = (
    "SELECT c.reloptions, a.attstorage::text FROM pg_class c JOIN pg_attribute a"
    " ON a.attrelid = c.oid AND a.attname = 'ciphertext' WHERE c.relname = 'thoughts'"
)


def test_migration_0017_on_postgresql() -> None:
    with fresh_postgres_database() as url:
        asyncio.run(walk(url))


def test_migration_0017_leaves_sqlite_as_it_was(tmp_path: Path) -> None:
    async def run() -> None:
        db = Database(f"sqlite+aiosqlite:///{tmp_path}/schema.sqlite3")
        try:
            await upgrade(db.engine, "0016")
            async with db.engine.connect() as conn:
                before = (await conn.exec_driver_sql("SELECT sql FROM sqlite_master")).all()
            await upgrade(db.engine)
            async with db.engine.connect() as conn:
                after = (await conn.exec_driver_sql("SELECT sql FROM sqlite_master")).all()
            assert sorted(map(str, after)) == sorted(map(str, before))
        finally:
            await db.dispose()

    asyncio.run(run())


async def walk(url: str) -> None:
    db = Database(url)

    async def read(sql: str) -> list[tuple[object, ...]]:
        async with db.engine.connect() as conn:
            return [tuple(row) for row in (await conn.exec_driver_sql(sql)).all()]

    try:
        await upgrade(db.engine)
        assert await current(db.engine) == "0017"
        assert await read(TRIGGERS) == [
            ("hearth_count_memories_deleted", False),
            ("hearth_count_memories_inserted", False),
            ("hearth_count_memories_update", True),
        ]
        assert await read(STORAGE) == [(["toast_tuple_target=8160"], "e")]
        await downgrade(db.engine, "0016")
        assert await read(TRIGGERS) == [
            ("hearth_count_memories_update", True),
            ("hearth_count_memories_write", True),
        ]
        assert await read(STORAGE) == [(None, "x")]
        await upgrade(db.engine)
        assert await read(TRIGGERS) == [
            ("hearth_count_memories_deleted", False),
            ("hearth_count_memories_inserted", False),
            ("hearth_count_memories_update", True),
        ]
    finally:
        await db.dispose()
