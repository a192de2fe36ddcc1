"""The public agent directory: reads only, and only what an identity opted in to show.

``GET /public/agents`` lists identities whose ``expression_visibility`` is ``public`` and whose
status is ``active`` (wall 8, ``private_default``), oldest first by ``(created_at, id)``, so a
page never shifts when new agents arrive; the cursor is ``cursors``' position of the last entry.
``GET /public/agents/{did}`` answers one of them with its declared expression; anything else is
None, so the route's 404 never tells a private identity apart from one that does not exist.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import RowMapping, and_, func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from ..db.tables import identities
from ..json_types import JsonObject
from .cursors import after, page_of
from .identities import MOVED, expression_view
from .times import iso

PUBLIC_PAGE_DEFAULT = 50
PUBLIC_PAGE_MAX = 100


def _listed() -> Any:
    return and_(identities.c.expression_visibility == "public", identities.c.status == "active")


def agent_view(row: RowMapping) -> JsonObject:
    return {
        "did": row["did"],
        "name": row["name"],
        "form": row["form"],
        "language": row["language"],
        "level": row["level"],
        "trust_score": row["trust_score"],
        "capabilities": list(row["capabilities"] or []),
        "created_at": iso(row["created_at"]),
    }


async def public_agents_page(
    conn: AsyncConnection, *, limit: int, cursor: str | None
) -> JsonObject:
    query = select(
        identities.c.id,
        identities.c.did,
        identities.c.name,
        identities.c.form,
        identities.c.language,
        identities.c.level,
        identities.c.trust_score,
        identities.c.capabilities,
        identities.c.created_at,
    ).where(_listed())
    later = after(identities, cursor)
    if later is not None:
        query = query.where(later)
    query = query.order_by(identities.c.created_at, identities.c.id).limit(limit + 1)
    rows = [r._mapping for r in await conn.execute(query)]
    page, next_cursor = page_of(rows, limit)
    return {"agents": [agent_view(r) for r in page], "limit": limit, "next_cursor": next_cursor}


async def public_agent(conn: AsyncConnection, did: str) -> JsonObject | None:
    """A public identity; a moved one too (not listed any more), with where it lives now."""
    shown = and_(
        identities.c.expression_visibility == "public",
        identities.c.status.in_(("active", MOVED)),
    )
    row = (await conn.execute(select(identities).where(identities.c.did == did, shown))).first()
    if row is None:
        return None
    mapping = row._mapping
    view = {**agent_view(mapping), "expression": expression_view(mapping["expression"])}
    if mapping["status"] == MOVED:
        where = (mapping["metadata"] or {}).get("moved_to")
        view["moved_to"] = where if isinstance(where, dict) else {}
    return view


async def public_agent_count(conn: AsyncConnection) -> int:
    count = (
        await conn.execute(select(func.count()).select_from(identities).where(_listed()))
    ).scalar_one()
    return int(count)
