"""Which tables a transaction wrote, for work that runs last inside it.

The wake's change stamp is bumped at the end of a mutation's own transaction
(``engine.at_every_write``). Knowing the tables the transaction wrote lets that bump say which
sections of the wake the change can touch, so that a wake built before it keeps the rest
(services/wake_sections.py). Only a transaction that is ``tracked`` records anything; every other
statement costs one dictionary lookup. A write whose table cannot be told (textual SQL) records
``UNKNOWN``, which its readers take to mean "any table".
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Connection, Engine, event
from sqlalchemy.sql.dml import UpdateBase
from sqlalchemy.sql.elements import TextClause

UNKNOWN = "*"
_KEY = "hearth.tables_written"
_DML_WORDS = ("insert", "update", "delete", "replace", "upsert", "merge", "with")


@contextmanager
def tracked(conn: Connection) -> Iterator[None]:
    """Record the tables written on ``conn`` until the block ends."""
    conn.info[_KEY] = set()
    try:
        yield
    finally:
        conn.info.pop(_KEY, None)


def tables(conn: Connection) -> frozenset[str] | None:
    """The tables written so far in the tracked block, or None outside one."""
    written: set[str] | None = conn.info.get(_KEY)
    return None if written is None else frozenset(written)


def note(conn: Connection, statement: Any) -> None:
    """Record ``statement``'s table if it writes one (a no-op outside a tracked block)."""
    written: set[str] | None = conn.info.get(_KEY)
    if written is None:
        return
    if isinstance(statement, UpdateBase):
        table = getattr(statement, "table", None)
        written.add(getattr(table, "name", None) or UNKNOWN)
    elif isinstance(statement, TextClause) and statement.text.lstrip()[:7].lower().startswith(
        _DML_WORDS
    ):
        written.add(UNKNOWN)


def listen(engine: Engine) -> None:
    """Note the writes of every statement executed through SQLAlchemy on ``engine``
    (``db.direct.run`` notes its own: it bypasses SQLAlchemy's events)."""

    @event.listens_for(engine, "before_execute")
    def _before(conn: Connection, statement: Any, *_: Any) -> None:
        note(conn, statement)

    @event.listens_for(engine, "before_cursor_execute")
    def _driver_sql(
        conn: Connection, _cursor: Any, sql: str, _params: Any, context: Any, _many: bool
    ) -> None:
        # ``exec_driver_sql`` reaches only this event (no compiled statement); Core statements
        # reach both and were noted above. A plain SAVEPOINT or BEGIN is not a write.
        written: set[str] | None = conn.info.get(_KEY)
        if written is None or getattr(context, "compiled", None) is not None:
            return
        if sql.lstrip()[:7].lower().startswith(_DML_WORDS):
            written.add(UNKNOWN)


__all__ = ["UNKNOWN", "listen", "note", "tables", "tracked"]
