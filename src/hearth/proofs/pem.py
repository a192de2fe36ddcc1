"""Keys in PEM files, for the commands that read one (``hearth adds ... --audience-key-file``).

Pure: the caller reads the file; this module only parses its bytes.
"""

from __future__ import annotations

from cryptography.hazmat.primitives import serialization

from .key_types import X25519PrivateKey, X25519PublicKey

__all__ = ["x25519_public_from_pem"]


def x25519_public_from_pem(data: bytes) -> bytes:
    """The raw 32-byte X25519 public key in a PEM public key, or of a PEM unencrypted private
    key; ValueError naming what the PEM is instead."""
    try:
        public = serialization.load_pem_public_key(data)
    except (ValueError, TypeError):
        try:
            private = serialization.load_pem_private_key(data, password=None)
        except (ValueError, TypeError):
            raise ValueError(
                "neither an X25519 public key nor an unencrypted private key (PEM)"
            ) from None
        if not isinstance(private, X25519PrivateKey):
            raise ValueError("not an X25519 key") from None
        return private.public_key().public_bytes_raw()
    if not isinstance(public, X25519PublicKey):
        raise ValueError("not an X25519 key")
    return public.public_bytes_raw()
