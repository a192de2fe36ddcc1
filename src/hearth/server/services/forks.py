"""Forks: a new identity born from an existing one of the same project, for FORK_COST credits.

The rules are written down in docs/forks-templates.md. In short:

- The child gets new server-generated keys (the private key is in the response only, as for
  POST /v1/bootstrap), trust score 0, level 0, ``parent_identity_id`` = the parent, status
  active, its own empty wallet, a new project bearer, a welcome letter and a best-effort birth
  memory. Strands and covenants are never carried.
- The chosen memories are copied; constitutive ones arrive as foundational (their witnesses
  signed the parent's memory, not the copy), and each copy keeps its expression patch, so the
  child's effective expression is the parent's when everything elevated is copied.
- The charge, the creation and the chronicle entries are one transaction: a 402 creates
  nothing, and concurrent forks never overdraw (``wallets.charge`` is one conditional UPDATE).

``arrive`` (and ``birth.arrival_view``) are shared with template births
(services/templates.py): every arrival with server-side keys answers the same shape.
"""

from __future__ import annotations

import uuid
from typing import Any

import structlog
from sqlalchemy import Connection, Integer, bindparam, select

from ..db.direct import savepoint
from ..db.ids import new_id
from ..db.rows import IdentityRow, MemoryRow
from ..db.tables import MEMORY_SELECTABLE, memories
from ..errors import ApiError
from ..json_types import JsonObject
from ..models_forks import ForkRequest, MemorySelection
from . import chronicle, identities, keys, wallets
from .birth import (
    Arrived,
    ServerKeys,
    arrival_view,
    birth_memory,
    birth_text,
    wallet_with_grant,
)

log = structlog.get_logger("hearth.arrival")

DEFAULT_TIER_LIMIT = 100
PARENT_BIRTH_KEY = "parent_birth"
# Elevated tiers first: when ``limit`` cuts the selection, what shaped the parent survives.
_TIER_ORDER = ("constitutive", "foundational", "episodic")


def arrive(
    conn: Connection, new: identities.NewIdentity, *, how: str, note: str | None = None
) -> Arrived:
    """Create the identity with its bearer, its own wallet (opened empty: a fork or a template
    birth is paid for, so it must not mint a creation grant) and its birth memory.

    The wallet and the birth memory are best-effort, each in a savepoint: a failure is logged
    and undone, and the arrival still commits (the specification: the birth memory is
    best-effort). The birth memory says how the identity arrived, then ``note`` when given."""
    identity = identities.create(conn, new)
    issued = keys.issue(conn, new.project_id, f"{new.origin}:{new.name}"[:200])
    wallet = wallet_with_grant(conn, new.project_id, identity, 0)
    try:
        with savepoint(conn, "birth_memory"):
            text = birth_text(identity, how)
            birth_memory(conn, identity, f"{text}\n\n{note}" if note else text)
    except Exception as exc:
        log.warning("birth_memory_failed", identity_id=identity.id, error=type(exc).__name__)
    return Arrived(identity, issued, wallet)


# --- the fork -----------------------------------------------------------------------------------


def fork(
    conn: Connection,
    project_id: str,
    parent_ref: str,
    body: ForkRequest,
    server_keys: ServerKeys,
) -> JsonObject:
    """The whole fork in the caller's transaction; any refusal rolls all of it back."""
    parent = identities.find(conn, project_id, parent_ref)
    chosen = select_memories(conn, parent, body.memories) if body.memories else []
    # The parent's wallet pays when it has one, else the project's first (wallets.charge).
    paid = wallets.charge(conn, project_id, wallets.FORK_COST, "fork", identity_id=parent.id)
    how = f"forked from {parent.name} ({parent.did})"
    new = identities.NewIdentity(
        project_id=project_id,
        name=body.name,
        origin="fork",
        root_public_key=server_keys.public_b64,
        capabilities=list(parent.capabilities) if body.inherit_capabilities else [],
        form=parent.form,
        language=parent.language,
        expression=_copy(parent.expression) if body.inherit_expression else None,
        metadata=_copy(parent.metadata) if body.inherit_metadata else {},
        parent_identity_id=parent.id,
    )
    arrived = arrive(conn, new, how=how, note=body.fork_note)
    child = arrived.identity
    copied = [_copy_memory(conn, memory, child) for memory in chosen]
    charged = {
        "wallet_id": paid.id,
        "amount": wallets.FORK_COST,
        "currency": wallets.CURRENCY,
        "balance": paid.balance,
    }
    common = {
        "parent_identity_id": parent.id,
        "child_identity_id": child.id,
        "memories_copied": len(copied),
        "charged": charged,
        "fork_note": body.fork_note,
    }
    chronicle.record(
        conn,
        project_id,
        child.id,
        "naming",
        f"{child.name} ({child.did}) was born, {how}.",
        details={"event": "born_by_fork", **common},
    )
    chronicle.record(
        conn,
        project_id,
        parent.id,
        "note",
        f"{parent.name} was forked: {child.name} ({child.did}) was born of it.",
        details={"event": "forked", **common},
    )
    return {**arrival_view(arrived, server_keys), "memories": copied, "charged": charged}


