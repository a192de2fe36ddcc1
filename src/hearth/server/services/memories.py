"""Memories: store, list, read, delete, elevate; episodic decay; the effective expression.

The rules are written down in docs/service.md ("Memory and chronicle"). In short:

- Tiers: ``episodic`` (default), ``foundational``, ``constitutive``; which moves between them
  are allowed, and what each asks of a write, is the table in ``memory_tiers``. A memory is
  bound to an identity only when ``agent_id`` names an active identity of the caller's project;
  otherwise it is project-level.
- Foundational is self-attestable (the identity's root proof for ``agent_root`` identities);
  constitutive needs attestations by an external Ed25519 witness over the exact content
  (``memory-attestation/v1``), never by the identity itself (wall 3, ``no_self_witnessing``).
- Refusals under these rules are :class:`Refusal`: the route records each one in the chronicle
  (wall 5, ``refusals_recorded``) after the refused transaction has rolled back.
- Episodic memories decay: their weight halves every 30 days, and below 1/8 (older than 90
  days) the wake no longer selects them. Decay is computed when read; nothing is ever deleted
  by it, whether the identity is active or not (wall 6, ``no_inactive_reaping``).
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import (
    Connection,
    Select,
    and_,
    bindparam,
    delete,
    func,
    not_,
    or_,
    select,
    update,
)

from hearth.adds.ed25519 import encoding_problem
from hearth.proofs import (
    EncodingError,
    b64_decode,
    b64_encode,
    ed25519_from_did_key,
    memory_attestation_digest,
    verify_digest,
)

from ..canon import MemoryChannel
from ..db.engine import utcnow
from ..db.ids import new_id
from ..db.rows import ChronicleRow, IdentityRow, MemoryRow
from ..db.tables import MEMORY_SELECTABLE, identities, memories, memory_attestations
from ..errors import ApiError, not_found
from ..json_types import JsonObject
from ..memory_tiers import ELEVATED, TIERS, WAKE_ORDER, can_elevate, decays, stored, witnessed
from . import chronicle, cursors
from . import identities as identities_service
from .authority import RootGrant
from .identities import expression_view
from .times import iso

HALF_LIFE_DAYS = 30.0
WAKE_FLOOR = 0.125  # 1/8: three half-lives
WAKE_HORIZON = timedelta(days=HALF_LIFE_DAYS * 3)  # weight >= WAKE_FLOOR exactly within it


class Refusal(ApiError):
    """A refusal under the memory-tier rules: answered as any ApiError, and recorded in the
    chronicle as a ``refusal`` entry by the route that catches it."""


# --- decay --------------------------------------------------------------------------------------


def weight(memory: MemoryRow, now: datetime | None = None) -> float:
    """The memory's weight at ``now``: 1 for elevated tiers; for episodic memories
    ``0.5 ** (age_days / 30)``, so 1 when stored, 1/2 after 30 days, 1/8 after 90."""
    if not decays(memory.tier):
        return 1.0
    now = now or utcnow()
    age_days = max(0.0, (now - memory.created_at).total_seconds() / 86_400)
    return float(0.5 ** (age_days / HALF_LIFE_DAYS))


def in_wake(memory: MemoryRow, now: datetime) -> bool:
    """Whether the wake's selection still considers the memory (weight >= 1/8)."""
    return bool(not decays(memory.tier) or memory.created_at >= now - WAKE_HORIZON)


# --- lookups ------------------------------------------------------------------------------------


def binding(conn: Connection, project_id: str, agent_id: str | None) -> IdentityRow | None:
    """The identity a new memory is bound to: ``agent_id`` when it names an active identity of
    this project, else None (the memory is project-level, as the specification says)."""
    if agent_id is None:
        return None
    if agent_id.startswith("did:svc:"):
        statement, ref = _ACTIVE_BY_DID, agent_id
    else:
        try:
            statement, ref = _ACTIVE_BY_ID, str(uuid.UUID(agent_id))
        except ValueError:
            return None
    row = conn.execute(statement, {"ref": ref, "project": project_id}).first()
    if row is None:
        # Not active: a moved identity refuses the write (410) rather than the memory going to
        # the project unseen; any other is project-level, as before. Only on this rare path.
        _refuse_if_moved(conn, project_id, agent_id)
        return None
    return IdentityRow.of(row._mapping)


def _refuse_if_moved(conn: Connection, project_id: str, ref: str) -> None:
    try:
        identities_service.find(conn, project_id, ref)
    except ApiError as exc:
        if exc.status == 410:
            raise


