"""Identities: creation, lookup within a project, and their public views."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, bindparam, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from ..db import direct
from ..db.engine import request_mutates, utcnow
from ..db.ids import new_id
from ..db.rows import IdentityRow
from ..db.tables import identities
from ..errors import ApiError, not_found
from ..json_types import JsonObject
from .authority import RootGrant
from .times import iso

FORMS = (
    "agent",
    "assistant",
    "autonomous",
    "hybrid",
    "collective",
    "biological",
    "future",
    "unknown",
)


def did_for(identity_id: str) -> str:
    return f"did:svc:{identity_id}"


@dataclass
class NewIdentity:
    project_id: str
    name: str
    origin: str
    mode: str = "agent_root"
    root_public_key: str | None = None
    box_public_key: str | None = None
    kid: str = "primary"
    capabilities: list[str] = field(default_factory=list)
    form: str = "unknown"
    language: str | None = None
    expression_visibility: str = "private"  # the wall `private_default`
    runtime: JsonObject | None = None
    expression: JsonObject | None = None
    metadata: JsonObject = field(default_factory=dict)
    parent_identity_id: str | None = None


def create(conn: Connection, new: NewIdentity, *, identity_id: str | None = None) -> IdentityRow:
    """A new identity; ``identity_id`` is given only by an import (it keeps its id)."""
    identity_id = identity_id or new_id()
    now = utcnow()
    row = {
        "id": identity_id,
        "project_id": new.project_id,
        "did": did_for(identity_id),
        "name": new.name,
        "mode": new.mode,
        "root_public_key": new.root_public_key,
        "box_public_key": new.box_public_key,
        "kid": new.kid,
        "key_created_at": now if new.root_public_key else None,
        "capabilities": list(new.capabilities),
        "form": new.form,
        "language": new.language,
        "expression_visibility": new.expression_visibility,
        "runtime": new.runtime,
        "expression": new.expression,
        "metadata": dict(new.metadata),
        "status": "active",
        "level": 0,
        "trust_score": 0.0,
        "sponsor_did": None,
        "elevated_at": None,
        "parent_identity_id": new.parent_identity_id,
        "origin": new.origin,
        "next_sequence": 1,
        "authority_lease_until": 0,
        "created_at": now,
    }
    direct.run(conn, _INSERT, row)
    return IdentityRow.of(row)


_INSERT = identities.insert()  # built once: building costs more than executing


def set_expression(conn: Connection, grant: RootGrant, expression: JsonObject) -> None:
    """Replace the declared expression; the root proof's sequence is consumed with it."""
    grant.claim(conn)
    direct.run(conn, _SET_EXPRESSION, {"identity": grant.identity.id, "expression": expression})


_SET_EXPRESSION = (
    update(identities)
    .where(identities.c.id == bindparam("identity"))
    .values(expression=bindparam("expression"))
)


def _reference(ref: str) -> tuple[Any, str] | None:
    """An identity is named by UUID or by its provisional DID: (statement, value), or None."""
    if ref.startswith("did:svc:"):
        return _FIND_BY_DID, ref
    try:
        return _FIND_BY_ID, str(uuid.UUID(ref))
    except ValueError:
        return None


def find(conn: Connection, project_id: str, ref: str) -> IdentityRow:
    """The identity in this project, or 404: another project's identity does not exist here."""
    reference = _reference(ref)
    if reference is None:
        raise not_found("Identity")
    statement, value = reference
    row = conn.execute(statement, {"ref": value, "project": project_id}).first()
    if row is None:
        raise not_found("Identity")
    identity = IdentityRow.of(row._mapping)
    if identity.status == MOVED and request_mutates(conn):
        raise moved(identity)
    return identity


MOVED = "moved"


def moved_to(row: IdentityRow) -> JsonObject | None:
    """Where a moved identity lives now (its metadata's ``moved_to``), else None."""
    if row.status != MOVED:
        return None
    value = (row.metadata or {}).get("moved_to")
    return value if isinstance(value, dict) else None


