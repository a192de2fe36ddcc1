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
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import structlog
from sqlalchemy import Connection, bindparam, select
from sqlalchemy.dialects import postgresql, sqlite

from ..db.engine import Database
from ..db.tables import change_stamps

log = structlog.get_logger("hearth.wake_stamps")

_CURRENT = select(change_stamps.c.stamp).where(change_stamps.c.project_id == bindparam("project"))


def current(conn: Connection, project_id: str) -> int:
    """The project's stamp (0 before its first change)."""
    value = conn.execute(_CURRENT, {"project": project_id}).scalar()
    return int(value) if value is not None else 0


def bump(conn: Connection, project_id: str) -> None:
    """One increment, in the database: concurrent bumps from any process never lose one."""
    conn.execute(_BUMP[conn.dialect.name == "postgresql"], {"project": project_id})


def _upsert(insert: Any) -> Any:
    statement = insert(change_stamps).values(project_id=bindparam("project"), stamp=1)
    return statement.on_conflict_do_update(
        index_elements=[change_stamps.c.project_id],
        set_={"stamp": change_stamps.c.stamp + 1},
    )


# Built once per dialect (keyed by "is PostgreSQL"): every mutation runs one, inside its own
# transaction, and building the upsert cost more than running it (bench/arrival.py).
_BUMP = {False: _upsert(sqlite.insert), True: _upsert(postgresql.insert)}


def stamper(db: Database) -> Callable[[str], Awaitable[None]]:
    """The event bus's hook: bump the project's stamp, never raising (the mutation it follows
    has committed, and its answer is owed)."""

    async def stamp(project_id: str) -> None:
        try:
            await db.transaction(bump, project_id)
        except Exception as exc:
            # Other processes may then answer a wake cached before this change until its TTL
            # (5 s) ends; this process drops its own entries through the bus's listener.
            log.warning("change_stamp_failed", error=type(exc).__name__)

    return stamp


__all__ = ["bump", "current", "stamper"]
