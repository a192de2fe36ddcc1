"""``db.direct``: the hot paths' statements on SQLite's driver cursor store exactly what Core
would store, count rows as Core does, raise Core's exceptions, and keep savepoint semantics; on
PostgreSQL ``run`` is Core itself. Each case runs on both databases."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import (
    JSON,
    Column,
    Connection,
    DateTime,
    Integer,
    MetaData,
    String,
    Table,
    bindparam,
    func,
    select,
    update,
)
from sqlalchemy.exc import IntegrityError

from hearth.server.db import Database
from hearth.server.db.direct import run, run_many, savepoint, select_rows
from tests.support.databases import fresh_postgres_database

meta = MetaData()
things = Table(
    "things",
    meta,
    Column("id", String(36), primary_key=True),
    Column("n", Integer, nullable=False),
    Column("at", DateTime, nullable=False),
    Column("doc", JSON, nullable=True),
    Column("note", String(20), nullable=True),
)
INSERT = things.insert()
BUMP = update(things).where(things.c.id == bindparam("thing")).values(n=bindparam("base") + 1)
WHEN = datetime(2026, 11, 21, 4, 5, 6, 789012)


@contextmanager
def database_url(kind: str, tmp_path: Path) -> Iterator[str]:
    if kind == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path}/direct.sqlite3"
    else:
        with fresh_postgres_database() as url:
            yield url


def transactions(kind: str, tmp_path: Path, *steps: Callable[[Connection], Any]) -> list[Any]:
    """Each step in its own ``Database.transaction``, in order, all on one event loop; a step
    that raises gives its exception as its outcome."""

    async def go(url: str) -> list[Any]:
        db = Database(url)
        try:
            async with db.write() as conn:
                await conn.run_sync(meta.create_all)
            outcomes: list[Any] = []
            for step in steps:
                try:
                    outcomes.append(await db.transaction(step))
                except Exception as exc:
                    outcomes.append(exc)
            return outcomes
        finally:
            await db.dispose()

    with database_url(kind, tmp_path) as url:
        return asyncio.run(go(url))


def rows(conn: Connection) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in conn.execute(select(things).order_by(things.c.id))]


KINDS = pytest.mark.parametrize("kind", ["sqlite", "postgresql"])


@KINDS
def test_run_stores_what_core_stores(kind: str, tmp_path: Path) -> None:
    def write(conn: Connection) -> list[int]:
        counts = [
            run(conn, INSERT, {"id": "a", "n": 1, "at": WHEN, "doc": {"k": [1, "x"]}}),
            run(conn, INSERT, {"id": "b", "n": 2, "at": WHEN, "doc": None, "note": "é"}),
        ]
        conn.execute(INSERT, {"id": "c", "n": 1, "at": WHEN, "doc": {"k": [1, "x"]}})
        conn.execute(INSERT, {"id": "d", "n": 2, "at": WHEN, "doc": None, "note": "é"})
        return counts

    counts, stored = transactions(kind, tmp_path, write, rows)
    assert counts == [1, 1]
    direct_rows, core_rows = stored[:2], stored[2:]
    assert [r[1:] for r in direct_rows] == [r[1:] for r in core_rows]
    assert direct_rows[0][1:] == (1, WHEN, {"k": [1, "x"]}, None)


@KINDS
def test_run_many_stores_what_core_stores_empty_columns_included(kind: str, tmp_path: Path) -> None:
    """Read back as stored (a JSON column's None is the JSON text ``null``, as Core binds it,
    not SQL NULL): ``run_many`` works out each type's None once, not per row."""
    empty = {"n": 1, "at": WHEN, "doc": None, "note": None}
    full = {"n": 2, "at": WHEN, "doc": {"k": [1, "x"]}, "note": "é"}

    def write(conn: Connection) -> None:
        run_many(conn, INSERT, [{"id": "a", **empty}, {"id": "b", **full}])
        conn.execute(INSERT, [{"id": "c", **empty}, {"id": "d", **full}])

    def stored(conn: Connection) -> list[tuple[Any, ...]]:
        text = "SELECT CAST(doc AS TEXT), note, at, n FROM things ORDER BY id"
        return [tuple(r) for r in conn.exec_driver_sql(text)]

    _, got = transactions(kind, tmp_path, write, stored)
    assert got[:2] == got[2:]
    assert got[0][:2] == ("null", None)


