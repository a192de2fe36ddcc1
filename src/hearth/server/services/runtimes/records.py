"""A runtime's record: finding it (in a project, or by id), and the views answered for it. Views
never carry a secret: no control token (nor its hash), no key material."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, bindparam, func, select

from hearth.proofs import b64_encode
from hearth.proofs.runtime_keys import material_public_key

from ...db.engine import utcnow
from ...db.rows import RuntimeRow
from ...db.tables import runtimes, thoughts
from ...errors import not_found
from ...json_types import JsonObject
from .. import cursors, identities
from ..times import iso

__all__ = [
    "canonical_uuid",
    "find",
    "listing",
    "lookup",
    "read",
    "row_by_id",
    "runtime_public_key",
    "view",
    "view_one",
]


_FIND = select(runtimes).where(
    runtimes.c.id == bindparam("id"), runtimes.c.project_id == bindparam("project")
)
_BY_ID = select(runtimes).where(runtimes.c.id == bindparam("id"))


def canonical_uuid(value: str) -> str | None:
    """The canonical spelling of a UUID, or None for text that is not one (an id from a URL)."""
    try:
        return str(uuid.UUID(value))
    except ValueError:
        return None


def lookup(conn: Connection, runtime_id: str) -> RuntimeRow | None:
    """The runtime with this id in any project, or None: for the loops and the moves, which hold
    an id the service gave them."""
    row = conn.execute(_BY_ID, {"id": runtime_id}).first()
    return None if row is None else RuntimeRow.of(row._mapping)


def row_by_id(conn: Connection, runtime_id: str) -> RuntimeRow:
    """The runtime with this id, which exists (the caller has just read or written it)."""
    return RuntimeRow.of(conn.execute(_BY_ID, {"id": runtime_id}).one()._mapping)


def find(conn: Connection, project_id: str, runtime_id: str) -> RuntimeRow:
    """The runtime in this project (deleted or not), or 404: another project's runtime does not
    exist here."""
    canonical = canonical_uuid(runtime_id)
    if canonical is None:
        raise not_found("Runtime")
    row = conn.execute(_FIND, {"id": canonical, "project": project_id}).first()
    if row is None:
        raise not_found("Runtime")
    return RuntimeRow.of(row._mapping)


def runtime_public_key(runtime: RuntimeRow) -> str | None:
    material = runtime.key_material
    if material is None:
        return None
    return b64_encode(material_public_key(bytes(material)))


def view(
    runtime: RuntimeRow, thought_count_24h: int = 0, latest_thought: datetime | None = None
) -> JsonObject:
    """The public record: no control token (nor its hash), no key material. The last thought is
    the later of the column the loop keeps and the newest stored thought, as in the wake."""
    last_thought = max(
        (t for t in (runtime.last_thought_at, latest_thought) if t is not None), default=None
    )
    llm = runtime.llm
    bridge = runtime.bridge
    return {
        "id": runtime.id,
        "name": runtime.name,
        "mode": runtime.mode,
        "identity_id": runtime.identity_id,
        "llm": (
            {
                "provider": llm["provider"],
                "model": llm["model"],
                "vault_key": llm.get("vault_key"),
            }
            if llm
            else None
        ),
        "bridge": (
            {
                "pubkey": bridge["pubkey"],
                "key_id": bridge["key_id"],
                "advertised_url": bridge.get("advertised_url"),
            }
            if bridge
            else None
        ),
        "region": runtime.region,
        "metadata": runtime.metadata,
        "status": runtime.status,
        "last_error": runtime.last_error,
        "runtime_public_key": runtime_public_key(runtime),
        "has_control_token": runtime.control_token_hash is not None,
        "bridge_connected": bool(runtime.bridge_connected),
        "last_seen_at": iso(runtime.last_seen_at),
        "last_thought_at": iso(last_thought),
        "thought_count_24h": thought_count_24h,
        "status_changed_at": iso(runtime.status_changed_at),
        "created_at": iso(runtime.created_at),
        "updated_at": iso(runtime.updated_at),
        "deleted": runtime.deleted_at is not None,
        "deleted_at": iso(runtime.deleted_at),
    }


def _thought_stats(
    conn: Connection, runtime_ids: list[str]
) -> dict[str, tuple[int, datetime | None]]:
    """runtime id -> (thoughts of the last 24 hours, the newest one's time)."""
    if not runtime_ids:
        return {}
    since = utcnow() - timedelta(hours=24)
    rows = conn.execute(
        select(thoughts.c.runtime_id, func.count(), func.max(thoughts.c.created_at))
        .where(thoughts.c.runtime_id.in_(runtime_ids), thoughts.c.created_at >= since)
        .group_by(thoughts.c.runtime_id)
    )
    return {row[0]: (int(row[1]), row[2]) for row in rows}


def view_one(conn: Connection, runtime: RuntimeRow) -> JsonObject:
    return view(runtime, *_thought_stats(conn, [runtime.id]).get(runtime.id, (0, None)))


def read(conn: Connection, project_id: str, runtime_id: str) -> JsonObject:
    return view_one(conn, find(conn, project_id, runtime_id))


def listing(
    conn: Connection,
    project_id: str,
    *,
    status: str | None = None,
    mode: str | None = None,
    identity_ref: str | None = None,
    include_deleted: bool = False,
    cursor: str | None = None,
    limit: int = 50,
) -> cursors.Page:
    """The project's runtimes, newest first; deleted ones only when asked for."""
    conditions: list[Any] = [runtimes.c.project_id == project_id]
    if status is not None:
        conditions.append(runtimes.c.status == status)
    if mode is not None:
        conditions.append(runtimes.c.mode == mode)
    if identity_ref is not None:
        identity = identities.find(conn, project_id, identity_ref)
        conditions.append(runtimes.c.identity_id == identity.id)
    if not include_deleted:
        conditions.append(runtimes.c.deleted_at.is_(None))
    items, next_cursor = cursors.newest_first(
        conn, runtimes, conditions, cursor, limit, build=RuntimeRow.of
    )
    stats = _thought_stats(conn, [r.id for r in items])
    return cursors.Page([view(r, *stats.get(r.id, (0, None))) for r in items], next_cursor)
