"""Bootstrap elevation: Level 0 to Level 1 on a sponsor's signed statement (docs/elevation.md).

The specification orders it: the root-proof sequence is claimed first, in a short transaction of
its own, and then one transaction writes everything the elevation is (the sponsor attestation,
the seed ledger grant, the vault namespace, the level with its sponsor and time, a chronicle
entry). So a failure of the orchestration leaves nothing but the consumed sequence, and the
caller signs again with the next one (GET /v1/identities/{id}/authority).

Between the two transactions the identity holds its authority lease (``authority_lease_until``):
any other root-authorised mutation of it meanwhile gets 409 ``authority_busy``. The
orchestration releases the lease in its own transaction; a failure releases it in another; a
process that dies in between leaves a lease that simply expires.

Every check that can refuse without writing (the sponsor, its signature, self-sponsorship, the
level) runs before the claim, so a refused elevation consumes no sequence. Only a refusal
decided inside the orchestration (another elevation of the same identity won meanwhile) comes
after the claim.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import structlog
from sqlalchemy import Connection, bindparam, select, update

from ..db.engine import Database, epoch_ms, utcnow
from ..db.rows import IdentityRow, LedgerRow
from ..db.tables import identities, ledger
from ..errors import ApiError
from ..json_types import JsonObject
from ..models_elevation import SponsorStatement
from . import attestations, chronicle, vault, wallets
from . import identities as identity_service
from .authority import RootGrant
from .times import iso

log = structlog.get_logger("hearth.elevation")

ROUTE = "POST /v1/bootstrap/elevate"
LEVEL_BIRTH = 0
LEVEL_SPONSORED = 1
GRANT_REASON = "elevation_grant"
# Long enough for the orchestration (a handful of statements), short enough that a process that
# died mid-way does not hold the identity for long.
LEASE_MS = 60_000


class ElevationFailed(ApiError):
    """The orchestration failed after the sequence was claimed: the specification's 500 shape
    (``internal_error`` with an opaque ``request_id``), saying that the sequence is gone."""

    def __init__(self, request_id: str, next_sequence: int | None) -> None:
        super().__init__(
            500,
            "internal_error",
            "The elevation failed on our side and nothing of it was written. "
            + (
                "Its root-proof sequence was consumed: read next_sequence from "
                "GET /v1/identities/{id}/authority and sign the request again."
                if next_sequence is not None
                else "Send the request again."
            ),
            details={"next_sequence": next_sequence} if next_sequence is not None else None,
            hint="Quote the request_id if you report it. The manual fallbacks are "
            "POST /v1/attestations, POST /v1/wallets/{wallet_id}/fund and "
            "PUT /v1/vault/{agent_id}:config.",
        )
        self.request_id = request_id

    def body(self) -> JsonObject:
        return {**super().body(), "request_id": self.request_id}


async def elevate(
    db: Database,
    project_id: str,
    grant: RootGrant,
    statement: SponsorStatement,
    *,
    request_id: str,
    master_key: str | None,
) -> JsonObject:
    """The whole elevation of ``grant.identity`` (found in the caller's project, its root proof
    verified but not yet claimed): check, claim, orchestrate. ``master_key`` wraps the vault
    namespace's key when set."""
    identity = grant.identity
    try:
        sponsor = await db.snapshot(check, identity, statement)
    except attestations.Refusal as refusal:
        raise await _recorded(db, refusal, project_id, identity, statement) from None

    await db.transaction(claim, grant)
    next_sequence = grant.identity.next_sequence if grant.sequence is not None else None
    try:
        result: JsonObject = await db.transaction(
            orchestrate,
            project_id,
            identity,
            sponsor,
            statement,
            master_key=master_key,
        )
    except attestations.Refusal as refusal:
        # Another elevation of this identity won between the check and the orchestration.
        await _release(db, identity.id, grant)
        if next_sequence is not None:
            refusal.details = {**(refusal.details or {}), "next_sequence": next_sequence}
        raise await _recorded(db, refusal, project_id, identity, statement) from None
    except ApiError:
        await _release(db, identity.id, grant)
        raise
    except Exception:
        log.exception("elevation_failed", request_id=request_id, identity_id=identity.id)
        await _release(db, identity.id, grant)
        raise ElevationFailed(request_id, next_sequence) from None
    return result