@KINDS
def test_run_counts_rows_and_binds_the_statements_own_literals(kind: str, tmp_path: Path) -> None:
    def write(conn: Connection) -> tuple[int, int, int]:
        run(conn, INSERT, {"id": "a", "n": 1, "at": WHEN})
        hit = run(conn, BUMP, {"thing": "a", "base": 41})  # n = 41 + 1: the 1 is bound too
        miss = run(conn, BUMP, {"thing": "nobody", "base": 0})
        n = conn.execute(select(things.c.n).where(things.c.id == "a")).scalar_one()
        return hit, miss, n

    assert transactions(kind, tmp_path, write) == [(1, 0, 42)]


@KINDS
def test_a_driver_error_arrives_as_sqlalchemys_exception(kind: str, tmp_path: Path) -> None:
    def twice(conn: Connection) -> None:
        run(conn, INSERT, {"id": "a", "n": 1, "at": WHEN})
        run(conn, INSERT, {"id": "a", "n": 2, "at": WHEN})

    refused, left = transactions(kind, tmp_path, twice, rows)
    assert isinstance(refused, IntegrityError)
    assert left == []  # the transaction rolled back whole


@KINDS
def test_a_savepoint_undoes_only_its_own_writes(kind: str, tmp_path: Path) -> None:
    def write(conn: Connection) -> None:
        run(conn, INSERT, {"id": "kept", "n": 1, "at": WHEN})
        with pytest.raises(IntegrityError):
            inner(conn)
        with savepoint(conn, "attempt"):
            run(conn, INSERT, {"id": "after", "n": 1, "at": WHEN})

    def inner(conn: Connection) -> None:
        with savepoint(conn, "attempt"):
            run(conn, INSERT, {"id": "undone", "n": 1, "at": WHEN})
            run(conn, INSERT, {"id": "kept", "n": 1, "at": WHEN})  # the conflict

    outcome, stored = transactions(kind, tmp_path, write, rows)
    assert outcome is None
    assert [r[0] for r in stored] == ["after", "kept"]


# A read as the searches run one: the table's typed columns, a label, an aggregate, a bound
# parameter in the WHERE clause and a literal bound by the statement itself (the 1).
PICK = (
    select(things, (things.c.n + 1).label("next"), func.count().over().label("total"))
    .where(things.c.at <= bindparam("until"), things.c.n >= bindparam("least"))
    .order_by(things.c.id)
)


@KINDS
def test_select_rows_gives_what_core_gives(kind: str, tmp_path: Path) -> None:
    def read(conn: Connection) -> tuple[list[Any], list[Any]]:
        conn.execute(INSERT, {"id": "a", "n": 1, "at": WHEN, "doc": {"k": [1, "x"]}})
        conn.execute(INSERT, {"id": "b", "n": 2, "at": WHEN, "doc": None, "note": "é"})
        conn.execute(INSERT, {"id": "c", "n": 0, "at": WHEN, "doc": None})
        params = {"until": WHEN, "least": 1}
        return select_rows(conn, PICK, params), conn.execute(PICK, params).all()

    ((direct_rows, core_rows),) = transactions(kind, tmp_path, read)
    assert [tuple(r) for r in direct_rows] == [tuple(r) for r in core_rows]
    first = direct_rows[0]
    assert (first.id, first.at, first.doc, first.next, first.total) == (
        "a",
        WHEN,
        {"k": [1, "x"]},
        2,
        2,
    )
    assert first[:2] == ("a", 1)
    assert [type(v) for v in first] == [type(v) for v in core_rows[0]]
