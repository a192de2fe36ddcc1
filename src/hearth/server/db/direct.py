"""Statements on the hot write paths, run on SQLite's driver cursor directly.

SQLAlchemy Core spends about 15 µs of Python per executed statement (execution context, event
dispatch, result set-up) against 4 µs for the sqlite3 cursor itself, and an arrival is a dozen
statements in the writer thread, whose time every write waits for. ``run`` compiles a Core
statement once per parameter set and dialect, applies the column types' own bind processors
(the same conversions Core would make), and executes it on the driver cursor; a driver error
reaches the caller wrapped as SQLAlchemy would wrap it (``IntegrityError`` and so on). Only
SQLite takes this path; PostgreSQL's driver is reached through the async adapter, and there
``run`` is ``conn.execute``. The price: on SQLite these statements bypass SQLAlchemy's cursor
events and ``echo`` logging, so keep ``run`` to the hot paths' plain writes.

``select_rows`` is the same for a hot read (a search's ranked page): a large SELECT spent about
0.15 ms per execution in Core before SQLite saw it (its cache key is built by walking the
whole statement at every call), a twentieth of the search. Its rows come back with the
columns' own result processors applied (times, JSON, booleans, as Core gives them), as tuples
readable by column name and by position.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Connection, literal_column
from sqlalchemy.exc import DBAPIError
from sqlalchemy.sql.expression import Executable

from . import writes

_Missing = object()
# Per position: the parameter's name, the type's bind processor, the value of a literal bound
# by the statement itself (``bindparam("sequence") + 1`` binds the 1) or _Missing, and what the
# processor makes of None (computed once: a JSON column's None is ``json.dumps`` each time, and
# an import's rows are mostly empty columns).
_Step = tuple[str, Callable[[Any], Any] | None, Any, Any]
_Plan = tuple[str, tuple[_Step, ...]]
# Keyed by the statement object itself: the hot paths' statements are module constants.
_plans: dict[tuple[Executable, tuple[str, ...]], _Plan] = {}


def _plan(conn: Connection, statement: Any, keys: tuple[str, ...]) -> _Plan:
    dialect = conn.dialect
    compiled = statement.compile(dialect=dialect, column_keys=list(keys))
    literals = compiled.construct_params(dict.fromkeys(keys))
    order = []
    for name in compiled.positiontup or ():
        process = compiled.binds[name].type.dialect_impl(dialect).bind_processor(dialect)
        fixed = _Missing if name in keys else literals[name]
        if fixed is not _Missing and process is not None:
            fixed, process = process(fixed), None
        order.append((name, process, fixed, None if process is None else process(None)))
    return compiled.string, tuple(order)


def run(conn: Connection, statement: Executable, params: Mapping[str, Any]) -> int:
    """Execute an INSERT, UPDATE or DELETE; returns the number of rows it touched."""
    if conn.dialect.name != "sqlite":
        return int(conn.execute(statement, params).rowcount)
    sql, order = _prepared(conn, statement, tuple(params))
    values = _values(order, params)
    return int(_driver(conn, sql, values, lambda driver: driver.execute(sql, values)).rowcount)


def select_rows(conn: Connection, statement: Any, params: Mapping[str, Any]) -> list[Any]:
    """Execute a SELECT (a long-lived statement object, as ``run``'s, selecting each column
    once: Core renders a repeated column once): its rows as Core would give them, read by
    column key (``row.id``) or position (``row[:3]``)."""
    if conn.dialect.name != "sqlite":
        return list(conn.execute(statement, params).all())
    sql, order = _prepared(conn, statement, tuple(params))
    values = _values(order, params)
    make, processors = _shape(conn, statement)
    found = _driver(conn, sql, values, lambda driver: driver.execute(sql, values).fetchall())
    return [
        make(
            *[
                value if process is None else process(value)
                for process, value in zip(processors, raw, strict=True)
            ]
        )
        for raw in found
    ]


# Per SELECT: the row type (its fields the selected columns' keys) and each column's result
# processor, or None where the driver's value is already Core's.
_shapes: dict[Any, tuple[Callable[..., Any], tuple[Callable[[Any], Any] | None, ...]]] = {}


def _shape(
    conn: Connection, statement: Any
) -> tuple[Callable[..., Any], tuple[Callable[[Any], Any] | None, ...]]:
    shape = _shapes.get(statement)
    if shape is None:
        dialect = conn.dialect
        columns = list(statement.selected_columns)
        processors = tuple(
            column.type.dialect_impl(dialect).result_processor(dialect, None) for column in columns
        )
        make = namedtuple("Row", [column.key for column in columns], rename=True)  # type: ignore[misc]
        shape = _shapes[statement] = (make, processors)
    return shape


def run_many(conn: Connection, statement: Executable, rows: Sequence[Mapping[str, Any]]) -> None:
    """``run`` for many parameter sets with the same keys, in one executemany (a bulk insert:
    an import's rows). Keep ``statement`` a long-lived object, as ``run``'s are: plans are
    cached by it."""
    if conn.dialect.name != "sqlite":
        conn.execute(_batched(statement), list(rows))
        return
    start = 0
    while start < len(rows):
        # One executemany per run of rows with the same keys (the same compiled statement).
        keys = tuple(rows[start])
        end = start + 1
        while end < len(rows) and tuple(rows[end]) == keys:
            end += 1
        sql, order = _prepared(conn, statement, keys)
        values = [_values(order, params) for params in rows[start:end]]
        _driver(conn, sql, values, lambda driver: driver.executemany(sql, values))  # noqa: B023 - called at once
        start = end


# PostgreSQL: an INSERT with a RETURNING, made once per statement. asyncpg's executemany runs
# the statement once per row (pipelined), so the server parses, plans and fires its statement
# triggers once per row; with a RETURNING, Core sends the rows as multi-row VALUES statements
# (its "insertmanyvalues", which it uses without RETURNING on psycopg2 but not on asyncpg): a
# statement per batch of rows, whose wake counters are counted once (migration 0017).
_returning: dict[Executable, Executable] = {}


def _batched(statement: Any) -> Executable:
    batched = _returning.get(statement)
    if batched is None:
        batched = _returning[statement] = statement.returning(literal_column("1"))
    return batched


def _prepared(conn: Connection, statement: Executable, keys: tuple[str, ...]) -> _Plan:
    writes.note(conn, statement)  # SQLAlchemy's events, which note the others, are bypassed
    plan = _plans.get((statement, keys))
    if plan is None:
        plan = _plans[(statement, keys)] = _plan(conn, statement, keys)
    return plan


def _values(order: tuple[_Step, ...], params: Mapping[str, Any]) -> list[Any]:
    values = []
    for name, process, fixed, none in order:
        if fixed is not _Missing:
            values.append(fixed)
            continue
        value = params[name]
        values.append(value if process is None else none if value is None else process(value))
    return values


def _driver(conn: Connection, sql: str, values: Any, call: Callable[[Any], Any]) -> Any:
    """``call(the sqlite3 connection)``, its driver errors wrapped as SQLAlchemy wraps them."""
    driver = conn.connection.dbapi_connection
    assert driver is not None
    try:
        return call(driver)
    except conn.dialect.loaded_dbapi.Error as exc:
        raise DBAPIError.instance(
            sql, values, exc, conn.dialect.loaded_dbapi.Error, dialect=conn.dialect
        ) from exc


@contextmanager
def savepoint(conn: Connection, name: str) -> Iterator[None]:
    """A plain-SQL savepoint: released on success, rolled back to (and released) on error."""
    execute = _plain(conn)
    execute(f"SAVEPOINT {name}")
    try:
        yield
    except BaseException:
        execute(f"ROLLBACK TO SAVEPOINT {name}")
        execute(f"RELEASE SAVEPOINT {name}")
        raise
    execute(f"RELEASE SAVEPOINT {name}")


def _plain(conn: Connection) -> Callable[[str], Any]:
    if conn.dialect.name == "sqlite":
        driver = conn.connection.dbapi_connection
        assert driver is not None
        execute: Callable[[str], Any] = driver.execute
        return execute
    return conn.exec_driver_sql


__all__ = ["run", "run_many", "savepoint", "select_rows"]