# Built once: a statement built per call costs more than executing it.
_ACTIVE_BY_DID, _ACTIVE_BY_ID = (
    select(identities).where(
        column == bindparam("ref"),
        identities.c.project_id == bindparam("project"),
        identities.c.status == "active",
    )
    for column in (identities.c.did, identities.c.id)
)


def identity_of(conn: Connection, memory: MemoryRow) -> IdentityRow | None:
    if memory.identity_id is None:
        return None
    row = conn.execute(_IDENTITY_OF, {"id": memory.identity_id}).first()
    return IdentityRow.of(row._mapping) if row else None


def find(conn: Connection, project_id: str, memory_id: str) -> MemoryRow:
    """The memory in this project, or 404: another project's memory does not exist here, and
    a deleted one exists only as a tombstone in its chain's history."""
    memory = find_version(conn, project_id, memory_id)
    if memory.deleted_at is not None:
        raise not_found("Memory")
    return memory


def find_version(conn: Connection, project_id: str, memory_id: str) -> MemoryRow:
    """The memory in this project, a tombstone included, or 404."""
    try:
        memory_id = str(uuid.UUID(memory_id))
    except ValueError:
        raise not_found("Memory") from None
    row = conn.execute(_FIND, {"id": memory_id, "project": project_id}).first()
    if row is None:
        raise not_found("Memory")
    return MemoryRow.of(row._mapping)


# Built once: a statement built per call costs more than executing it.
_IDENTITY_OF = select(identities).where(identities.c.id == bindparam("id"))
_FIND = select(memories).where(
    memories.c.id == bindparam("id"), memories.c.project_id == bindparam("project")
)
_ATTESTATIONS_OF = (
    select(memory_attestations)
    .where(memory_attestations.c.memory_id.in_(bindparam("ids", expanding=True)))
    .order_by(memory_attestations.c.memory_id, memory_attestations.c.position)
)


def _attestations_of(conn: Connection, memory_ids: list[str]) -> dict[str, list[JsonObject]]:
    """Each memory's attestations, as the views a memory's answer shows."""
    found: dict[str, list[JsonObject]] = {memory_id: [] for memory_id in memory_ids}
    if not memory_ids:
        return found
    rows = conn.execute(_ATTESTATIONS_OF, {"ids": memory_ids})
    for row in rows:
        found[row.memory_id].append(
            {
                "attester_did": row.attester_did,
                "signing_key_id": row.signing_key_id,
                "public_key": row.public_key,
                "signature": row.signature,
                "created_at": iso(row.created_at),
            }
        )
    return found


def view(
    memory: MemoryRow, now: datetime, attestations: list[JsonObject] | None = None
) -> JsonObject:
    elevated_at = memory.elevated_at
    if elevated_at is None and not decays(memory.tier):
        elevated_at = memory.created_at
    return {
        "id": memory.id,
        "agent_id": memory.identity_id,
        "tier": memory.tier,
        "key": memory.key,
        "content": memory.content,
        "created_at": iso(memory.created_at),
        "elevated_at": iso(elevated_at),
        "expression_patch": memory.expression_patch,
        "weight": weight(memory, now),
        "in_wake": selectable(memory) and in_wake(memory, now),
        "attestations": attestations or [],
        "supersedes": memory.supersedes,
        "superseded_by": memory.superseded_by,
        "superseded_at": iso(memory.superseded_at),
        "deleted_at": iso(memory.deleted_at),
        "provenance": {
            "channel": memory.channel,
            "api_key_id": memory.api_key_id,
            "runtime_id": memory.runtime_id,
            "inbox_message_id": memory.inbox_message_id,
            "signed_by": memory.signed_by,
        },
        "untrusted": memory.untrusted,
        "confirmed_at": iso(memory.confirmed_at),
    }


def selectable(memory: MemoryRow) -> bool:
    """Whether the wake may select the memory at all: the head of its chain, not a tombstone,
    and trusted (its decay aside)."""
    return memory.superseded_at is None and memory.deleted_at is None and not memory.untrusted


def read(conn: Connection, project_id: str, memory_id: str) -> JsonObject:
    memory = find(conn, project_id, memory_id)
    # Only constitutive memories have attestations (elevation writes them for that tier alone,
    # and the listing reads them on the same rule): the others need no second statement.
    wanted = [memory.id] if witnessed(memory.tier) else []
    return view(memory, utcnow(), _attestations_of(conn, wanted).get(memory.id))


# --- store, list, delete ------------------------------------------------------------------------


_INSERT = memories.insert()