async def _recorded(
    db: Database,
    refusal: ApiError,
    project_id: str,
    identity: IdentityRow,
    statement: SponsorStatement,
) -> ApiError:
    return await chronicle.record_refusal(
        db,
        refusal,
        project_id=project_id,
        identity_id=identity.id,
        text=f"Refused to elevate {identity.did}",
        route=ROUTE,
        sponsor=statement.sponsor_ref,
        claim=statement.claim,
    )


async def _release(db: Database, identity_id: str, grant: RootGrant) -> None:
    """Give the lease back after a failed orchestration. If even that fails, the lease expires
    by itself within ``LEASE_MS``; the answer to the caller is not changed by it."""
    if grant.sequence is None:
        return
    try:
        await db.transaction(release, identity_id)
    except Exception as exc:
        log.warning(
            "elevation_lease_not_released", identity_id=identity_id, error=type(exc).__name__
        )


def already_elevated(identity: IdentityRow, current: Any) -> attestations.Refusal:
    """``current``: the identity's level, sponsor_did and elevated_at as they are now."""
    return attestations.Refusal(
        409,
        "already_elevated",
        f"{identity.did} is already at Level {current.level}: elevation happens once.",
        details={
            "level": current.level,
            "sponsor_did": current.sponsor_did,
            "elevated_at": iso(current.elevated_at),
        },
        hint="GET /v1/bootstrap/{agent_id} shows the level, sponsor and elevation time.",
    )


def check(conn: Connection, identity: IdentityRow, statement: SponsorStatement) -> IdentityRow:
    """Every refusal that needs no write, in order: the sponsor (known, not the identity
    itself, its key label and signature), then the level. Returns the sponsor."""
    sponsor, _key = attestations.verify(conn, identity, statement)
    current = conn.execute(_LEVEL, {"identity": identity.id}).one()
    if current.level != LEVEL_BIRTH:
        raise already_elevated(identity, current)
    return sponsor


def claim(conn: Connection, grant: RootGrant) -> None:
    """The short transaction before the orchestration: consume the sequence and take the
    identity's lease. ``legacy_bearer`` identities have no sequence and take no lease."""
    grant.claim(conn)
    if grant.sequence is not None:
        conn.execute(_LEASE, {"identity": grant.identity.id, "until": epoch_ms() + LEASE_MS})


def release(conn: Connection, identity_id: str) -> None:
    conn.execute(_LEASE, {"identity": identity_id, "until": 0})


