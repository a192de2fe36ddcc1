"""Exact-request root proofs (identity-authority/v1) and their single-use sequences.

Order of checks: everything that can refuse a proof runs before the claim, and the claim is one
conditional UPDATE, so a refused proof consumes nothing and of many concurrent requests carrying
one sequence exactly one wins. The claim also takes a short lease: while it is held no other
root-authorised mutation of that identity may start (one in flight at a time); the mutation
clears it in its own transaction, and a crashed one lets it expire.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fastapi import Request
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from hearth.proofs import (
    AUTHORITY_HEADERS,
    authority_digest,
    b64_decode,
    verify_digest,
)

from ..context import Hearth
from ..db.engine import Database, epoch_ms
from ..db.tables import identities
from ..errors import ApiError, authority_required
from .freshness import require_fresh

SEQUENCE, TIMESTAMP, SIGNATURE = AUTHORITY_HEADERS


@dataclass
class RootGrant:
    """What a route holds after the proof: the identity, and the lease to clear (0: none)."""

    identity: dict[str, Any]
    sequence: int | None
    lease: int
    released: bool = False

    async def release(self, conn: AsyncConnection) -> None:
        """Clear the lease inside the mutation's own transaction (no extra round trip)."""
        if self.lease and not self.released:
            self.released = True
            await conn.execute(
                update(identities)
                .where(
                    identities.c.id == self.identity["id"],
                    identities.c.authority_lease_until == self.lease,
                )
                .values(authority_lease_until=0)
            )


def request_target(scope: Mapping[str, Any]) -> str:
    """Absolute path and query exactly as sent (raw, still percent-encoded), no fragment."""
    raw = scope.get("raw_path") or scope["path"].encode("utf-8")
    target = raw.decode("latin-1")
    query = scope.get("query_string", b"")
    return f"{target}?{query.decode('latin-1')}" if query else target


async def authorize_request(
    hearth: Hearth, identity: dict[str, Any], request: Request
) -> RootGrant:
    """``authorize`` for the request being served: its method, raw target, body and headers."""
    return await authorize(
        hearth.db,
        identity,
        method=request.method,
        target=request_target(request.scope),
        body=await request.body(),
        headers={k.lower(): v for k, v in request.headers.items()},
        freshness_ms=hearth.settings.freshness_ms,
        lease_ms=hearth.settings.authority_lease_ms,
    )


async def authorize(
    db: Database,
    identity: dict[str, Any],
    *,
    method: str,
    target: str,
    body: bytes,
    headers: dict[str, str],
    freshness_ms: int,
    lease_ms: int,
) -> RootGrant:
    if identity["mode"] != "agent_root":
        return RootGrant(identity, None, 0)
    missing = [name for name in AUTHORITY_HEADERS if not headers.get(name.lower())]
    if missing:
        raise authority_required(identity["next_sequence"], missing, identity["did"])

    sequence_text = headers[SEQUENCE.lower()]
    if not sequence_text.isdigit() or sequence_text.startswith("0") or len(sequence_text) > 18:
        raise ApiError(
            422,
            "authority_proof_invalid",
            f"{SEQUENCE} must be a positive decimal integer.",
        )
    sequence = int(sequence_text)
    if sequence != identity["next_sequence"]:
        raise _sequence_mismatch(identity["next_sequence"])

    timestamp = headers[TIMESTAMP.lower()]
    require_fresh(
        timestamp,
        freshness_ms,
        field=TIMESTAMP,
        invalid="authority_proof_invalid",
        stale="authority_proof_stale",
    )
    signature = headers[SIGNATURE.lower()]
    root = b64_decode(identity["root_public_key"], length=32, what="root key")
    digest = authority_digest(
        identity["did"], method, target, body, sequence=sequence, timestamp=timestamp
    )
    if not verify_digest(root, signature, digest):
        raise ApiError(
            422,
            "authority_proof_invalid",
            "The signature does not verify for this exact request under the identity's root key.",
            hint="Sign the exact method, target, body bytes, sequence and timestamp you send.",
            docs="/v1/identities/{id}/authority",
        )

    now = epoch_ms()
    lease = now + lease_ms
    async with db.write() as conn:
        won = await conn.execute(
            update(identities)
            .where(
                identities.c.id == identity["id"],
                identities.c.next_sequence == sequence,
                identities.c.authority_lease_until < now,
            )
            .values(next_sequence=sequence + 1, authority_lease_until=lease)
        )
        if won.rowcount == 1:
            return RootGrant({**identity, "next_sequence": sequence + 1}, sequence, lease)
        current = (
            await conn.execute(
                select(identities.c.next_sequence).where(identities.c.id == identity["id"])
            )
        ).scalar_one()
    if current != sequence:
        raise _sequence_mismatch(current)
    raise ApiError(
        409,
        "authority_busy",
        "Another root-authorised mutation of this identity is in flight; retry when it ends.",
        details={"next_sequence": current},
        headers={"Retry-After": "1"},
    )


def _sequence_mismatch(next_sequence: int) -> ApiError:
    return ApiError(
        409,
        "authority_sequence_mismatch",
        "The proof's sequence is not the identity's next sequence (each one is single-use).",
        details={"next_sequence": next_sequence},
        hint="Read next_sequence from GET /v1/identities/{id}/authority and sign again.",
    )
