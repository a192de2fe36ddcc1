"""Key pairs and their PKCS#8 PEM form (bytes in, bytes out: reading and writing files is the
caller's business).

An ADDS principal has an Ed25519 signing key; a reader also has an X25519 box key, to which
grants wrap content keys. Every command that takes a private key reads PKCS#8 PEM, unencrypted.
"""

from __future__ import annotations

from dataclasses import dataclass

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from .b64 import b64url_encode
from .problems import AddsError

__all__ = [
    "KeyPair",
    "generate_key_pair",
    "load_ed25519_private_key",
    "load_x25519_private_key",
    "private_key_pem",
]


@dataclass(frozen=True)
class KeyPair:
    """An Ed25519 signing key and an X25519 box key for one principal."""

    signing: Ed25519PrivateKey
    box: X25519PrivateKey

    @property
    def signing_public(self) -> bytes:
        return self.signing.public_key().public_bytes_raw()

    @property
    def box_public(self) -> bytes:
        return self.box.public_key().public_bytes_raw()

    def describe(self) -> dict[str, str]:
        """The public halves as base64url, for printing."""
        return {
            "ed25519_public_key": b64url_encode(self.signing_public),
            "x25519_public_key": b64url_encode(self.box_public),
        }


def generate_key_pair() -> KeyPair:
    return KeyPair(Ed25519PrivateKey.generate(), X25519PrivateKey.generate())


def private_key_pem(key: Ed25519PrivateKey | X25519PrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _load(pem: bytes, expected: type, name: str) -> object:
    try:
        key = serialization.load_pem_private_key(pem, password=None)
    except (ValueError, TypeError) as exc:
        raise AddsError.single(
            "key.unreadable", f"not an unencrypted PKCS#8 PEM key: {exc}"
        ) from None
    if not isinstance(key, expected):
        raise AddsError.single("key.wrong_type", f"expected an {name} private key")
    return key


def load_ed25519_private_key(pem: bytes) -> Ed25519PrivateKey:
    key = _load(pem, Ed25519PrivateKey, "Ed25519")
    assert isinstance(key, Ed25519PrivateKey)
    return key


def load_x25519_private_key(pem: bytes) -> X25519PrivateKey:
    key = _load(pem, X25519PrivateKey, "X25519")
    assert isinstance(key, X25519PrivateKey)
    return key
