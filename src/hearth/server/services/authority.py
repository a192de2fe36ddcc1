"""Exact-request root proofs (identity-authority/v1) and their single-use sequences.

Order of checks: everything that can refuse a proof runs before anything is written, and the
claim is one conditional UPDATE made inside the mutation's own transaction. So a refused proof
consumes nothing; of many concurrent requests carrying one sequence exactly one wins; and the
sequence is consumed if and only if the mutation commits. Because claim and mutation are one
transaction (serialised on the identity's row, and by the single writer on SQLite), at most one
root-authorised mutation of an identity is ever in flight. The identity's
``authority_lease_until`` is honoured too: a mutation that must commit its claim before its own
work (the specification's bootstrap elevation) holds that lease while it runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from sqlalchemy import Connection, bindparam, select, update

from hearth.proofs import (
    AUTHORITY_HEADERS,
    authority_digest,
    b64_decode,
    verify_digest,
)

from ..db import direct
from ..db.engine import epoch_ms
from ..db.rows import IdentityRow
from ..db.tables import identities
from ..errors import ApiError, authority_required
from .freshness import require_fresh

SEQUENCE, TIMESTAMP, SIGNATURE = AUTHORITY_HEADERS

_CLAIM = (
    update(identities)
    .where(
        identities.c.id == bindparam("identity"),
        identities.c.next_sequence == bindparam("sequence"),
        identities.c.authority_lease_until < bindparam("now"),
    )
    .values(next_sequence=bindparam("sequence") + 1)
)
_CURRENT = select(identities.c.next_sequence).where(identities.c.id == bindparam("identity"))


@dataclass
class RootGrant:
    """A verified proof for one identity; ``claim`` consumes its sequence (None: the identity
    is not agent_root, and needs no proof)."""

    identity: IdentityRow
    sequence: int | None
    claimed: bool = False

    def claim(self, conn: Connection) -> None:
        """Consume the sequence in the mutation's own transaction, or raise (and the caller's
        transaction rolls back, so nothing of the mutation is written either)."""
        if self.sequence is None or self.claimed:
            return
        won = direct.run(
            conn,
            _CLAIM,
            {"identity": self.identity.id, "sequence": self.sequence, "now": epoch_ms()},
        )
        if won != 1:
            current = conn.execute(_CURRENT, {"identity": self.identity.id}).scalar_one()
            if current != self.sequence:
                raise _sequence_mismatch(current)
            raise ApiError(
                409,
                "authority_busy",
                "Another root-authorised mutation of this identity is in flight; retry when it "
                "ends.",
                details={"next_sequence": current},
                headers={"Retry-After": "1"},
            )
        self.claimed = True
        self.identity = replace(self.identity, next_sequence=self.sequence + 1)


@dataclass(frozen=True)
class SignedRequest:
    """What an exact-request proof covers, read off the request at the edge
    (``auth.signed_request``): the method, the raw target, the body bytes and the headers (names
    in lower case)."""

    method: str
    target: str
    body: bytes
    headers: Mapping[str, str]


def authorize(identity: IdentityRow, signed: SignedRequest, *, freshness_ms: int) -> RootGrant:
    """Every check of the proof that needs no write; the claim is ``RootGrant.claim``."""
    if identity.mode != "agent_root":
        return RootGrant(identity, None)
    headers = signed.headers
    missing = [name for name in AUTHORITY_HEADERS if not headers.get(name.lower())]
    if missing:
        raise authority_required(identity.next_sequence, missing, identity.did)

    sequence_text = headers[SEQUENCE.lower()]
    if not sequence_text.isdigit() or sequence_text.startswith("0") or len(sequence_text) > 18:
        raise ApiError(
            422,
            "authority_proof_invalid",
            f"{SEQUENCE} must be a positive decimal integer.",
        )
    sequence = int(sequence_text)
    if sequence != identity.next_sequence:
        raise _sequence_mismatch(identity.next_sequence)

    timestamp = headers[TIMESTAMP.lower()]
    require_fresh(
        timestamp,
        freshness_ms,
        field=TIMESTAMP,
        invalid="authority_proof_invalid",
        stale="authority_proof_stale",
    )
    signature = headers[SIGNATURE.lower()]
    # An agent_root identity always has a root key (its row is written with one).
    root = b64_decode(identity.root_public_key or "", length=32, what="root key")
    digest = authority_digest(
        identity.did,
        signed.method,
        signed.target,
        signed.body,
        sequence=sequence,
        timestamp=timestamp,
    )
    if not verify_digest(root, signature, digest):
        raise ApiError(
            422,
            "authority_proof_invalid",
            "The signature does not verify for this exact request under the identity's root key.",
            hint="Sign the exact method, target, body bytes, sequence and timestamp you send.",
            docs="/v1/identities/{id}/authority",
        )
    return RootGrant(identity, sequence)


def _sequence_mismatch(next_sequence: int) -> ApiError:
    return ApiError(
        409,
        "authority_sequence_mismatch",
        "The proof's sequence is not the identity's next sequence (each one is single-use).",
        details={"next_sequence": next_sequence},
        hint="Read next_sequence from GET /v1/identities/{id}/authority and sign again.",
    )
