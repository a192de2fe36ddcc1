"""Custody adapters: how the hosted loop opens and seals a runtime's thoughts, and which key signs
its writes (docs/orchestrator.md, "Custody").

- ``trusted``: the runtime's Ed25519 seed is unwrapped from ``key_material`` with
  ``SERVICE_KMS_MASTER_KEY`` (``services.runtimes.unwrap_runtime_key``). K_master is derived
  from that seed (``proofs.runtime_keys.trusted_k_master``); the Ed25519 key signs the
  writes, registered among the identity's keys under :func:`runtime_kid` on first use.
- ``bridged``: the hosted loop never holds K_master. Every decrypt and encrypt is a request to
  the user's bridge through the hub of this process (``bridge.hub_for(app)``); the writes are
  signed with the runtime's per-runtime key (``bridge.keys``), which the identity's owner
  registers with a root proof (the service cannot vouch for a key the user's K_master is not
  behind: see the docs).

Failures are :class:`CustodyError` with a short reason that never carries key material.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from sqlalchemy import Connection, select

from hearth.proofs import b64_encode
from hearth.proofs.key_types import Ed25519PrivateKey
from hearth.proofs.runtime_keys import trusted_k_master
from hearth.proofs.sealing import SealError
from hearth.proofs.thoughts import SealedThought, ThoughtOpenError, open_thought, seal_thought

from ..bridge import keys as bridge_keys
from ..bridge.hub import BridgeError, BridgeHub
from ..db.rows import RuntimeRow, ThoughtRow
from ..db.tables import identity_keys
from ..json_types import JsonObject
from ..services import identity_keys as identity_key_service
from ..services import runtimes as runtime_service

KID_PREFIX = "runtime-"


class CustodyError(Exception):
    """The thought could not be opened or sealed, or the runtime's key is unavailable."""


def runtime_kid(runtime_id: str) -> str:
    """The kid a trusted runtime's key is registered under: ``runtime-`` and the runtime's id
    (44 characters, within the kid pattern), so that a signature names its runtime."""
    return KID_PREFIX + runtime_id


class Custody(Protocol):
    """What a think cycle needs from the key holder."""

    signing_key_id: str
    signing_key: Ed25519PrivateKey

    async def open(self, strand_id: str, rows: list[ThoughtRow]) -> list[bytes]: ...

    async def seal(self, strand_id: str, seq: int, plaintext: bytes) -> SealedThought: ...


@dataclass
class TrustedCustody:
    runtime_id: str
    signing_key: Ed25519PrivateKey = field(repr=False)
    k_master: bytes = field(repr=False)
    signing_key_id: str = ""

    def __post_init__(self) -> None:
        self.signing_key_id = runtime_kid(self.runtime_id)

    @classmethod
    def unwrap(cls, runtime: RuntimeRow, master_key: str | None) -> TrustedCustody:
        """Open the runtime's wrapped key (the handshake of trusted custody)."""
        if not master_key:
            raise CustodyError("SERVICE_KMS_MASTER_KEY is not set: the key cannot be unwrapped")
        if runtime.key_material is None:
            raise CustodyError("the runtime has no key material")
        try:
            key = runtime_service.unwrap_runtime_key(runtime, master_key)
        except (SealError, ValueError):
            raise CustodyError(
                "the runtime's key does not unwrap under SERVICE_KMS_MASTER_KEY"
            ) from None
        return cls(runtime.id, key, trusted_k_master(key.private_bytes_raw(), runtime.id))

    def register(self, conn: Connection, identity_id: str) -> JsonObject:
        """Register the signing key among the identity's keys (idempotent)."""
        public = b64_encode(self.signing_key.public_key().public_bytes_raw())
        return identity_key_service.register_runtime_key(
            conn, identity_id, self.runtime_id, public, self.signing_key_id
        )

    def open_sync(self, strand_id: str, rows: list[ThoughtRow]) -> list[bytes]:
        try:
            return [
                open_thought(self.k_master, strand_id, r.seq, r.nonce, r.ciphertext) for r in rows
            ]
        except ThoughtOpenError:
            raise CustodyError("a thought of the strand does not open with this K_master") from None

    async def open(self, strand_id: str, rows: list[ThoughtRow]) -> list[bytes]:
        return self.open_sync(strand_id, rows)

    def seal_sync(self, strand_id: str, seq: int, plaintext: bytes) -> SealedThought:
        return seal_thought(self.k_master, strand_id, seq, plaintext)

    async def seal(self, strand_id: str, seq: int, plaintext: bytes) -> SealedThought:
        return self.seal_sync(strand_id, seq, plaintext)


def registered_kid(
    conn: Connection, identity_id: str | None, runtime_id: str, public_b64: str
) -> str:
    """The kid under which the identity's owner registered this runtime's key, unrevoked (an
    unbound runtime, ``identity_id`` None, has none)."""
    kid = conn.execute(
        select(identity_keys.c.kid).where(
            identity_keys.c.identity_id == identity_id,
            identity_keys.c.runtime_id == runtime_id,
            identity_keys.c.public_key == public_b64,
            identity_keys.c.revoked_at.is_(None),
        )
    ).scalar_one_or_none()
    if kid is None:
        raise CustodyError(
            "the runtime's signing key is not registered for its identity (register "
            "runtime_public_key with POST /v1/identities/{id}/keys, purpose runtime)"
        )
    return str(kid)


@dataclass
class BridgedCustody:
    runtime_id: str
    hub: BridgeHub = field(repr=False)
    signing_key: Ed25519PrivateKey = field(repr=False)
    signing_key_id: str

    @classmethod
    def load(
        cls, conn: Connection, runtime: RuntimeRow, hub: BridgeHub, master_key: str | None
    ) -> BridgedCustody:
        if runtime.key_material is None:
            raise CustodyError("the runtime has no signing key yet (no bridge handshake)")
        try:
            key = bridge_keys.unwrap(conn, runtime.id, bytes(runtime.key_material), master_key)
        except bridge_keys.RuntimeKeyUnavailable as exc:
            raise CustodyError(f"the runtime's signing key is unavailable: {exc}") from None
        public = b64_encode(key.public_key().public_bytes_raw())
        kid = registered_kid(conn, runtime.identity_id, runtime.id, public)
        return cls(runtime.id, hub, key, kid)

    async def open(self, strand_id: str, rows: list[ThoughtRow]) -> list[bytes]:
        try:
            return [
                await self.hub.decrypt(self.runtime_id, strand_id, r.seq, r.nonce, r.ciphertext)
                for r in rows
            ]
        except BridgeError as exc:
            raise CustodyError(f"the bridge did not decrypt ({exc.code})") from None

    async def seal(self, strand_id: str, seq: int, plaintext: bytes) -> SealedThought:
        try:
            nonce, ciphertext = await self.hub.encrypt(self.runtime_id, strand_id, seq, plaintext)
            return SealedThought(nonce, ciphertext)
        except BridgeError as exc:
            raise CustodyError(f"the bridge did not encrypt ({exc.code})") from None
        except ValueError:
            raise CustodyError("the bridge answered a malformed sealed thought") from None


__all__ = [
    "BridgedCustody",
    "Custody",
    "CustodyError",
    "TrustedCustody",
    "registered_kid",
    "runtime_kid",
]
