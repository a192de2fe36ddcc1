"""Key derivation: one recipe for keys drawn from a secret, one for keys drawn from a passphrase.

- :func:`hkdf` is HKDF-SHA256 (RFC 5869), ADDS's own ``hearth.adds.aead.hkdf_sha256`` (pinned by
  Wycheproof), so hearth has one HKDF. Its uses, each with its own ``info`` label so one secret
  gives independent keys: the identity keys of a mnemonic (``hearth/ed25519-root/v1``,
  ``hearth/x25519-box/v1``, ``hearth/strand-master/v1``), the keys sealing secrets at rest under
  ``SERVICE_KMS_MASTER_KEY`` (``proofs.sealing.derive_key``), a trusted runtime's K_master
  (``proofs.runtime_keys.trusted_k_master``), a bridge session's secret (``bridge-session/v1``)
  and ADDS's key-wrap KEK.
- :func:`argon2id` is the passphrase key of a client's key backup.
"""

from __future__ import annotations

from cryptography.hazmat.primitives.kdf.argon2 import Argon2id

from hearth.adds.aead import hkdf_sha256

__all__ = ["KEY_BYTES", "argon2id", "hkdf"]

KEY_BYTES = 32  # every derived key is an AES-256 key or a 32-byte seed


def hkdf(ikm: bytes, info: bytes, *, salt: bytes = b"", length: int = KEY_BYTES) -> bytes:
    """HKDF-SHA256(ikm, salt, info), ``length`` bytes. No salt (the default) is the RFC's salt
    of 32 zero bytes."""
    return hkdf_sha256(ikm, salt, info, length)


def argon2id(
    passphrase: bytes, salt: bytes, *, iterations: int, memory_kib: int, lanes: int
) -> bytes:
    """Argon2id(passphrase, salt) -> 32 bytes (RFC 9106). The caller bounds the parameters: they
    may come from a server that wants the client to burn memory."""
    kdf = Argon2id(
        salt=salt, length=KEY_BYTES, iterations=iterations, lanes=lanes, memory_cost=memory_kib
    )
    return kdf.derive(passphrase)