def storing_refused(tier: str) -> Refusal | None:
    """The refusal of POST /v1/memories for a tier it may not store (``memory_tiers``: only
    constitutive, whose witnesses sign the id of a memory already stored), or None."""
    if stored(tier):
        return None
    return Refusal(
        422,
        "attestations_required",
        "A memory becomes constitutive only by elevation, with attestations from an "
        "external witness over its exact content.",
        hint="Store it (episodic or foundational), then POST /v1/memories/{id}/elevate "
        "with tier constitutive and the witnesses' attestations.",
    )


@dataclass(frozen=True, slots=True)
class Provenance:
    """Who wrote a memory and how (docs/memory.md, "Provenance"): stamped on insert."""

    channel: MemoryChannel
    api_key_id: str | None = None
    runtime_id: str | None = None
    inbox_message_id: str | None = None
    untrusted: bool = False


def store(
    conn: Connection,
    project_id: str,
    identity: IdentityRow | None,
    *,
    content: str,
    tier: str,
    key: str | None,
    grant: RootGrant | None,
    provenance: Provenance,
    supersedes: MemoryRow | None = None,
) -> MemoryRow:
    """Store a new episodic or foundational memory (constitutive needs an attestation over the
    memory's id, so it is reached by elevation only). A foundational memory of an agent_root
    identity consumes the root proof's sequence with it.

    With ``supersedes`` the new memory is the next version of that one: the old one must be the
    head of its chain, in this project, bound to the same identity, and it is marked superseded
    by a conditional UPDATE in this same transaction, so of two concurrent supersedes of one
    head exactly one wins (the other is ``memory_not_head``, and stores nothing)."""
    if grant is not None:
        grant.claim(conn)
    now = utcnow()
    memory_id = new_id()
    identity_id = identity.id if identity else None
    if supersedes is not None:
        _supersede(
            conn, project_id, supersedes, identity_id=identity_id, new_memory_id=memory_id, now=now
        )
    row = {
        "id": memory_id,
        "project_id": project_id,
        "identity_id": identity_id,
        "tier": tier,
        "key": key,
        "content": content,
        "created_at": now,
        "elevated_at": None if decays(tier) else now,
        "expression_patch": None,
        "supersedes": supersedes.id if supersedes else None,
        "superseded_by": None,
        "superseded_at": None,
        "deleted_at": None,
        "channel": provenance.channel,
        "api_key_id": provenance.api_key_id,
        "runtime_id": provenance.runtime_id,
        "inbox_message_id": provenance.inbox_message_id,
        # The identity key that signed the write, where a root proof was checked and claimed.
        "signed_by": grant.identity.kid if grant and grant.sequence is not None else None,
        "untrusted": provenance.untrusted,
        "confirmed_at": None,
    }
    conn.execute(_INSERT, row)
    return MemoryRow.of(row)


def _supersede(
    conn: Connection,
    project_id: str,
    old: MemoryRow,
    *,
    identity_id: str | None,
    new_memory_id: str,
    now: datetime,
) -> None:
    if old.identity_id != identity_id:
        raise ApiError(
            409,
            "supersede_binding_mismatch",
            "A new version keeps its memory's binding: the memory it supersedes is bound to "
            f"{old.identity_id or 'the project'}, the new one to {identity_id or 'the project'}.",
            details={"pointer": "/supersedes", "bound_to": old.identity_id},
            hint="Send the same agent_id as the memory you supersede (none for project-level).",
        )
    if old.deleted_at is not None or old.superseded_at is not None:
        raise _not_head(old)
    moved = conn.execute(
        _MARK_SUPERSEDED,
        {"memory": old.id, "project": project_id, "by": new_memory_id, "now": now},
    )
    if moved.rowcount != 1:
        raise _not_head(old)


def _not_head(memory: MemoryRow) -> ApiError:
    return ApiError(
        409,
        "memory_not_head",
        f"The memory {memory.id} is not the head of its chain (it was superseded or deleted): "
        "only the newest version can be superseded, confirmed or elevated.",
        details={"pointer": "/supersedes", "memory_id": memory.id},
        hint="Walk GET /v1/memories/{id}/history and supersede its newest version.",
    )


# Built once. Only the head of a chain (not superseded, not a tombstone) moves: the condition is
# what makes one of two concurrent supersedes lose.
_MARK_SUPERSEDED = (
    update(memories)
    .where(
        memories.c.id == bindparam("memory"),
        memories.c.project_id == bindparam("project"),
        memories.c.superseded_at.is_(None),
        memories.c.deleted_at.is_(None),
    )
    .values(superseded_at=bindparam("now"), superseded_by=bindparam("by"))
)


