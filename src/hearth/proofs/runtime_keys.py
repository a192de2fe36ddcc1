"""A runtime's secrets, as the service keeps them (docs/runtimes.md): the control token's hash,
a trusted runtime's key material, and the K_master derived from it.

- Control token: ``hrt_`` and 32 random bytes in base64url, answered once; the service keeps
  only its SHA-256 (lower-case hex) and compares in constant time.
- Trusted key material: the 32-byte Ed25519 public key in clear (not a secret: a view answers
  it without the master key), then the sealed 32-byte seed (``proofs.sealing.seal``) under
  HKDF(``SERVICE_KMS_MASTER_KEY``, info ``hearth/runtime-key-wrap/v1``), with the associated
  data ``hearth-runtime-key/v1`` 0x00 runtime id 0x00 public key, so that it opens only as its
  own runtime's key.
- Trusted K_master: HKDF-SHA256 over the runtime's seed, no salt, info
  ``hearth/trusted-strand-master/v1`` 0x00 runtime id. One secret (the wrapped seed) stands
  behind both the signing key and K_master; the info separates their uses, and the runtime id
  makes each runtime's K_master its own.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets

from .kdf import hkdf
from .key_types import Ed25519PrivateKey
from .sealing import NONCE_BYTES, associated_data, derive_key, open_sealed, seal_with_nonce

__all__ = [
    "CONTROL_TOKEN_PREFIX",
    "PUBLIC_KEY_BYTES",
    "TRUSTED_K_MASTER_INFO",
    "control_token_hash",
    "control_token_matches",
    "material_public_key",
    "new_control_token",
    "trusted_k_master",
    "unwrap_runtime_key",
    "wrap_runtime_key",
    "wrap_runtime_key_with_nonce",
]

CONTROL_TOKEN_PREFIX = "hrt_"
PUBLIC_KEY_BYTES = 32
TRUSTED_K_MASTER_INFO = b"hearth/trusted-strand-master/v1"
_KEY_WRAP_INFO = b"hearth/runtime-key-wrap/v1"
_KEY_AAD_CONTEXT = b"hearth-runtime-key/v1"


def control_token_hash(token: str) -> str:
    """SHA-256 of the token's UTF-8 bytes, lower-case hex: all the service keeps of it."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def new_control_token() -> tuple[str, str]:
    """(token, its hash): the token is answered once, only the hash is kept."""
    token = CONTROL_TOKEN_PREFIX + secrets.token_urlsafe(32)
    return token, control_token_hash(token)


def control_token_matches(stored_hash: str, token: str) -> bool:
    """Whether ``token`` hashes to ``stored_hash`` (constant-time compare)."""
    return hmac.compare_digest(stored_hash, control_token_hash(token))


def material_public_key(material: bytes) -> bytes:
    """The public key at the head of a runtime's key material (either custody's format)."""
    return material[:PUBLIC_KEY_BYTES]


def _key_aad(runtime_id: str, public_key: bytes) -> bytes:
    return associated_data(_KEY_AAD_CONTEXT, runtime_id.encode("ascii"), public_key)


def wrap_runtime_key_with_nonce(
    runtime_id: str, key: Ed25519PrivateKey, master_key: str, nonce: bytes
) -> bytes:
    """The deterministic twin of :func:`wrap_runtime_key`, for vectors and tests: never reuse a
    nonce under one master key."""
    public = key.public_key().public_bytes_raw()
    kek = derive_key(master_key, _KEY_WRAP_INFO)
    return public + seal_with_nonce(
        kek, nonce, key.private_bytes_raw(), _key_aad(runtime_id, public)
    )


def wrap_runtime_key(runtime_id: str, key: Ed25519PrivateKey, master_key: str) -> bytes:
    """A trusted runtime's key material: public key || sealed seed, under a fresh nonce."""
    return wrap_runtime_key_with_nonce(runtime_id, key, master_key, os.urandom(NONCE_BYTES))


def unwrap_runtime_key(material: bytes, runtime_id: str, master_key: str) -> Ed25519PrivateKey:
    """The trusted runtime's signing key: ``SealError`` when it does not open under
    ``master_key`` (or for another runtime), ValueError when the seed does not match the public
    key beside it."""
    public, sealed = material[:PUBLIC_KEY_BYTES], material[PUBLIC_KEY_BYTES:]
    seed = open_sealed(derive_key(master_key, _KEY_WRAP_INFO), sealed, _key_aad(runtime_id, public))
    key = Ed25519PrivateKey.from_private_bytes(seed)
    if key.public_key().public_bytes_raw() != public:
        raise ValueError("the runtime's key material does not match its public key")
    return key


def trusted_k_master(seed: bytes, runtime_id: str) -> bytes:
    """K_master of a trusted runtime, from its 32-byte Ed25519 seed (32 bytes)."""
    return hkdf(seed, TRUSTED_K_MASTER_INFO + b"\x00" + runtime_id.encode("ascii"))
