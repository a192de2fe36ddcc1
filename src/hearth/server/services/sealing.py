"""AES-256-GCM sealing of small secrets at rest, shared by the provider key and the vault.

A sealed value is the 12-byte random nonce followed by the AES-256-GCM ciphertext and its tag.
The associated data binds a ciphertext to where it is kept (its row), so it cannot be moved to
another row and still open. Keys derived from ``SERVICE_KMS_MASTER_KEY`` go through HKDF-SHA256
(no salt) with an ``info`` string per use, so that one master key gives independent keys.
"""

from __future__ import annotations

import os

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

NONCE_BYTES = 12
KEY_BYTES = 32
TAG_BYTES = 16


class SealError(Exception):
    """A sealed value does not open under this key and associated data."""


def derive_key(master_key: str, info: bytes) -> bytes:
    """A 32-byte key for one use (``info``) of the master key: HKDF-SHA256, no salt."""
    return HKDF(algorithm=hashes.SHA256(), length=KEY_BYTES, salt=None, info=info).derive(
        master_key.encode("utf-8")
    )


def associated_data(*parts: bytes) -> bytes:
    """The parts joined by 0x00 bytes (a context string first, then the row's fields)."""
    return b"\x00".join(parts)


def seal(key: bytes, plaintext: bytes, aad: bytes) -> bytes:
    """nonce (12 random bytes) || AES-256-GCM(key, nonce, plaintext, aad)."""
    nonce = os.urandom(NONCE_BYTES)
    return nonce + AESGCM(key).encrypt(nonce, plaintext, aad)


def open_sealed(key: bytes, sealed: bytes, aad: bytes) -> bytes:
    if len(sealed) < NONCE_BYTES + TAG_BYTES:
        raise SealError("sealed value too short")
    nonce, body = sealed[:NONCE_BYTES], sealed[NONCE_BYTES:]
    try:
        return AESGCM(key).decrypt(nonce, body, aad)
    except InvalidTag:
        raise SealError("sealed value does not open under this key") from None


__all__ = ["SealError", "associated_data", "derive_key", "open_sealed", "seal"]
