"""The wake's counts, read from the counters the database keeps (db/counters.py).

Each read is a range of ``wake_counts``' primary key: the project's own counts (scope ''), the
counts of the identities in the wake's scope, and, for a wake without a focus, the memory counts
of every identity of the project. None of them reads the counted rows, so their cost follows the
number of identities asked about, never the number of memories, runtimes or blocks stored.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import Connection, bindparam, func, select

from ..db import counters
from ..db.tables import wake_counts
from ..memory_tiers import TIERS

PROJECT = ""  # the scope of the project's own counts and of its project-level memories

MEMORY_KINDS = tuple(f"{counters.MEMORIES.kind}:{tier}" for tier in TIERS)

_SCOPED = select(wake_counts.c.scope, wake_counts.c.kind, wake_counts.c.total).where(
    wake_counts.c.project_id == bindparam("project"),
    wake_counts.c.scope.in_(bindparam("scopes", expanding=True)),
)
_MEMORY_TOTALS = (
    select(wake_counts.c.kind, func.sum(wake_counts.c.total).label("total"))
    .where(
        wake_counts.c.project_id == bindparam("project"),
        wake_counts.c.kind.in_(MEMORY_KINDS),
    )
    .group_by(wake_counts.c.kind)
)


class Counts:
    """The counters of one project for a set of scopes, as read in one statement."""

    def __init__(self, rows: Iterable[tuple[str, str, int]]) -> None:
        self._totals = {(scope, kind): int(total) for scope, kind, total in rows}

    def of(self, kind: str, scopes: Iterable[str] = (PROJECT,)) -> int:
        return sum(self._totals.get((scope, kind), 0) for scope in scopes)

    def tiers(self, scopes: Iterable[str]) -> dict[str, int]:
        wanted = list(scopes)
        return {tier: self.of(kind, wanted) for tier, kind in zip(TIERS, MEMORY_KINDS, strict=True)}


def read(conn: Connection, project_id: str, scopes: Iterable[str]) -> Counts:
    """The counters of ``scopes`` (identity ids, or ``PROJECT``) of the project."""
    wanted = sorted(set(scopes))
    if not wanted:
        return Counts(())
    rows = conn.execute(_SCOPED, {"project": project_id, "scopes": wanted})
    return Counts((r.scope, r.kind, r.total) for r in rows)


def memory_totals(conn: Connection, project_id: str) -> dict[str, int]:
    """Memories per tier in the whole project: a row per identity and tier is summed."""
    found = {r.kind: int(r.total) for r in conn.execute(_MEMORY_TOTALS, {"project": project_id})}
    return {tier: found.get(kind, 0) for tier, kind in zip(TIERS, MEMORY_KINDS, strict=True)}


__all__ = ["MEMORY_KINDS", "PROJECT", "Counts", "memory_totals", "read"]
