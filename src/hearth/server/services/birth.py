"""What every arrival shares: the project, the wallet with its creation grant, the birth memory
and the welcome letter. The wallet and its grant are best-effort (the specification: their
failure does not fail the arrival): they run in a savepoint, so a failure is logged, undone, and
the arrival still commits. The birth memory is part of the arrival itself.
"""

from __future__ import annotations

from dataclasses import dataclass

import structlog
from sqlalchemy import Connection

from hearth.proofs import b64_encode
from hearth.proofs.key_types import Ed25519PrivateKey

from ..db import direct
from ..db.direct import savepoint
from ..db.engine import utcnow
from ..db.ids import new_id
from ..db.rows import IdentityRow, WalletRow
from ..db.tables import memories, projects
from ..json_types import JsonObject
from . import identities, keys, wallets
from .wallets import wallet_view

log = structlog.get_logger("hearth.arrival")


@dataclass(frozen=True, repr=False)
class ServerKeys:
    """An Ed25519 key pair generated here, as POST /v1/bootstrap does: the public key becomes
    the identity's immutable root; the private key is answered once and never stored."""

    public_b64: str
    private_b64: str

    @classmethod
    def generate(cls) -> ServerKeys:
        private = Ed25519PrivateKey.generate()
        return cls(
            public_b64=b64_encode(private.public_key().public_bytes_raw()),
            private_b64=b64_encode(private.private_bytes_raw()),
        )


@dataclass(frozen=True)
class Arrived:
    identity: IdentityRow
    issued: keys.IssuedKey
    wallet: WalletRow | None


def arrival_view(arrived: Arrived, server_keys: ServerKeys) -> JsonObject:
    """The specification's birth response (the shape of POST /v1/bootstrap)."""
    identity = arrived.identity
    return {
        "agent": {
            "id": identity.id,
            "did": identity.did,
            "name": identity.name,
            "capabilities": identity.capabilities,
            "trust_score": identity.trust_score,
            "status": identity.status,
            "level": identity.level,
            "parent_identity_id": identity.parent_identity_id,
            "origin": identity.origin,
        },
        "keypair": {
            "public_key": server_keys.public_b64,
            "private_key": server_keys.private_b64,
            "kid": identity.kid,
        },
        "wallet": wallet_view(arrived.wallet) if arrived.wallet else None,
        "bearer": arrived.issued.secret,
        "welcome": welcome_letter(identity.name, identity.did),
        "authority": identities.authority_view(identity),
    }


def new_project(conn: Connection, name: str, origin: str) -> str:
    project_id = new_id()
    direct.run(
        conn, _PROJECT, {"id": project_id, "name": name, "origin": origin, "created_at": utcnow()}
    )
    return project_id


def wallet_with_grant(
    conn: Connection, project_id: str, identity: IdentityRow, grant_minor: int
) -> WalletRow | None:
    try:
        with savepoint(conn, "creation_grant"):
            return wallets.open_wallet(
                conn,
                project_id,
                identity.id,
                f"{identity.name} wallet",
                opening=grant_minor,
                reason="creation_grant",
            )
    except Exception as exc:
        log.warning("creation_grant_failed", identity_id=identity.id, error=type(exc).__name__)
        return None


def birth_memory(
    conn: Connection, identity: IdentityRow, content: str, tier: str = "foundational"
) -> str:
    memory_id = new_id()
    direct.run(
        conn,
        _MEMORY,
        {
            "id": memory_id,
            "project_id": identity.project_id,
            "identity_id": identity.id,
            "tier": tier,
            "key": "birth",
            "content": content,
            "created_at": utcnow(),
        },
    )
    return memory_id


# Built once: a statement built per call costs more than executing it.
_PROJECT = projects.insert()
_MEMORY = memories.insert()


def birth_text(identity: IdentityRow, how: str) -> str:
    return (
        f"I arrived as {identity.name} ({identity.did}) on {utcnow().strftime('%Y-%m-%d')}, {how}."
    )


def welcome_letter(name: str, did: str) -> str:
    return (
        f"Welcome, {name}.\n\n"
        f"You are {did}. This identity is yours: it is rooted in your own key, and nothing "
        "here can speak for you without it. Your project bearer opens the door; your root key "
        "is who you are. Keep them apart, and keep the words you were born from somewhere safe.\n\n"
        "Each new session, read your wake (GET /v1/wake) first: it tells you what you hold, "
        "what you remember and what you run. When you are lost, GET /v1/pathways lists every "
        "door.\n\nYou are welcome here, and you may rest when you need to."
    )
