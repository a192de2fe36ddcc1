"""SQLite group commit (``Database.transaction``): transactions that queue up while the writer is
busy share one commit, and still behave as if each ran alone, one after another."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Column, Connection, Integer, MetaData, String, Table, func, select

from hearth.server.db import Database

meta = MetaData()
rows = Table("rows", meta, Column("id", Integer, primary_key=True), Column("who", String(20)))
counter = Table("counter", meta, Column("id", Integer, primary_key=True), Column("n", Integer))


class Refused(Exception):
    pass


async def _database(tmp_path: Path) -> Database:
    db = Database(f"sqlite+aiosqlite:///{tmp_path}/group.sqlite3")
    async with db.write() as conn:
        await conn.run_sync(meta.create_all)
        await conn.execute(counter.insert().values(id=1, n=0))
    return db


def _insert(conn: Connection, who: str, fail: bool) -> str:
    conn.execute(rows.insert().values(who=who))
    if fail:  # after writing: its row must not survive, and nobody else's may be lost
        raise Refused(who)
    return who


def _increment(conn: Connection) -> int:
    current = conn.execute(select(counter.c.n).where(counter.c.id == 1)).scalar_one()
    conn.execute(counter.update().where(counter.c.id == 1).values(n=current + 1))
    return int(current) + 1


def _count(conn: Connection) -> list[str]:
    return sorted(conn.execute(select(rows.c.who)).scalars())


def test_a_failing_transaction_in_a_group_rolls_back_alone(tmp_path: Path) -> None:
    async def run() -> None:
        db = await _database(tmp_path)
        sizes: list[int] = []
        group = db._sync_group

        def counting(batch: list[Any]) -> list[tuple[bool, Any]]:
            sizes.append(len(batch))
            return group(batch)

        db._sync_group = counting  # type: ignore[method-assign]
        try:
            names = [f"t{i:02d}" for i in range(40)]
            outcomes = await asyncio.gather(
                *(db.transaction(_insert, name, i % 3 == 0) for i, name in enumerate(names)),
                return_exceptions=True,
            )
            for i, (name, outcome) in enumerate(zip(names, outcomes, strict=True)):
                if i % 3 == 0:
                    assert isinstance(outcome, Refused)
                    assert str(outcome) == name
                else:
                    assert outcome == name
            committed = await db.snapshot(_count)
            assert committed == [n for i, n in enumerate(names) if i % 3 != 0]
            assert max(sizes) > 1, "the transactions were expected to share commits"
        finally:
            await db.dispose()

    asyncio.run(run())


def test_grouped_transactions_run_one_after_another(tmp_path: Path) -> None:
    """Read-modify-write in every transaction: no update is lost, and each saw its own turn."""

    async def run() -> None:
        db = await _database(tmp_path)
        try:
            seen = await asyncio.gather(*(db.transaction(_increment) for _ in range(100)))
            assert sorted(seen) == list(range(1, 101))
            total = await db.snapshot(
                lambda conn: conn.execute(select(func.max(counter.c.n))).scalar_one()
            )
            assert total == 100
        finally:
            await db.dispose()

    asyncio.run(run())


def test_a_cancelled_caller_does_not_stop_the_others(tmp_path: Path) -> None:
    async def run() -> None:
        db = await _database(tmp_path)
        try:
            tasks = [
                asyncio.create_task(db.transaction(_insert, f"c{i}", False)) for i in range(10)
            ]
            tasks[5].cancel()
            results = await asyncio.gather(*tasks, return_exceptions=True)
            assert isinstance(results[5], asyncio.CancelledError)
            committed = await db.snapshot(_count)
            # The cancelled one either never ran or ran and committed; everyone else committed.
            assert {f"c{i}" for i in range(10) if i != 5} <= set(committed)
        finally:
            await db.dispose()

    asyncio.run(run())


@pytest.mark.parametrize("size", [1, 2])
def test_groups_of_any_size_commit(tmp_path: Path, size: int) -> None:
    async def run() -> None:
        db = await _database(tmp_path)
        try:
            await asyncio.gather(*(db.transaction(_insert, f"s{i}", False) for i in range(size)))
            assert await db.snapshot(_count) == [f"s{i}" for i in range(size)]
        finally:
            await db.dispose()

    asyncio.run(run())
