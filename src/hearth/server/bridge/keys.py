"""The per-runtime signing key of a bridged runtime: the key the hosted side signs bridge
requests with. It never leaves the service; the bridge learns its public half in the handshake.

It is generated at the runtime's first handshake (provisioning stays as it is) and kept sealed
in ``runtimes.key_material``, in a format of its own (the column is ``trusted`` custody's too,
but a runtime has one mode, so the mode says which format a row holds):

    public key (32 bytes) || scheme (1 byte) || nonce (12) || AES-256-GCM(seed) (48)

- The public key comes first, in clear, as in a trusted row: ``services.runtimes.view`` answers
  ``runtime_public_key`` from those 32 bytes, for either mode.
- Scheme 0x01: sealed under a key derived from ``SERVICE_KMS_MASTER_KEY`` (HKDF-SHA256, info
  ``hearth/bridge-runtime-key/v1``). Scheme 0x02: without the master key, under an installation
  key of 32 random bytes kept in ``vault_keys`` under the id ``bridge-runtime-keys`` (the
  vault's own fallback, with a key of its own). As in the vault, the seed is then never stored
  in plain, but whoever reads the whole database can open it: production sets the master key.
- The associated data is ``hearth-bridge-runtime-key/v1`` 0x00 runtime id 0x00 public key, so
  a sealed seed opens only as its own runtime's key.
"""

from __future__ import annotations

import os

from sqlalchemy import Connection, select
from sqlalchemy.dialects import postgresql, sqlite

from hearth.proofs.key_types import Ed25519PrivateKey
from hearth.proofs.sealing import (
    KEY_BYTES,
    SealError,
    associated_data,
    derive_key,
    open_sealed,
    seal,
)

from ..db.engine import utcnow
from ..db.rows import RuntimeRow
from ..db.tables import vault_keys
from ..services import runtimes as runtime_service

PUBLIC_KEY_BYTES = 32
SCHEME_KMS = 0x01
SCHEME_LOCAL = 0x02
LOCAL_KEY_ID = "bridge-runtime-keys"
_KMS_INFO = b"hearth/bridge-runtime-key/v1"
_AAD_CONTEXT = b"hearth-bridge-runtime-key/v1"

_READ_LOCAL = select(vault_keys.c.key).where(vault_keys.c.id == LOCAL_KEY_ID)
_INSERT_LOCAL = {
    "postgresql": postgresql.insert(vault_keys).on_conflict_do_nothing(index_elements=["id"]),
    "sqlite": sqlite.insert(vault_keys).on_conflict_do_nothing(index_elements=["id"]),
}


class RuntimeKeyUnavailable(Exception):
    """The stored key does not open: sealed under a master key that is missing or different, or
    its installation key is gone. The message never carries key material."""


def _aad(runtime_id: str, public_key: bytes) -> bytes:
    return associated_data(_AAD_CONTEXT, runtime_id.encode("ascii"), public_key)


def _local_key(conn: Connection, *, create: bool) -> bytes | None:
    row = conn.execute(_READ_LOCAL).first()
    if row is None and create:
        conn.execute(
            _INSERT_LOCAL[conn.dialect.name],
            {"id": LOCAL_KEY_ID, "key": os.urandom(KEY_BYTES), "created_at": utcnow()},
        )
        row = conn.execute(_READ_LOCAL).first()  # of two first writers, the winner's key
    return bytes(row.key) if row is not None else None


def wrap(
    conn: Connection, runtime_id: str, key: Ed25519PrivateKey, master_key: str | None
) -> bytes:
    public = key.public_key().public_bytes_raw()
    if master_key:
        scheme, kek = SCHEME_KMS, derive_key(master_key, _KMS_INFO)
    else:
        local = _local_key(conn, create=True)
        assert local is not None
        scheme, kek = SCHEME_LOCAL, local
    return public + bytes([scheme]) + seal(kek, key.private_bytes_raw(), _aad(runtime_id, public))


def unwrap(
    conn: Connection, runtime_id: str, material: bytes, master_key: str | None
) -> Ed25519PrivateKey:
    if len(material) <= PUBLIC_KEY_BYTES + 1:
        raise RuntimeKeyUnavailable("the runtime's key material is not a bridged runtime key")
    public, scheme, sealed = (
        material[:PUBLIC_KEY_BYTES],
        material[PUBLIC_KEY_BYTES],
        material[PUBLIC_KEY_BYTES + 1 :],
    )
    if scheme == SCHEME_KMS:
        if not master_key:
            raise RuntimeKeyUnavailable("sealed under SERVICE_KMS_MASTER_KEY, which is not set")
        kek = derive_key(master_key, _KMS_INFO)
    elif scheme == SCHEME_LOCAL:
        local = _local_key(conn, create=False)
        if local is None:
            raise RuntimeKeyUnavailable("the installation's bridge runtime key is missing")
        kek = local
    else:
        raise RuntimeKeyUnavailable(f"unknown sealing scheme {scheme}")
    try:
        seed = open_sealed(kek, sealed, _aad(runtime_id, public))
    except SealError:
        raise RuntimeKeyUnavailable("the runtime's key does not open under this key") from None
    key = Ed25519PrivateKey.from_private_bytes(seed)
    if key.public_key().public_bytes_raw() != public:
        raise RuntimeKeyUnavailable("the runtime's key material does not match its public key")
    return key


def ensure_runtime_key(
    conn: Connection, runtime: RuntimeRow, master_key: str | None
) -> Ed25519PrivateKey:
    """The runtime's signing key, generated and stored on first use (of two first handshakes,
    both use the one stored first: ``runtimes.keep_key_material``)."""
    material = runtime.key_material
    if material is None:
        candidate = wrap(conn, runtime.id, Ed25519PrivateKey.generate(), master_key)
        material = runtime_service.keep_key_material(conn, runtime.id, candidate)
    return unwrap(conn, runtime.id, bytes(material), master_key)


__all__ = [
    "LOCAL_KEY_ID",
    "SCHEME_KMS",
    "SCHEME_LOCAL",
    "RuntimeKeyUnavailable",
    "ensure_runtime_key",
    "unwrap",
    "wrap",
]