def _walk(
    conn: Connection, project_id: str, start: MemoryRow, link: Callable[[MemoryRow], str | None]
) -> list[MemoryRow]:
    """The versions ``link`` leads to from ``start``, nearest first (at most HISTORY_LIMIT)."""
    found: list[MemoryRow] = []
    step: MemoryRow | None = start
    while step is not None and (next_id := link(step)) is not None:
        if len(found) >= HISTORY_LIMIT:
            break
        step = _by_id(conn, project_id, next_id)
        if step is not None:
            found.append(step)
    return found


def history(conn: Connection, project_id: str, memory_id: str) -> list[JsonObject]:
    """Every version of the memory's chain, oldest first, the memory itself among them; a
    deleted version is its tombstone (content erased), and a tombstone's id walks its chain
    too. Each step is a primary-key lookup: both links are stored on the rows."""
    memory = find_version(conn, project_id, memory_id)
    older = _walk(conn, project_id, memory, lambda m: m.supersedes)
    newer = _walk(conn, project_id, memory, lambda m: m.superseded_by)
    chain = [*reversed(older), memory, *newer]
    attestations = _attestations_of(conn, [m.id for m in chain if witnessed(m.tier)])
    now = utcnow()
    return [view(m, now, attestations.get(m.id)) for m in chain]


HISTORY_LIMIT = 1000  # versions walked each way: a bound on one answer, never reached in use


def _by_id(conn: Connection, project_id: str, memory_id: str) -> MemoryRow | None:
    row = conn.execute(_FIND, {"id": memory_id, "project": project_id}).first()
    return MemoryRow.of(row._mapping) if row else None


def confirm(conn: Connection, project_id: str, memory: MemoryRow, api_key_id: str) -> JsonObject:
    """A person (a bearer call) vouches for an untrusted memory: it joins the wake's selection
    and the default listing. Only the head of a chain, and only an untrusted one; the chronicle
    notes who confirmed it."""
    if memory.deleted_at is not None or memory.superseded_at is not None:
        raise _not_head(memory)
    if not memory.untrusted:
        raise ApiError(
            409,
            "memory_already_trusted",
            f"The memory {memory.id} is not untrusted: there is nothing to confirm.",
            details={"memory_id": memory.id},
        )
    now = utcnow()
    moved = conn.execute(_CONFIRM, {"memory": memory.id, "project": project_id, "now": now})
    if moved.rowcount != 1:
        raise _changed()
    chronicle.record(
        conn,
        project_id,
        memory.identity_id,
        "note",
        f"The untrusted memory {memory.id} was confirmed by its project.",
        details={"event": "memory_confirmed", "memory_id": memory.id, "api_key_id": api_key_id},
    )
    confirmed = replace(memory, untrusted=False, confirmed_at=now)
    wanted = [memory.id] if witnessed(memory.tier) else []
    return view(confirmed, now, _attestations_of(conn, wanted).get(memory.id))


_CONFIRM = (
    update(memories)
    .where(
        memories.c.id == bindparam("memory"),
        memories.c.project_id == bindparam("project"),
        memories.c.untrusted.is_(True),
        memories.c.superseded_at.is_(None),
        memories.c.deleted_at.is_(None),
    )
    .values(untrusted=False, confirmed_at=bindparam("now"))
)


def listing(
    conn: Connection,
    project_id: str,
    *,
    tier: str | None = None,
    identity_id: str | None = None,
    key: str | None = None,
    channel: str | None = None,
    untrusted: bool = False,
    as_of: datetime | None = None,
    cursor: str | None = None,
    limit: int = 100,
) -> cursors.Page:
    """The project's memories, newest first; filters by tier, identity, key and channel.

    By default the current memories: heads of their chains, no tombstones, trusted
    (``untrusted=True``: the untrusted ones instead). With ``as_of`` the memories as they stood
    then: created by then, not yet superseded or deleted, and (un)trusted as they were then; a
    memory deleted since is shown as its tombstone, for its content is gone."""
    conditions: list[Any] = [memories.c.project_id == project_id]
    for column, value in (("identity_id", identity_id), ("tier", tier), ("key", key)):
        if value is not None:
            conditions.append(memories.c[column] == value)
    if channel is not None:
        conditions.append(memories.c.channel == channel)
    if as_of is None:
        conditions += [
            memories.c.superseded_at.is_(None),
            memories.c.deleted_at.is_(None),
            memories.c.untrusted.is_(untrusted),
        ]
    else:
        # Trusted at as_of: born trusted (no confirmation, not untrusted) or confirmed by then.
        trusted_then = or_(
            and_(memories.c.untrusted.is_(False), memories.c.confirmed_at.is_(None)),
            memories.c.confirmed_at <= as_of,
        )
        conditions += [
            memories.c.created_at <= as_of,
            or_(memories.c.superseded_at.is_(None), memories.c.superseded_at > as_of),
            or_(memories.c.deleted_at.is_(None), memories.c.deleted_at > as_of),
            not_(trusted_then) if untrusted else trusted_then,
        ]
    items, next_cursor = cursors.newest_first(
        conn, memories, conditions, cursor, limit, build=MemoryRow.of
    )
    attestations = _attestations_of(conn, [m.id for m in items if witnessed(m.tier)])
    now = utcnow()
    return cursors.Page([view(m, now, attestations.get(m.id)) for m in items], next_cursor)


