"""Each project's change stamp: the wake cache's proof that nothing changed (docs/wake.md).

Every change the event bus carries bumps its project's stamp in the database before the
mutation's response leaves: in the write's own transaction when the request's project is known
beforehand (``db.engine.at_every_write``, registered by server/changes.py), otherwise after the
write committed (``EventBus.publish`` awaits ``stamper``).
Every wake request reads the stamp first, with one primary-key lookup, and serves a cached wake
only if it was built under that same stamp. Read before the build, a stamp is never newer than
what the build sees; so an answer cached before a change carries an older stamp than any read
made after the change's response, in whichever process the read lands. Redis invalidation is
only a fast path on top of this; correctness does not depend on it.

Beside the project's stamp, each section of the wake (services/wake_sections.py) holds the stamp
of the last change that wrote a table it reads. A bump inside a mutation's transaction knows
those tables (db/writes.py); any other bump touches every section. A wake built under stamp S
keeps the sections whose stamp is not after S (services/wake_cache.py).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import structlog
from sqlalchemy import Connection, bindparam, select
from sqlalchemy.dialects import postgresql, sqlite

from ..db import writes
from ..db.engine import Database
from ..db.tables import change_stamps
from .wake_sections import ALL, SECTIONS, touched

log = structlog.get_logger("hearth.wake_stamps")

# Each section's column: a section without one fails here, at import.
_COLUMNS = {section: change_stamps.c[f"{section}_stamp"] for section in SECTIONS}
_PROJECT = change_stamps.c.project_id == bindparam("project")
_CURRENT = select(change_stamps.c.stamp).where(_PROJECT)
_READ = select(change_stamps.c.stamp, *_COLUMNS.values()).where(_PROJECT)


@dataclass(frozen=True)
class Stamps:
    """The project's stamp, and per section the stamp of the last change that touched it."""

    stamp: int
    sections: dict[str, int]

    def changed_since(self, stamp: int) -> frozenset[str]:
        """The sections some change after ``stamp`` touched."""
        return frozenset(name for name, last in self.sections.items() if last > stamp)


def current(conn: Connection, project_id: str) -> int:
    """The project's stamp (0 before its first change)."""
    value = conn.execute(_CURRENT, {"project": project_id}).scalar()
    return int(value) if value is not None else 0


def read(conn: Connection, project_id: str) -> Stamps:
    """The project's stamp and its sections' (all 0 before its first change)."""
    row = conn.execute(_READ, {"project": project_id}).first()
    if row is None:
        return Stamps(0, dict.fromkeys(SECTIONS, 0))
    return Stamps(int(row[0]), {s: int(v) for s, v in zip(SECTIONS, row[1:], strict=True)})


def bump(conn: Connection, project_id: str, sections: frozenset[str] = ALL) -> None:
    """One increment, in the database: concurrent bumps from any process never lose one. The
    ``sections`` the change touched take the new stamp as their last change."""
    conn.execute(_bump(conn.dialect.name == "postgresql", sections), {"project": project_id})


def bump_written(conn: Connection, project_id: str) -> None:
    """``bump``, touching the sections that read the tables this transaction wrote: run last
    inside a mutation's transaction (``db.engine.at_every_write``; db/writes.py tracks it)."""
    bump(conn, project_id, touched(writes.tables(conn)))


@functools.cache
def _bump(postgres: bool, sections: frozenset[str]) -> Any:
    """The upsert for one dialect and set of sections, built once: every mutation runs one,
    inside its own transaction, and building it cost more than running it (bench/arrival.py).
    In an UPDATE every right-hand side reads the row as it was, so each touched section gets
    the same new stamp as the project."""
    insert = postgresql.insert if postgres else sqlite.insert
    first = {column.name: 1 if name in sections else 0 for name, column in _COLUMNS.items()}
    statement = insert(change_stamps).values(project_id=bindparam("project"), stamp=1, **first)
    moved = change_stamps.c.stamp + 1
    return statement.on_conflict_do_update(
        index_elements=[change_stamps.c.project_id],
        set_={"stamp": moved, **{_COLUMNS[name].name: moved for name in sorted(sections)}},
    )


def stamper(
    db: Database, *, on_failure: Callable[[str], None] | None = None
) -> Callable[[str], Awaitable[None]]:
    """The event bus's hook: bump the project's stamp, never raising (the mutation it follows
    has committed, and its answer is owed). ``on_failure(project_id)`` runs when the bump
    fails: the serving process forgets what its wake cache holds of the project."""

    async def stamp(project_id: str) -> None:
        try:
            await db.transaction(bump, project_id)
        except Exception as exc:
            # Other processes may then answer a wake cached before this change until its TTL
            # (5 s) ends; this process forgets its own (``on_failure``).
            log.warning("change_stamp_failed", error=type(exc).__name__)
            if on_failure is not None:
                on_failure(project_id)

    return stamp


__all__ = ["Stamps", "bump", "bump_written", "current", "read", "stamper"]
