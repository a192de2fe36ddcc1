"""The service's own Ed25519 provider key: it signs the provider records and the receipts.

From ``SERVICE_PROVIDER_KEY_FILE`` (PKCS#8 PEM) when set. Otherwise one key is generated on first
use and kept in ``provider_keys`` under a fixed id, so that every worker on the database signs
with the same key: the first insert wins (ON CONFLICT DO NOTHING) and every process reads the
winner back. With ``SERVICE_KMS_MASTER_KEY`` set, the stored seed is wrapped with AES-256-GCM
under a key derived from it (HKDF-SHA256); without it the seed is stored as is.
"""

from __future__ import annotations

import asyncio

import anyio
import structlog
from sqlalchemy import select

from hearth.adds import AddsError, b64url_encode
from hearth.adds.keys import load_ed25519_private_key
from hearth.proofs.key_types import Ed25519PrivateKey, X25519PrivateKey
from hearth.proofs.life_import import provider_box_key
from hearth.proofs.sealing import SealError, associated_data, derive_key, open_sealed, seal

from ..db.engine import Database, dialect_insert, utcnow
from ..db.tables import provider_keys
from ..settings import Settings

log = structlog.get_logger("hearth.server")

KEY_ID = "primary"
UNWRAPPED = "none"
WRAPPED = "aes-256-gcm/hkdf-sha256/v1"
_KEK_INFO = b"hearth/provider-key-wrap/v1"
_AAD_CONTEXT = b"hearth-provider-key/v1"


class ProviderKeyUnavailable(Exception):
    """The stored key cannot be opened: wrapped, and the master key is missing or different."""


def _aad(key_id: str, public_key: str) -> bytes:
    # Binds the ciphertext to its row: it cannot be moved to another id or paired with another
    # public key.
    return associated_data(_AAD_CONTEXT, key_id.encode("ascii"), public_key.encode("ascii"))


def wrap_seed(seed: bytes, *, master_key: str, key_id: str, public_key: str) -> bytes:
    """nonce (12 bytes) || AES-256-GCM(seed) under the key derived from ``master_key``."""
    return seal(derive_key(master_key, _KEK_INFO), seed, _aad(key_id, public_key))


def unwrap_seed(material: bytes, *, master_key: str, key_id: str, public_key: str) -> bytes:
    try:
        return open_sealed(
            derive_key(master_key, _KEK_INFO), bytes(material), _aad(key_id, public_key)
        )
    except SealError:
        raise ProviderKeyUnavailable(
            "the stored provider key does not open under SERVICE_KMS_MASTER_KEY"
        ) from None


def public_key_b64url(key: Ed25519PrivateKey) -> str:
    return b64url_encode(key.public_key().public_bytes_raw())


class ProviderKeyring:
    """Loads (or creates) the provider key once per process and keeps it in memory."""

    def __init__(self, settings: Settings, db: Database) -> None:
        self.settings = settings
        self.db = db
        self._key: Ed25519PrivateKey | None = None
        self._lock = asyncio.Lock()

    async def key(self) -> Ed25519PrivateKey:
        if self._key is not None:
            return self._key
        async with self._lock:
            if self._key is None:
                if self.settings.provider_key_file is not None:
                    self._key = await self._from_file()
                else:
                    self._key = await self._from_database()
        return self._key

    async def _from_file(self) -> Ed25519PrivateKey:
        path = self.settings.provider_key_file
        assert path is not None
        try:
            pem = await anyio.Path(path).read_bytes()
            return load_ed25519_private_key(pem)
        except (OSError, AddsError) as exc:
            # The path is configuration, not a secret; the key's bytes never reach a message.
            raise ProviderKeyUnavailable(f"SERVICE_PROVIDER_KEY_FILE {path}: {exc}") from None

    async def box_key(self) -> X25519PrivateKey:
        """The service's X25519 key, derived from the provider key (an import's grants are
        made to it; ``hearth.proofs.life_import.provider_box_key``)."""
        return provider_box_key(await self.key())

    async def existing(self) -> Ed25519PrivateKey | None:
        """The key when there is one already, None otherwise; never makes one. For readers
        (the provider record's GET), which must write nothing."""
        if self._key is not None:
            return self._key
        if self.settings.provider_key_file is not None:
            return await self.key()
        async with self._lock:
            if self._key is None:
                self._key = await self._stored()
        return self._key

    async def _stored(self) -> Ed25519PrivateKey | None:
        async with self.db.read() as conn:
            row = (
                await conn.execute(select(provider_keys).where(provider_keys.c.id == KEY_ID))
            ).first()
        return None if row is None else self._open(row.private_key, row.wrapping, row.public_key)

    async def _from_database(self) -> Ed25519PrivateKey:
        key = await self._stored()
        if key is None:
            await self._generate()
            key = await self._stored()
            assert key is not None  # ours, or the one another process inserted first
        return key

    async def _generate(self) -> None:
        key = Ed25519PrivateKey.generate()
        public_key = public_key_b64url(key)
        seed = key.private_bytes_raw()
        master_key = self.settings.kms_master_key
        if master_key:
            material = wrap_seed(seed, master_key=master_key, key_id=KEY_ID, public_key=public_key)
            wrapping = WRAPPED
        else:
            material, wrapping = seed, UNWRAPPED
        async with self.db.write() as conn:
            insert = dialect_insert(conn)
            result = await conn.execute(
                insert(provider_keys)
                .values(
                    id=KEY_ID,
                    public_key=public_key,
                    private_key=material,
                    wrapping=wrapping,
                    created_at=utcnow(),
                )
                .on_conflict_do_nothing(index_elements=["id"])
            )
        if result.rowcount == 1:
            log.info("provider_key_generated", public_key=public_key, wrapping=wrapping)

    def _open(self, material: bytes, wrapping: str, public_key: str) -> Ed25519PrivateKey:
        if wrapping == WRAPPED:
            master_key = self.settings.kms_master_key
            if not master_key:
                raise ProviderKeyUnavailable(
                    "the stored provider key is wrapped and SERVICE_KMS_MASTER_KEY is not set"
                )
            material = unwrap_seed(
                material, master_key=master_key, key_id=KEY_ID, public_key=public_key
            )
        elif wrapping != UNWRAPPED:
            raise ProviderKeyUnavailable(f"unknown provider key wrapping {wrapping!r}")
        key = Ed25519PrivateKey.from_private_bytes(bytes(material))
        if public_key_b64url(key) != public_key:
            raise ProviderKeyUnavailable("the stored provider key does not match its public key")
        return key


__all__ = ["ProviderKeyUnavailable", "ProviderKeyring", "unwrap_seed", "wrap_seed"]