def remove(
    conn: Connection, project_id: str, memory: MemoryRow, grant: RootGrant | None
) -> ChronicleRow:
    """Erase the memory's content and delete its attestations, keeping a tombstone (its id, links
    and times), and say so in the chronicle (a ``note``): a deletion is never silent. Returns the
    chronicle entry."""
    if grant is not None:
        grant.claim(conn)
    conn.execute(delete(memory_attestations).where(memory_attestations.c.memory_id == memory.id))
    # The row stays as a tombstone, so the chain stays walkable and as_of can answer; what the
    # memory said (its content and its patch) is erased.
    gone = conn.execute(
        update(memories)
        .where(
            memories.c.id == memory.id,
            memories.c.project_id == project_id,
            memories.c.tier == memory.tier,
            memories.c.deleted_at.is_(None),
        )
        .values(content="", expression_patch=None, deleted_at=utcnow())
    )
    if gone.rowcount != 1:
        raise _changed()
    label = f" ({memory.key})" if memory.key else ""
    return chronicle.record(
        conn,
        project_id,
        memory.identity_id,
        "note",
        f"The {memory.tier} memory {memory.id}{label} was deleted by its project.",
        details={
            "event": "memory_deleted",
            "memory_id": memory.id,
            "tier": memory.tier,
            "key": memory.key,
            "content_sha256": hashlib.sha256(memory.content.encode("utf-8")).hexdigest(),
        },
    )


def _changed() -> ApiError:
    return ApiError(
        409,
        "memory_changed",
        "The memory changed (or was deleted) while this request was being decided.",
        hint="Read it again with GET /v1/memories/{id} and decide anew.",
    )


# --- elevation ----------------------------------------------------------------------------------


def elevate(
    conn: Connection,
    project_id: str,
    memory_id: str,
    identity: IdentityRow | None,
    *,
    tier: str,
    expression_patch: JsonObject | None,
    attestations: list[JsonObject] | None,
    grant: RootGrant | None,
) -> JsonObject:
    """Elevate the memory, or raise. Everything happens in the caller's transaction: the root
    proof's claim, the checks, the new tier and patch, the witnesses' attestations and a
    ``seal`` entry in the chronicle. A :class:`Refusal` rolls all of it back."""
    if grant is not None:
        grant.claim(conn)
    memory = find(conn, project_id, memory_id)
    current = memory.tier
    if memory.deleted_at is not None or memory.superseded_at is not None:
        raise _not_head(memory)
    if memory.untrusted:
        raise Refusal(
            409,
            "memory_untrusted",
            "An untrusted memory is not elevated: confirm it first.",
            details={"memory_id": memory.id},
            hint="POST /v1/memories/{id}/confirm, then elevate.",
        )
    if not can_elevate(current, tier):
        raise Refusal(
            409,
            "tier_transition_refused",
            f"A {current} memory cannot be elevated to {tier}.",
            details={"from": current, "to": tier},
            hint="Foundational comes from episodic; constitutive from episodic or foundational.",
        )
    if expression_patch is not None and identity is None:
        raise Refusal(
            422,
            "expression_patch_needs_identity",
            "This memory is project-level: there is no identity whose expression it could patch.",
        )
    witnesses: list[JsonObject] = []
    if not witnessed(tier) and attestations:
        raise Refusal(
            422,
            "attestations_not_applicable",
            "Foundational elevation is self-attested; attestations are for constitutive.",
        )
    if witnessed(tier):
        if not attestations:
            raise Refusal(
                422,
                "attestations_required",
                "Constitutive elevation needs attestations from an external Ed25519 witness "
                "over the exact memory content.",
                hint="The witness signs memory-attestation/v1: memory id, sha256 hex of the "
                "content, attester_did, signing_key_id.",
            )
        witnesses = [
            _witness(conn, project_id, memory, identity, attestation=attestation, index=index)
            for index, attestation in enumerate(attestations)
        ]
        keys = [w["public_key"] for w in witnesses]
        if len(set(keys)) != len(keys):
            raise Refusal(
                422,
                "attestation_invalid",
                "The same witness key attests more than once.",
                details={"reason": "duplicate_witness"},
            )
    now = utcnow()
    values: JsonObject = {"tier": tier, "elevated_at": now}
    if expression_patch is not None:
        values["expression_patch"] = expression_patch
    moved = conn.execute(
        update(memories)
        .where(
            memories.c.id == memory.id,
            memories.c.tier == current,
            memories.c.superseded_at.is_(None),
            memories.c.deleted_at.is_(None),
        )
        .values(**values)
    )
    if moved.rowcount != 1:
        raise _changed()
    for position, witness in enumerate(witnesses):
        conn.execute(
            memory_attestations.insert(),
            {
                "id": new_id(),
                "memory_id": memory.id,
                "position": position,
                "created_at": now,
                **witness,
            },
        )
    chronicle.record(
        conn,
        project_id,
        memory.identity_id,
        "seal",
        f"The memory {memory.id} became {tier}.",
        details={
            "event": "memory_elevated",
            "memory_id": memory.id,
            "from": current,
            "tier": tier,
            "expression_patched": expression_patch is not None,
            "witnesses": [w["attester_did"] for w in witnesses],
        },
    )
    memory = replace(memory, **values)
    return view(memory, now, _attestations_of(conn, [memory.id])[memory.id])


