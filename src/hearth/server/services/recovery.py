"""Signed discovery and recovery: proving possession of a root key, without a bearer."""

from __future__ import annotations

from sqlalchemy import Connection, select

from hearth.proofs import (
    EncodingError,
    b64_decode,
    discovery_digest,
    recover_digest,
    verify_digest,
)

from ..db.engine import Database
from ..db.rows import IdentityRow
from ..db.tables import identities
from ..errors import ApiError
from ..json_types import JsonObject
from ..models import DiscoveryRequest, RecoverRequest
from . import authority, keys
from .freshness import require_fresh
from .identities import candidate_view, find_by_did


def _key(text: str, what: str) -> bytes:
    try:
        return b64_decode(text, length=32, what=what)
    except EncodingError as exc:
        raise ApiError(422, "invalid_public_key", str(exc)) from None


async def discover(db: Database, body: DiscoveryRequest, *, freshness_ms: int) -> JsonObject:
    key = _key(body.pubkey, "pubkey")
    require_fresh(
        body.timestamp,
        freshness_ms,
        field="timestamp",
        invalid="invalid_timestamp",
        stale="discovery_stale",
    )
    if not verify_digest(key, body.signature, discovery_digest(body.pubkey, body.timestamp)):
        raise ApiError(
            422,
            "discovery_signature_invalid",
            "signature must sign the identity-discovery/v1 challenge (pubkey, timestamp) "
            "with the key named in pubkey.",
        )
    async with db.read() as conn:
        rows = await conn.execute(
            select(identities)
            .where(identities.c.root_public_key == body.pubkey, identities.c.status == "active")
            .order_by(identities.c.created_at, identities.c.id)
        )
        return {"agents": [candidate_view(IdentityRow.of(r._mapping)) for r in rows]}


_REFUSED = "Recovery refused: the DID, derived_pubkey and signature do not prove this identity."


async def recover(
    db: Database, body: RecoverRequest, signed: authority.SignedRequest, *, freshness_ms: int
) -> JsonObject:
    """A new project key for a rooted identity, on a recovery signature and then (the second
    request, after a 428) the root's exact-request proof of ``signed``."""
    key = _key(body.derived_pubkey, "derived_pubkey")
    require_fresh(
        body.timestamp,
        freshness_ms,
        field="timestamp",
        invalid="invalid_timestamp",
        stale="recovery_stale",
    )
    async with db.read() as conn:
        identity = await find_by_did(conn, body.did)
    # One answer for an unknown DID, a legacy identity and a wrong key: nothing to probe.
    if (
        identity is None
        or identity.mode != "agent_root"
        or identity.status != "active"
        or identity.root_public_key != body.derived_pubkey
        or not verify_digest(
            key,
            body.signature,
            recover_digest(body.did, body.derived_pubkey, body.timestamp, body.device_label),
        )
    ):
        raise ApiError(422, "recovery_refused", _REFUSED)
    grant = authority.authorize(identity, signed, freshness_ms=freshness_ms)
    label = f"recovered:{body.device_label or 'device'}"[:200]

    def reissue(conn: Connection) -> keys.IssuedKey:
        grant.claim(conn)
        return keys.issue(conn, identity.project_id, label)

    issued = await db.transaction(reissue)
    return {
        "agent": {"id": identity.id, "did": identity.did, "name": identity.name},
        "project": {"id": identity.project_id, "api_key": issued.secret, "key_id": issued.id},
    }
