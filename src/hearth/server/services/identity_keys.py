"""An identity's signing keys besides its root: registration, listing, revocation, and the one
lookup thought writes are verified with (docs/strands.md, "Identity keys").

The root key (``identities.root_public_key``) is kid ``primary`` and is never a row here. Other
keys are rows of ``identity_keys``: purpose ``runtime`` (a runtime's signing key, bound to a
runtime of the identity) or ``device``. A kid is unique per identity for ever, revoked or not,
so a signature that names a kid names one key only. Registering and revoking through the API
need the identity's root proof (a signing-key mutation, as the specification's
"Authentication" lists); :func:`register_runtime_key` is the service's own door for the hosted
key of a ``trusted`` runtime.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from sqlalchemy import Connection, RowMapping, bindparam, select, update
from sqlalchemy.exc import IntegrityError

from hearth.proofs import b64_decode

from ..canon import CustodyMode
from ..db.engine import utcnow
from ..db.ids import new_id
from ..db.rows import IdentityRow, RuntimeRow
from ..db.tables import identities, identity_keys, runtimes
from ..errors import ApiError, not_found
from ..json_types import JsonObject
from .authority import RootGrant
from .public_keys import checked_ed25519
from .times import iso

PRIMARY_KID = "primary"
PURPOSES = ("runtime", "device")

_INSERT = identity_keys.insert()
_BY_KID = select(identity_keys).where(
    identity_keys.c.identity_id == bindparam("identity"), identity_keys.c.kid == bindparam("kid")
)
_ALL = (
    select(identity_keys)
    .where(identity_keys.c.identity_id == bindparam("identity"))
    .order_by(identity_keys.c.created_at, identity_keys.c.id)
)
_ROOT = select(identities.c.root_public_key).where(identities.c.id == bindparam("identity"))
_REVOKE = (
    update(identity_keys)
    .where(
        identity_keys.c.identity_id == bindparam("identity"),
        identity_keys.c.kid == bindparam("label"),
        identity_keys.c.revoked_at.is_(None),
    )
    .values(revoked_at=bindparam("now"))
)
_RUNTIME = select(runtimes).where(runtimes.c.id == bindparam("id"))


def view(row: RowMapping | Mapping[str, Any]) -> JsonObject:
    """A registered key's answer, from its row (or the values just inserted)."""
    return {
        "identity_id": row["identity_id"],
        "kid": row["kid"],
        "public_key": row["public_key"],
        "purpose": row["purpose"],
        "runtime_id": row["runtime_id"],
        "created_at": iso(row["created_at"]),
        "revoked_at": iso(row["revoked_at"]),
        "revoked": row["revoked_at"] is not None,
    }


def root_view(identity: IdentityRow) -> JsonObject:
    """The root key as a list entry: kid ``primary``, never revoked (it is immutable)."""
    return {
        "identity_id": identity.id,
        "kid": PRIMARY_KID,
        "public_key": identity.root_public_key,
        "purpose": "root",
        "runtime_id": None,
        "created_at": iso(identity.key_created_at),
        "revoked_at": None,
        "revoked": False,
    }


def _runtime_of(conn: Connection, identity_id: str, runtime_ref: str) -> RuntimeRow:
    """The runtime, which must be bound to this identity (its project is the identity's)."""
    try:
        runtime_id = str(uuid.UUID(runtime_ref))
    except ValueError:
        raise not_found("Runtime") from None
    row = conn.execute(_RUNTIME, {"id": runtime_id}).first()
    if row is None:
        raise not_found("Runtime")
    runtime = RuntimeRow.of(row._mapping)
    if runtime.identity_id != identity_id:
        # Another project's runtime must not be told apart from a missing one.
        owner = conn.execute(
            select(identities.c.project_id).where(identities.c.id == identity_id)
        ).scalar_one()
        if runtime.project_id != owner:
            raise not_found("Runtime")
        raise ApiError(
            422,
            "runtime_identity_mismatch",
            "The runtime is not bound to this identity: a runtime signs only for its own.",
            details={"field": "runtime_id", "runtime_identity_id": runtime.identity_id},
        )
    if runtime.deleted_at is not None:
        raise ApiError(
            409,
            "runtime_deleted",
            "The runtime was deleted; a deleted runtime gets no new key.",
            details={"runtime_id": runtime_id, "deleted_at": iso(runtime.deleted_at)},
        )
    return runtime


def _insert(
    conn: Connection,
    identity_id: str,
    *,
    kid: str,
    public_key: str,
    purpose: str,
    runtime_id: str | None,
) -> Mapping[str, Any]:
    row = {
        "id": new_id(),
        "identity_id": identity_id,
        "kid": kid,
        "public_key": public_key,
        "purpose": purpose,
        "runtime_id": runtime_id,
        "created_at": utcnow(),
        "revoked_at": None,
    }
    try:
        conn.execute(_INSERT, row)
    except IntegrityError:
        # Lost a race for the kid (the unique constraint decides); the transaction is doomed on
        # PostgreSQL anyway, so answer the conflict and let it roll back.
        raise _kid_taken(kid) from None
    return row


def _kid_taken(kid: str) -> ApiError:
    return ApiError(
        409,
        "kid_taken",
        f"The identity already has a key labelled {kid!r} (revoked keys keep their kid for ever, "
        "so that a signature's kid names one key only).",
        details={"kid": kid},
        hint="Choose another kid.",
    )


