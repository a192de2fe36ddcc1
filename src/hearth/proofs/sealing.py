"""AES-256-GCM with associated data for hearth's own secrets: the one AEAD recipe of the service
and the client (ADDS's chunks and key wraps keep theirs, in ``hearth.adds.aead``, on the same
primitive).

- :func:`encrypt` / :func:`decrypt`: ciphertext || 16-byte tag under a 32-byte key and a 12-byte
  nonce kept apart (a strand thought stores its nonce in a column of its own).
- :func:`seal` / :func:`open_sealed`: a *sealed value*, the 12-byte nonce followed by the
  ciphertext and its tag (secrets at rest: the provider key, the vault, runtime keys; a key
  backup). :func:`seal_with_nonce` is the deterministic twin, for vectors and tests only.
- The associated data binds a ciphertext to where it is kept: :func:`associated_data` joins a
  context string and the row's fields with 0x00 bytes, so a value moved to another row does
  not open.
- :func:`derive_key`: the key for one use of ``SERVICE_KMS_MASTER_KEY`` (HKDF-SHA256 of its
  UTF-8 bytes, no salt, one ``info`` per use), so one master key gives independent keys.

The AES-256-GCM itself is ``hearth.adds.aead.aes_gcm_encrypt``/``aes_gcm_decrypt``: one
definition in hearth. Opening failures are opaque: :class:`SealError`, whatever failed.
"""

from __future__ import annotations

import os

from hearth.adds.aead import aes_gcm_decrypt, aes_gcm_encrypt

from .kdf import KEY_BYTES, hkdf

__all__ = [
    "KEY_BYTES",
    "NONCE_BYTES",
    "TAG_BYTES",
    "SealError",
    "associated_data",
    "decrypt",
    "derive_key",
    "encrypt",
    "open_sealed",
    "seal",
    "seal_with_nonce",
]

NONCE_BYTES = 12
TAG_BYTES = 16


class SealError(Exception):
    """A sealed value does not open under this key and associated data."""


def derive_key(master_key: str, info: bytes) -> bytes:
    """A 32-byte key for one use (``info``) of the master key: HKDF-SHA256, no salt."""
    return hkdf(master_key.encode("utf-8"), info)


def associated_data(*parts: bytes) -> bytes:
    """The parts joined by 0x00 bytes (a context string first, then the row's fields)."""
    return b"\x00".join(parts)


def encrypt(key: bytes, nonce: bytes, plaintext: bytes, aad: bytes) -> bytes:
    """AES-256-GCM(key, nonce, plaintext, aad): ciphertext || tag. ValueError for a key that is
    not 32 bytes or a nonce that is not 12."""
    return aes_gcm_encrypt(key, nonce, aad, plaintext)


def decrypt(key: bytes, nonce: bytes, ciphertext: bytes, aad: bytes) -> bytes:
    """The plaintext of ciphertext || tag, or :class:`SealError` (wrong key, nonce or associated
    data, altered bytes, or lengths that cannot be right)."""
    try:
        return aes_gcm_decrypt(key, nonce, aad, ciphertext)
    except ValueError:
        raise SealError("the ciphertext does not open under this key") from None


def seal_with_nonce(key: bytes, nonce: bytes, plaintext: bytes, aad: bytes) -> bytes:
    """The deterministic twin of :func:`seal`: never reuse a nonce under one key."""
    return nonce + encrypt(key, nonce, plaintext, aad)


def seal(key: bytes, plaintext: bytes, aad: bytes) -> bytes:
    """nonce (12 random bytes) || AES-256-GCM(key, nonce, plaintext, aad)."""
    return seal_with_nonce(key, os.urandom(NONCE_BYTES), plaintext, aad)


def open_sealed(key: bytes, sealed: bytes, aad: bytes) -> bytes:
    """The plaintext of a sealed value, or :class:`SealError`."""
    if len(sealed) < NONCE_BYTES + TAG_BYTES:
        raise SealError("sealed value too short")
    return decrypt(key, sealed[:NONCE_BYTES], sealed[NONCE_BYTES:], aad)