def orchestrate(
    conn: Connection,
    project_id: str,
    identity: IdentityRow,
    sponsor: IdentityRow,
    statement: SponsorStatement,
    *,
    master_key: str | None,
) -> JsonObject:
    """The elevation, all in the caller's one transaction: the level first (a conditional
    UPDATE, so of two elevations at once exactly one goes on), then the attestation, the seed
    grant, the vault namespace and the chronicle entry."""
    now = utcnow()
    raised = conn.execute(_RAISE, {"identity": identity.id, "sponsor_did": sponsor.did, "now": now})
    if raised.rowcount != 1:
        current = conn.execute(_LEVEL, {"identity": identity.id}).one()
        raise already_elevated(identity, current)

    attestation, _replayed = attestations.store(conn, project_id, identity, sponsor, statement)

    wallet = wallets.paying_wallet(conn, project_id, identity.id)
    if wallet is None or wallet.identity_id != identity.id:
        wallet = wallets.open_wallet(conn, project_id, identity.id, f"{identity.name} wallet")
    entry = None
    if statement.initial_credits > 0:
        wallets.credit(conn, wallet.id, statement.initial_credits, GRANT_REASON)
        entry = LedgerRow.of(conn.execute(_GRANT_ENTRY, {"wallet": wallet.id}).one()._mapping)
    wallet = wallets.find(conn, project_id, wallet.id)

    config = {
        "level": LEVEL_SPONSORED,
        "sponsor_did": sponsor.did,
        "elevated_at": iso(now),
        "claim": statement.claim,
        "initial_credits": statement.initial_credits,
    }
    namespace = _vault_namespace(conn, project_id, identity, config, master_key=master_key)

    entry_row = chronicle.record(
        conn,
        project_id,
        identity.id,
        "recognition",
        f"{identity.name} was raised to Level {LEVEL_SPONSORED}, sponsored by "
        f"{sponsor.did} ({statement.claim}).",
        details={
            "event": "elevated",
            "level": LEVEL_SPONSORED,
            "sponsor_did": sponsor.did,
            "attestation_id": attestation.id,
            "claim": statement.claim,
            "initial_credits": statement.initial_credits,
            "wallet_id": wallet.id,
            "vault_name": namespace["name"],
        },
    )
    next_sequence = conn.execute(_SEQUENCE, {"identity": identity.id}).scalar_one()
    authority = identity_service.authority_view(replace(identity, next_sequence=next_sequence))
    return {
        "agent_id": identity.id,
        "did": identity.did,
        "level": LEVEL_SPONSORED,
        "sponsor_did": sponsor.did,
        "elevated_at": iso(now),
        "sponsor": {"identity_id": sponsor.id, "did": sponsor.did, "kid": sponsor.kid},
        "attestation": attestations.view(attestation),
        "ledger_entry": wallets.entry_view(entry) if entry is not None else None,
        "wallet": wallets.wallet_record(wallet),
        "vault_namespace": namespace,
        "chronicle_entry_id": entry_row.id,
        "authority": authority,
    }


def _vault_namespace(
    conn: Connection,
    project_id: str,
    identity: IdentityRow,
    config: JsonObject,
    *,
    master_key: str | None,
) -> JsonObject:
    """``<agent_id>:config``, the name of the specification's manual fallback. The namespace
    exists once a name in it is written; a config the project already wrote is kept as it is
    (it may hold the project's own values), and the namespace then already exists."""
    name = f"{identity.id}:config"
    try:
        existing = vault.metadata_of(conn, project_id, name)
    except ApiError:
        existing = None
    if existing is not None:
        return {"identity_id": identity.id, "name": name, "created": False, "secret": existing}
    secret, _created = vault.put_secret(
        conn,
        project_id,
        name,
        json.dumps(config, separators=(",", ":"), sort_keys=True),
        description="created by bootstrap elevation",
        master_key=master_key,
    )
    return {"identity_id": identity.id, "name": name, "created": True, "secret": secret}


# Built once: a statement built per call costs more than executing it.
_LEVEL = select(identities.c.level, identities.c.sponsor_did, identities.c.elevated_at).where(
    identities.c.id == bindparam("identity")
)
_SEQUENCE = select(identities.c.next_sequence).where(identities.c.id == bindparam("identity"))
_LEASE = (
    update(identities)
    .where(identities.c.id == bindparam("identity"))
    .values(authority_lease_until=bindparam("until"))
)
_RAISE = (
    update(identities)
    .where(identities.c.id == bindparam("identity"), identities.c.level == LEVEL_BIRTH)
    .values(
        level=LEVEL_SPONSORED,
        sponsor_did=bindparam("sponsor_did"),
        elevated_at=bindparam("now"),
        authority_lease_until=0,
    )
)
_GRANT_ENTRY = (
    select(ledger)
    .where(ledger.c.wallet_id == bindparam("wallet"), ledger.c.reason == GRANT_REASON)
    .order_by(ledger.c.created_at.desc(), ledger.c.id.desc())
    .limit(1)
)