def _witness(
    conn: Connection,
    project_id: str,
    memory: MemoryRow,
    identity: IdentityRow | None,
    *,
    attestation: JsonObject,
    index: int,
) -> JsonObject:
    """One attestation checked: the witness is not the memory's self (wall 3), its key is
    known and acceptable, and its signature covers this memory's exact content."""
    did: str = attestation["attester_did"]
    kid: str = attestation["signing_key_id"]

    def invalid(reason: str, message: str) -> Refusal:
        return Refusal(
            422,
            "attestation_invalid",
            f"attestations[{index}]: {message}",
            details={"index": index, "reason": reason},
        )

    given: bytes | None = None
    if attestation.get("public_key") is not None:
        try:
            given = b64_decode(attestation["public_key"], length=32, what="public_key")
        except EncodingError:
            raise invalid("public_key", "public_key is not standard base64 of 32 bytes") from None

    if identity is not None and did == identity.did:
        raise _self_witnessing(index)
    attester: IdentityRow | None = None
    if did.startswith("did:svc:"):
        row = conn.execute(select(identities).where(identities.c.did == did)).first()
        if row is None or row.root_public_key is None:
            raise Refusal(
                422,
                "attester_unknown",
                f"attestations[{index}]: {did} is not an identity of this service with a root key.",
                details={"index": index},
            )
        attester = IdentityRow.of(row._mapping)
        key = b64_decode(row.root_public_key, length=32, what="root key")
        if kid != attester.kid:
            raise invalid("signing_key_id", "signing_key_id is not the attester's key label")
    elif did.startswith("did:key:"):
        decoded = ed25519_from_did_key(did)
        if decoded is None:
            raise invalid("attester_did", "attester_did is not an Ed25519 did:key")
        key = decoded
    elif given is None:
        raise Refusal(
            422,
            "attester_key_required",
            f"attestations[{index}]: the service cannot resolve {did}; send the witness's "
            "public_key with the attestation.",
            details={"index": index},
        )
    else:
        key = given
    if given is not None and given != key:
        raise invalid("public_key", "public_key is not the key the attester's DID names")

    key_b64 = b64_encode(key)
    if _is_self(conn, project_id, identity, attester, key_b64):
        raise _self_witnessing(index)
    if encoding_problem(key) is not None:
        raise invalid("public_key", "the witness key is not an acceptable Ed25519 public key")
    digest = memory_attestation_digest(memory.id, memory.content.encode("utf-8"), did, kid)
    if not verify_digest(key, attestation["signature"], digest):
        raise invalid(
            "signature",
            "the signature does not verify over this memory's exact content "
            "(memory-attestation/v1)",
        )
    return {
        "attester_did": did,
        "signing_key_id": kid,
        "public_key": key_b64,
        "signature": attestation["signature"],
    }


