"""Attestations: one identity's signed statement about another (docs/elevation.md).

The statement is the sponsor statement of bootstrap elevation, signed with the recipe
``bootstrap-elevate/v1`` (agent_id, sponsor DID, sponsor_kid, claim, initial_credits); the same
statement is what POST /v1/attestations keeps when the elevation's orchestration has to be done
by hand. The attester is an identity of this service (any project) with a root key: its
``sponsor_kid`` must be that key's label, and the signature must verify under that key. An
identity never attests itself (the spirit of wall 3, ``no_self_witnessing``): the same identity,
or an attester whose key is one of the subject's own keys, is refused whether or not the
signature verifies.
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import Connection, bindparam, select

from hearth.proofs import ELEVATE_CONTEXT, EncodingError, b64_decode, elevate_digest, verify_digest

from ..db.engine import utcnow
from ..db.ids import new_id
from ..db.rows import AttestationRow, IdentityRow
from ..db.tables import attestations, identities
from ..errors import ApiError
from ..json_types import JsonObject
from . import cursors
from .times import iso

WALL = "no_self_witnessing"


class Refusal(ApiError):
    """A decided refusal of a signed statement: answered as any ApiError and recorded in the
    chronicle (wall 5, ``refusals_recorded``) by the route that catches it."""


def sponsor_unknown(ref: str) -> Refusal:
    return Refusal(
        422,
        "sponsor_unknown",
        f"{ref} is not an identity of this service with a root key.",
        hint="Name the sponsor by its identity id (sponsor_identity_id) or its did:svc DID "
        "(sponsor_did); an external key cannot sponsor.",
    )


def _self_sponsorship() -> Refusal:
    return Refusal(
        403,
        "no_self_sponsorship",
        "An identity cannot sponsor or attest itself: the statement needs another identity's "
        "signature (wall 3, no_self_witnessing).",
        details={"wall": WALL},
        hint="Ask another identity to sign bootstrap-elevate/v1 over this agent_id.",
    )


def _signature_invalid(reason: str, message: str) -> Refusal:
    return Refusal(
        422,
        "sponsor_signature_invalid",
        message,
        details={"reason": reason, "context": ELEVATE_CONTEXT},
        hint="Sign bootstrap-elevate/v1: agent_id, the sponsor's DID, sponsor_kid, claim and "
        "initial_credits as decimal text, each after a 0x00 byte; Ed25519 over the SHA-256.",
        docs="/v1/mathos",
    )


def find_sponsor(conn: Connection, ref: str) -> IdentityRow:
    """The attester, in any project, by id or did:svc DID; 422 ``sponsor_unknown`` otherwise."""
    if ref.startswith("did:svc:"):
        condition = identities.c.did == ref
    else:
        try:
            condition = identities.c.id == str(uuid.UUID(ref))
        except ValueError:
            raise sponsor_unknown(ref) from None
    row = conn.execute(select(identities).where(condition)).first()
    if row is None or row.root_public_key is None:
        raise sponsor_unknown(ref)
    return IdentityRow.of(row._mapping)


def verify(conn: Connection, subject: IdentityRow, statement: Any) -> tuple[IdentityRow, str]:
    """The sponsor and its key (base64) once the statement about ``subject`` is shown to be
    another identity's and to verify; a ``Refusal`` otherwise. Writes nothing."""
    sponsor = find_sponsor(conn, statement.sponsor_ref)
    own_keys = {subject.root_public_key, subject.box_public_key} - {None}
    if sponsor.id == subject.id or sponsor.root_public_key in own_keys:
        raise _self_sponsorship()
    if statement.sponsor_kid != sponsor.kid:
        raise _signature_invalid(
            "sponsor_kid",
            f"sponsor_kid is not the sponsor's key label ({sponsor.kid}).",
        )
    # find_sponsor has refused a sponsor without a root key.
    root_public_key = sponsor.root_public_key or ""
    try:
        key = b64_decode(root_public_key, length=32, what="root key")
    except EncodingError:
        raise sponsor_unknown(statement.sponsor_ref) from None
    digest = elevate_digest(
        statement.agent_id,
        sponsor.did,
        statement.sponsor_kid,
        statement.claim,
        statement.initial_credits,
    )
    if not verify_digest(key, statement.sponsor_signature, digest):
        raise _signature_invalid(
            "signature",
            "sponsor_signature does not verify under the sponsor's key over this statement "
            "(bootstrap-elevate/v1).",
        )
    return sponsor, root_public_key


def store(
    conn: Connection,
    project_id: str,
    subject: IdentityRow,
    sponsor: IdentityRow,
    statement: Any,
) -> tuple[AttestationRow, bool]:
    """Keep a verified statement: (row, replayed). The same signature about the same subject is
    kept once; sending it again finds the row already kept."""
    found = conn.execute(
        _SAME, {"subject": subject.id, "signature": statement.sponsor_signature}
    ).first()
    if found is not None:
        return AttestationRow.of(found._mapping), True
    row = {
        "id": new_id(),
        "project_id": project_id,
        "subject_identity_id": subject.id,
        "attester_did": sponsor.did,
        "attester_identity_id": sponsor.id,
        "signing_key_id": statement.sponsor_kid,
        "public_key": sponsor.root_public_key,
        "context": ELEVATE_CONTEXT,
        "claim": statement.claim,
        # The table has no column for initial_credits, which the signature covers: it is kept
        # beside the caller's evidence so that the stored statement can be verified again.
        "evidence": {"initial_credits": statement.initial_credits, "evidence": statement.evidence},
        "signature": statement.sponsor_signature,
        "created_at": utcnow(),
    }
    conn.execute(_INSERT, row)
    return AttestationRow.of(row), False


def listing(
    conn: Connection,
    project_id: str,
    *,
    identity_id: str | None,
    cursor: str | None,
    limit: int,
) -> cursors.Page:
    """The project's attestations (optionally about one identity), newest first."""
    conditions = [attestations.c.project_id == project_id]
    if identity_id is not None:
        conditions.append(attestations.c.subject_identity_id == identity_id)
    items, next_cursor = cursors.newest_first(
        conn, attestations, conditions, cursor, limit, build=AttestationRow.of
    )
    return cursors.Page([view(row) for row in items], next_cursor)


def view(row: AttestationRow) -> JsonObject:
    kept = row.evidence or {}
    return {
        "id": row.id,
        "agent_id": row.subject_identity_id,
        "attester_did": row.attester_did,
        "attester_identity_id": row.attester_identity_id,
        "signing_key_id": row.signing_key_id,
        "public_key": row.public_key,
        "context": row.context,
        "claim": row.claim,
        "initial_credits": int(kept.get("initial_credits", 0)),
        "evidence": kept.get("evidence"),
        "signature": row.signature,
        "created_at": iso(row.created_at),
    }


# Built once: a statement built per call costs more than executing it.
_INSERT = attestations.insert()
_SAME = select(attestations).where(
    attestations.c.subject_identity_id == bindparam("subject"),
    attestations.c.context == ELEVATE_CONTEXT,
    attestations.c.signature == bindparam("signature"),
)