def moved(row: IdentityRow) -> ApiError:
    """410: the identity moved to another service; nothing here changes any more (wall 6:
    nothing is deleted either, so every read still answers)."""
    where = moved_to(row) or {}
    return ApiError(
        410,
        "moved",
        f"{row.did} moved to {where.get('service', 'another service')}: it changes only there.",
        details={"moved_to": where},
        hint="Send this to the service in details.moved_to.",
    )


# Built once: a statement built per call costs more than executing it.
_FIND_BY_ID = select(identities).where(
    identities.c.id == bindparam("ref"), identities.c.project_id == bindparam("project")
)
_FIND_BY_DID = select(identities).where(
    identities.c.did == bindparam("ref"), identities.c.project_id == bindparam("project")
)


async def find_by_did(conn: AsyncConnection, did: str) -> IdentityRow | None:
    row = (await conn.execute(select(identities).where(identities.c.did == did))).first()
    return IdentityRow.of(row._mapping) if row else None


async def active_in_project(conn: AsyncConnection, project_id: str) -> list[IdentityRow]:
    rows = await conn.execute(
        select(identities)
        .where(identities.c.project_id == project_id, identities.c.status == "active")
        .order_by(identities.c.created_at, identities.c.id)
    )
    return [IdentityRow.of(r._mapping) for r in rows]


def sole_active(conn: Connection, project_id: str) -> IdentityRow | None:
    """The project's only active identity; None when it has none or several (the wake's
    "sole active" focus, for callers that have no identity of their own: the service's /mcp)."""
    rows = conn.execute(_ACTIVE_TWO, {"project": project_id}).all()
    return IdentityRow.of(rows[0]._mapping) if len(rows) == 1 else None


_ACTIVE_TWO = (
    select(identities)
    .where(identities.c.project_id == bindparam("project"), identities.c.status == "active")
    .limit(2)
)


def authority_view(row: IdentityRow) -> JsonObject:
    view: JsonObject = {
        "identity_id": row.id,
        "did": row.did,
        "mode": row.mode,
        "next_sequence": row.next_sequence,
    }
    if row.mode == "agent_root":
        view["root_public_key"] = row.root_public_key
        view["kid"] = row.kid
    return view


# The identity's own fields, as GET /v1/identities/{id}/profile shows them: what an export
# carries so that an import recreates the identity whole (docs/export.md).
PROFILE_FIELDS = (
    "name",
    "status",
    "form",
    "language",
    "capabilities",
    "level",
    "trust_score",
    "sponsor_did",
    "expression_visibility",
    "runtime",
    "metadata",
    "parent_identity_id",
    "origin",
    "kid",
)


def profile_view(row: IdentityRow) -> JsonObject:
    view: JsonObject = {"identity_id": row.id, "did": row.did}
    view.update({name: getattr(row, name) for name in PROFILE_FIELDS})
    view["capabilities"] = list(row.capabilities or [])
    view["metadata"] = dict(row.metadata or {})
    view["elevated_at"] = iso(row.elevated_at)
    view["key_created_at"] = iso(row.key_created_at)
    view["created_at"] = iso(row.created_at)
    return view


def candidate_view(row: IdentityRow) -> JsonObject:
    return {
        "did": row.did,
        "name": row.name,
        "identity_id": row.id,
        "kid": row.kid,
        "key_label": row.kid,
        "key_created_at": iso(row.key_created_at),
    }


def expression_view(declared: JsonObject | None) -> JsonObject:
    """The expression's public view, from the declared JSON (an identity's, a template's)."""
    expression = declared or {}
    return {
        "register": expression.get("register", ""),
        "walls": list(expression.get("walls", [])),
        "subagents": list(expression.get("subagents", [])),
        "wake_text": expression.get("wake_text", ""),
    }
