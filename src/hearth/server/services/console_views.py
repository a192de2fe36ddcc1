"""The console's own reads (docs/console.md): what no JSON route lists yet, each one indexed
query and paged where it can grow (the project's identities; the custody of their runtimes; an
identity's forks). Everything else a page shows comes from the services the JSON routes use."""

from __future__ import annotations

from collections import defaultdict

from sqlalchemy import Connection, bindparam, func, select

from ..db.rows import IdentityRow
from ..db.tables import identities, runtimes
from . import cursors


def identities_page(
    conn: Connection, project_id: str, cursor: str | None, limit: int
) -> tuple[list[IdentityRow], str | None]:
    """The project's identities, newest first (moved and archived ones too: the console shows
    their status)."""
    return cursors.newest_first_equal(
        conn, identities, {"project_id": project_id}, cursor, limit, build=IdentityRow.of
    )


def custody(
    conn: Connection, project_id: str, identity_ids: list[str]
) -> dict[str, dict[str, int]]:
    """Per identity, its live runtimes counted by custody tier: ``{identity: {mode: n}}``."""
    if not identity_ids:
        return {}
    found: dict[str, dict[str, int]] = defaultdict(dict)
    for row in conn.execute(_CUSTODY, {"project": project_id, "ids": identity_ids}):
        found[row.identity_id][row.mode] = int(row.n)
    return dict(found)


def forks_of(conn: Connection, project_id: str, identity_id: str, limit: int) -> list[IdentityRow]:
    """The identities forked from this one, newest first."""
    rows = conn.execute(_FORKS, {"project": project_id, "parent": identity_id, "limit": limit})
    return [IdentityRow.of(r._mapping) for r in rows]


# Built once: a statement built per call costs more than executing it.
_CUSTODY = (
    select(runtimes.c.identity_id, runtimes.c.mode, func.count().label("n"))
    .where(
        runtimes.c.project_id == bindparam("project"),
        runtimes.c.identity_id.in_(bindparam("ids", expanding=True)),
        runtimes.c.deleted_at.is_(None),
    )
    .group_by(runtimes.c.identity_id, runtimes.c.mode)
)
_FORKS = (
    select(identities)
    .where(
        identities.c.project_id == bindparam("project"),
        identities.c.parent_identity_id == bindparam("parent"),
    )
    .order_by(identities.c.created_at.desc(), identities.c.id.desc())
    .limit(bindparam("limit"))
)