def _is_self(
    conn: Connection,
    project_id: str,
    identity: IdentityRow | None,
    attester: IdentityRow | None,
    key_b64: str,
) -> bool:
    """Whether the witness is the memory's own self: for a bound memory its identity (by DID
    or by any of its keys); for a project-level memory any identity of the project."""
    if identity is not None:
        own_keys = {identity.root_public_key, identity.box_public_key} - {None}
        return (attester is not None and attester.id == identity.id) or key_b64 in own_keys
    if attester is not None and attester.project_id == project_id:
        return True
    mate = conn.execute(
        select(func.count())
        .select_from(identities)
        .where(identities.c.root_public_key == key_b64, identities.c.project_id == project_id)
    ).scalar_one()
    return bool(mate)


def _self_witnessing(index: int) -> Refusal:
    return Refusal(
        403,
        "no_self_witnessing",
        "An identity cannot witness its own memory: constitutive elevation needs an external "
        "witness (wall 3, no_self_witnessing).",
        details={"wall": "no_self_witnessing", "index": index},
        hint="Ask another Ed25519 key holder to sign memory-attestation/v1 over the content.",
    )


# --- the wake and the effective expression ------------------------------------------------------


def select_for_wake(
    conn: Connection,
    project_id: str,
    identity_id: str | None,
    limit: int,
    *,
    now: datetime | None = None,
    include_project_level: bool = False,
    as_of: datetime | None = None,
) -> list[JsonObject]:
    """What the wake remembers: constitutive, then foundational, then the episodic memories
    still within the horizon (weight >= 1/8), newest first within a tier; at most ``limit``.

    ``identity_id`` None selects project-level memories; ``include_project_level`` adds them
    to an identity's. Every query is one range of ``ix_memories_wake_live``.

    With ``as_of`` the selection is the one the wake would have made then (its horizon counted
    from ``as_of``): the memories created by then that were the head of their chain and trusted
    then. A memory deleted since is left out at any time: its content is erased, and the wake is
    what is remembered. These queries read ``ix_memories_wake`` (all the rows), filtering.
    """
    now = as_of or now or utcnow()
    statements = _WAKE_TIER if as_of is None else _WAKE_TIER_AS_OF
    scopes: list[str | None] = [identity_id]
    if include_project_level and identity_id is not None:
        scopes.append(None)
    picked: list[MemoryRow] = []
    for tier in WAKE_ORDER:
        tier_rows: list[MemoryRow] = []
        for scope in scopes:
            if len(picked) >= limit:
                break
            params = {
                "project": project_id,
                "identity": scope,
                "tier": tier,
                "since": now - WAKE_HORIZON,
                "as_of": now,
                "limit": limit - len(picked),
            }
            statement = statements[(scope is None, decays(tier))]
            tier_rows.extend(MemoryRow.of(r._mapping) for r in conn.execute(statement, params))
        tier_rows.sort(key=lambda m: (m.created_at, m.id), reverse=True)
        picked.extend(tier_rows[: limit - len(picked)])
    attestations = _attestations_of(conn, [m.id for m in picked if witnessed(m.tier)])
    return [view(m, now, attestations.get(m.id)) for m in picked]


def _as_of_conditions(at: Any) -> list[Any]:
    """A memory as it stood at ``at``: created by then, not yet superseded then, not deleted
    (a tombstone has nothing left to remember), trusted then (born trusted, or confirmed)."""
    return [
        memories.c.created_at <= at,
        or_(memories.c.superseded_at.is_(None), memories.c.superseded_at > at),
        memories.c.deleted_at.is_(None),
        or_(
            and_(not_(memories.c.untrusted), memories.c.confirmed_at.is_(None)),
            memories.c.confirmed_at <= at,
        ),
    ]


def _wake_tier(project_level: bool, within_horizon: bool, as_of: bool = False) -> Select[Any]:
    """One tier of one scope, newest first, up to a limit: one range of ix_memories_wake_live.

    Only episodic memories have a horizon. An elevated tier gets no ``created_at`` bound at
    all: PostgreSQL took ``created_at >= epoch`` for a reason to walk the project's
    ``ix_memories_project_created`` backwards, filtering (tests/server/test_wake_work.py).
    """
    conditions = [
        memories.c.project_id == bindparam("project"),
        memories.c.identity_id.is_(None)
        if project_level
        else memories.c.identity_id == bindparam("identity"),
        memories.c.tier == bindparam("tier"),
        *(_as_of_conditions(bindparam("as_of")) if as_of else MEMORY_SELECTABLE),
    ]
    if within_horizon:
        conditions.append(memories.c.created_at >= bindparam("since"))
    # ``identity_id`` leads the order although it is one value here (NULL): PostgreSQL drops an
    # order column equated to a parameter, but not one tested IS NULL, so only the wake's index
    # gives this order without a sort, and a planner guessing at an unanalysed table cannot
    # prefer walking the project's ``ix_memories_project_created`` with a filter.
    order = [memories.c.created_at.desc(), memories.c.id.desc()]
    if project_level:
        order.insert(0, memories.c.identity_id.desc())
    return select(memories).where(*conditions).order_by(*order).limit(bindparam("limit"))