def register(
    conn: Connection,
    grant: RootGrant,
    *,
    kid: str,
    public_key: str,
    purpose: str,
    runtime_id: str | None,
) -> JsonObject:
    """Register a key for the grant's identity (the root proof's sequence is consumed with it)."""
    identity = grant.identity
    if kid == PRIMARY_KID:
        raise ApiError(
            422,
            "kid_reserved",
            "The kid `primary` names the identity's root key, which is immutable.",
            details={"field": "kid"},
        )
    if purpose not in PURPOSES:
        raise ApiError(422, "invalid_purpose", f"purpose is one of {', '.join(PURPOSES)}.")
    checked_ed25519(public_key, "public_key")
    if purpose == "runtime" and runtime_id is None:
        raise ApiError(
            422,
            "runtime_required",
            "A key of purpose `runtime` names the runtime that holds it (`runtime_id`).",
            details={"field": "runtime_id"},
        )
    if purpose != "runtime" and runtime_id is not None:
        raise ApiError(
            422,
            "runtime_not_applicable",
            "Only a key of purpose `runtime` is bound to a runtime.",
            details={"field": "runtime_id"},
        )
    bound = _runtime_of(conn, identity.id, runtime_id).id if runtime_id else None
    if conn.execute(_BY_KID, {"identity": identity.id, "kid": kid}).first() is not None:
        raise _kid_taken(kid)
    grant.claim(conn)
    row = _insert(
        conn, identity.id, kid=kid, public_key=public_key, purpose=purpose, runtime_id=bound
    )
    return view(row)


def register_runtime_key(
    conn: Connection, identity_id: str, runtime_id: str, public_key_b64: str, kid: str
) -> JsonObject:
    """The hosted orchestrator registers a ``trusted`` runtime's own signing key, without a
    root proof.

    Sound because nothing here is the caller's claim: the runtime was provisioned by its
    project for this identity (the binding is immutable), and its key pair was generated by the
    service and is held wrapped under the service's master key. The service vouches for a key
    it made, for the identity the runtime was bound to by a bearer of that identity's project.
    Only the service's own code reaches this function; no route calls it.

    Idempotent: the same kid with the same key answers the existing row (a worker that crashed
    after registering may register again); another key under that kid is 409 ``kid_taken``.
    """
    if kid == PRIMARY_KID:
        raise ValueError("the kid `primary` is the root key's")
    runtime = _runtime_of(conn, identity_id, runtime_id)
    mode: CustodyMode = runtime.mode
    if mode != "trusted":
        raise ValueError("only a trusted runtime's hosted key is registered by the service")
    checked_ed25519(public_key_b64, "public_key")
    existing = conn.execute(_BY_KID, {"identity": identity_id, "kid": kid}).first()
    if existing is not None:
        row = dict(existing._mapping)
        same = (
            row["public_key"] == public_key_b64
            and row["runtime_id"] == runtime.id
            and row["revoked_at"] is None
        )
        if same:
            return view(row)
        raise _kid_taken(kid)
    return view(
        _insert(
            conn,
            identity_id,
            kid=kid,
            public_key=public_key_b64,
            purpose="runtime",
            runtime_id=runtime.id,
        )
    )


def revoke(conn: Connection, grant: RootGrant, kid: str) -> JsonObject:
    """Revoke a registered key (the root key cannot be). Revoking a revoked key answers it as
    it is; the proof's sequence is consumed either way."""
    identity = grant.identity
    if kid == PRIMARY_KID:
        raise ApiError(
            422,
            "kid_reserved",
            "The root key (`primary`) is immutable and cannot be revoked.",
            details={"kid": kid},
        )
    found = conn.execute(_BY_KID, {"identity": identity.id, "kid": kid}).first()
    if found is None:
        raise not_found("Key")
    grant.claim(conn)
    now = utcnow()
    conn.execute(_REVOKE, {"identity": identity.id, "label": kid, "now": now})
    row = conn.execute(_BY_KID, {"identity": identity.id, "kid": kid}).one()
    return view(row._mapping)


def listing(conn: Connection, identity: IdentityRow) -> list[JsonObject]:
    """The root key first (when the identity has one), then registered keys, oldest first."""
    items = [root_view(identity)] if identity.root_public_key else []
    items.extend(view(r._mapping) for r in conn.execute(_ALL, {"identity": identity.id}))
    return items


def verification_key(conn: Connection, identity_id: str, kid: str) -> bytes | None:
    """The raw Ed25519 key that ``kid`` names for the identity: the root key for ``primary``,
    otherwise an unrevoked registered key; None when there is none."""
    if kid == PRIMARY_KID:
        root = conn.execute(_ROOT, {"identity": identity_id}).scalar_one_or_none()
        return b64_decode(root, length=32) if root else None
    row = conn.execute(_BY_KID, {"identity": identity_id, "kid": kid}).first()
    if row is None or row.revoked_at is not None:
        return None
    return b64_decode(row.public_key, length=32)


def key_state(conn: Connection, identity_id: str, kid: str) -> str:
    """``active``, ``revoked`` or ``unknown``: why a kid does (not) verify, for a refusal."""
    if kid == PRIMARY_KID:
        root = conn.execute(_ROOT, {"identity": identity_id}).scalar_one_or_none()
        return "active" if root else "unknown"
    row = conn.execute(_BY_KID, {"identity": identity_id, "kid": kid}).first()
    if row is None:
        return "unknown"
    return "revoked" if row.revoked_at is not None else "active"