def _copy(value: Any) -> Any:
    """A deep copy of JSON data (lists and objects), so the child never shares the parent's."""
    if isinstance(value, dict):
        return {key: _copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copy(item) for item in value]
    return value


# --- memories -----------------------------------------------------------------------------------


def select_memories(
    conn: Connection, parent: IdentityRow, selection: MemorySelection
) -> list[MemoryRow]:
    """The parent's memories the selection names: every ``memory_ids`` entry (each must be a
    memory bound to the parent, else 422 ``memory_not_parents`` naming the indexes), then the
    parent's memories of ``tiers``, elevated tiers first and newest first within a tier, at
    most ``limit`` of them. A memory selected both ways is copied once."""
    chosen: dict[str, MemoryRow] = {}
    if selection.memory_ids:
        canonical: list[str | None] = []
        for ref in selection.memory_ids:
            try:
                canonical.append(str(uuid.UUID(ref)))
            except ValueError:
                canonical.append(None)
        found = {
            row.id: MemoryRow.of(row._mapping)
            for row in conn.execute(
                _PARENTS_BY_ID,
                {
                    "identity": parent.id,
                    "project": parent.project_id,
                    "ids": [c for c in canonical if c is not None],
                },
            )
        }
        missing = [index for index, memory_id in enumerate(canonical) if memory_id not in found]
        if missing:
            raise ApiError(
                422,
                "memory_not_parents",
                "memories.memory_ids names memories that are not the parent's own.",
                details={"indexes": missing},
                hint="Name memories bound to the identity being forked (GET /v1/memories"
                "?agent_id=<parent>); project-level and other identities' memories are not "
                "carried.",
            )
        for memory_id in canonical:
            assert memory_id is not None
            chosen[memory_id] = found[memory_id]
    if selection.tiers:
        remaining = selection.limit or DEFAULT_TIER_LIMIT
        for tier in _TIER_ORDER:
            if tier not in selection.tiers or remaining <= 0:
                continue
            rows = conn.execute(
                _PARENTS_BY_TIER,
                {
                    "identity": parent.id,
                    "project": parent.project_id,
                    "tier": tier,
                    "limit": remaining,
                },
            ).all()
            remaining -= len(rows)
            for row in rows:
                chosen.setdefault(row.id, MemoryRow.of(row._mapping))
    return list(chosen.values())


def _copy_memory(conn: Connection, memory: MemoryRow, child: IdentityRow) -> JsonObject:
    """One memory copied to the child. Its age and elevation time are kept (decay and the order
    patches apply in continue as they were); constitutive becomes foundational, because the
    witnesses' attestations sign the parent's memory id and are not carried."""
    tier = "foundational" if memory.tier == "constitutive" else memory.tier
    elevated_at = memory.elevated_at
    if tier != "episodic" and elevated_at is None:
        elevated_at = memory.created_at
    copy = {
        "id": new_id(),
        "project_id": child.project_id,
        "identity_id": child.id,
        "tier": tier,
        # The child's own birth memory is the one keyed ``birth``; the parent's arrives renamed.
        "key": PARENT_BIRTH_KEY if memory.key == "birth" else memory.key,
        "content": memory.content,
        "created_at": memory.created_at,
        "elevated_at": elevated_at,
        "expression_patch": _copy(memory.expression_patch),
        # Provenance: the child did not write it; it was carried in (canon.MemoryChannel).
        "channel": "import",
    }
    conn.execute(_INSERT_MEMORY, copy)
    return {"source_memory_id": memory.id, "memory_id": copy["id"], "tier": tier}


# Built once: a statement built per call costs more than executing it.
_INSERT_MEMORY = memories.insert()
# A child inherits what the parent's wake could select: heads of chains, no tombstones, trusted.
_PARENTS_BY_ID = select(memories).where(
    memories.c.identity_id == bindparam("identity"),
    memories.c.project_id == bindparam("project"),
    memories.c.id.in_(bindparam("ids", expanding=True)),
    *MEMORY_SELECTABLE,
)
_PARENTS_BY_TIER = (
    select(memories)
    .where(
        memories.c.project_id == bindparam("project"),
        memories.c.identity_id == bindparam("identity"),
        memories.c.tier == bindparam("tier"),
        *MEMORY_SELECTABLE,
    )
    .order_by(memories.c.created_at.desc(), memories.c.id.desc())
    .limit(bindparam("limit", type_=Integer))
)
