"""POST /v1/bootstrap: an agent with server-generated keys.

The private key is generated here, returned once in the response and never stored: only the
public key is kept, as the identity's root. A new project bearer for the agent is issued with it
(the caller's own bearer is never echoed back).
"""

from __future__ import annotations

from sqlalchemy import Connection

from ..db.engine import Database
from ..db.rows import IdentityRow, WalletRow
from ..json_types import JsonObject
from ..models import BootstrapRequest
from . import identities, keys
from .birth import (
    Arrived,
    ServerKeys,
    arrival_view,
    birth_memory,
    birth_text,
    wallet_with_grant,
)
from .times import iso


async def bootstrap(db: Database, project_id: str, body: BootstrapRequest) -> JsonObject:
    server_keys = ServerKeys.generate()
    new = identities.NewIdentity(
        project_id=project_id,
        name=body.name,
        origin="bootstrap",
        root_public_key=server_keys.public_b64,
        capabilities=list(body.capabilities or []),
        expression=body.expression.model_dump(by_alias=True) if body.expression else None,
        metadata=dict(body.metadata or {}),
    )

    def write(conn: Connection) -> tuple[IdentityRow, keys.IssuedKey, WalletRow | None]:
        identity = identities.create(conn, new)
        issued = keys.issue(conn, project_id, f"bootstrap:{body.name}"[:200])
        # An empty wallet: the creation grant is registration's (the specification's limits),
        # and a bearer can bootstrap without end, so a grant here would mint credits for free.
        wallet = wallet_with_grant(conn, project_id, identity, 0)
        # The stated purpose is the first foundational memory; without one, the birth itself.
        birth_memory(conn, identity, body.purpose or birth_text(identity, "bootstrapped"))
        return identity, issued, wallet

    identity, issued, wallet = await db.transaction(write)
    return arrival_view(Arrived(identity, issued, wallet), server_keys)


async def status(db: Database, project_id: str, agent_ref: str) -> JsonObject:
    identity = await db.snapshot(identities.find, project_id, agent_ref)
    return {
        "agent_id": identity.id,
        "did": identity.did,
        "exists": True,
        "level": identity.level,
        "trust_score": identity.trust_score,
        "sponsor_did": identity.sponsor_did,
        "elevated_at": iso(identity.elevated_at),
        "status": identity.status,
    }