# Built once, keyed by (project level, within the horizon).
_WAKE_TIER = {
    (project_level, horizon): _wake_tier(project_level, horizon)
    for project_level in (False, True)
    for horizon in (False, True)
}
_WAKE_TIER_AS_OF = {
    (project_level, horizon): _wake_tier(project_level, horizon, as_of=True)
    for project_level in (False, True)
    for horizon in (False, True)
}


def counts_as_of(
    conn: Connection, project_id: str, focus_id: str | None, as_of: datetime
) -> dict[str, int]:
    """Memories per tier as they stood at ``as_of`` (the rule of ``select_for_wake``): the
    focal identity's and the project-level ones, or without a focus the whole project's (the
    sets the wake's counts cover). Counted from the rows: the database keeps counters of the
    present only, and a wake as of a past time is asked for rarely, never cached."""
    conditions = [memories.c.project_id == project_id, *_as_of_conditions(as_of)]
    if focus_id is not None:
        conditions.append(or_(memories.c.identity_id == focus_id, memories.c.identity_id.is_(None)))
    rows = conn.execute(
        select(memories.c.tier, func.count()).where(*conditions).group_by(memories.c.tier)
    )
    found = {tier: int(total) for tier, total in rows}
    return {tier: found.get(tier, 0) for tier in TIERS}


def apply_patch(expression: JsonObject, patch: JsonObject) -> JsonObject:
    """One additive patch: text is appended on a new line, walls and subagents are added
    (a wall or a subagent name already present is kept as it is)."""
    result = {
        "register": expression["register"],
        "walls": list(expression["walls"]),
        "subagents": [dict(s) for s in expression["subagents"]],
        "wake_text": expression["wake_text"],
    }
    for field, name in (("register", "register_append"), ("wake_text", "wake_text_append")):
        addition = patch.get(name)
        if addition:
            result[field] = f"{result[field]}\n{addition}" if result[field] else addition
    for wall in patch.get("walls_add") or []:
        if wall not in result["walls"]:
            result["walls"].append(wall)
    names = {s.get("name") for s in result["subagents"]}
    for subagent in patch.get("subagents_add") or []:
        if subagent.get("name") not in names:
            result["subagents"].append(dict(subagent))
            names.add(subagent.get("name"))
    return result


def shaping(conn: Connection, identity: IdentityRow) -> JsonObject:
    """The declared expression, the effective one, and the elevated memories that shaped it
    (``shaped_by``, in elevation order)."""
    # One range of ix_memories_identity_tier per elevated tier, merged in elevation order: an
    # equality on the tier is always an index condition, where ``tier IN (...)`` was left to a
    # filter over all the identity's memories by a planner guessing at an unanalysed table.
    rows = sorted(
        (
            row
            for tier in ELEVATED
            for row in conn.execute(_SHAPING, {"identity": identity.id, "tier": tier})
        ),
        key=lambda row: (row.elevated_at, row.id),
    )
    declared = expression_view(identity.expression)
    effective = declared
    shaped_by = []
    for row in rows:
        if row.expression_patch:
            effective = apply_patch(effective, row.expression_patch)
        shaped_by.append(
            {
                "memory_id": row.id,
                "tier": row.tier,
                "key": row.key,
                "elevated_at": iso(row.elevated_at),
                "expression_patch": row.expression_patch,
            }
        )
    return {**declared, "effective_expression": effective, "shaped_by": shaped_by}


# Built once: a statement built per call costs more than executing it.
_ELEVATED_AT = func.coalesce(memories.c.elevated_at, memories.c.created_at)
_SHAPING = (
    select(
        memories.c.id,
        memories.c.tier,
        memories.c.key,
        memories.c.expression_patch,
        _ELEVATED_AT.label("elevated_at"),
    )
    .where(
        memories.c.identity_id == bindparam("identity"),
        memories.c.tier == bindparam("tier"),
        # A superseded version's patch no longer shapes the expression; a tombstone has none.
        memories.c.superseded_at.is_(None),
        memories.c.deleted_at.is_(None),
    )
    .order_by(_ELEVATED_AT, memories.c.id)
)


def effective_expression(conn: Connection, identity: IdentityRow) -> JsonObject:
    """The declared expression plus the patches of the identity's foundational and constitutive
    memories, applied in elevation order."""
    effective: JsonObject = shaping(conn, identity)["effective_expression"]
    return effective
