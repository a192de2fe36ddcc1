"""``hearth.proofs.sealing`` and ``hearth.proofs.pem``: the refusals the golden vectors do not
show. Opening failures are one opaque error, whatever check failed."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from hearth.proofs.pem import x25519_public_from_pem
from hearth.proofs.sealing import (
    NONCE_BYTES,
    TAG_BYTES,
    SealError,
    decrypt,
    encrypt,
    open_sealed,
    seal,
)

KEY = bytes(range(32))
AAD = b"ctx\x00row"

NOT_OPENING: dict[str, Callable[[bytes], bytes]] = {
    "too short for a nonce and a tag": lambda sealed: sealed[: NONCE_BYTES + TAG_BYTES - 1],
    "one bit flipped": lambda sealed: sealed[:-1] + bytes([sealed[-1] ^ 1]),
    "another nonce": lambda sealed: bytes(NONCE_BYTES) + sealed[NONCE_BYTES:],
}


@pytest.mark.parametrize("alter", NOT_OPENING.values(), ids=NOT_OPENING.keys())
def test_an_altered_sealed_value_does_not_open(alter: Callable[[bytes], bytes]) -> None:
    sealed = seal(KEY, b"secret", AAD)
    assert open_sealed(KEY, sealed, AAD) == b"secret"
    with pytest.raises(SealError):
        open_sealed(KEY, alter(sealed), AAD)


def test_wrong_key_or_associated_data_is_the_same_error() -> None:
    sealed = seal(KEY, b"secret", AAD)
    for key, aad in ((bytes(32), AAD), (KEY, AAD + b"x"), (bytes(16), AAD)):
        with pytest.raises(SealError):
            open_sealed(key, sealed, aad)


def test_two_seals_of_one_value_differ() -> None:
    assert seal(KEY, b"secret", AAD) != seal(KEY, b"secret", AAD)


def test_encrypt_refuses_other_key_and_nonce_sizes() -> None:
    with pytest.raises(ValueError, match="AES-256-GCM key must be 32 bytes"):
        encrypt(bytes(16), bytes(NONCE_BYTES), b"x", AAD)
    with pytest.raises(ValueError, match="nonce must be 12 bytes"):
        encrypt(KEY, bytes(8), b"x", AAD)
    with pytest.raises(SealError):
        decrypt(KEY, bytes(8), bytes(TAG_BYTES), AAD)


def _pem_private(key: X25519PrivateKey | Ed25519PrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def test_x25519_public_key_from_a_public_or_a_private_pem() -> None:
    key = X25519PrivateKey.generate()
    public_pem = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    raw = key.public_key().public_bytes_raw()
    assert x25519_public_from_pem(public_pem) == raw
    assert x25519_public_from_pem(_pem_private(key)) == raw


PEM_REFUSALS = {
    "an Ed25519 private key": (_pem_private(Ed25519PrivateKey.generate()), "not an X25519 key"),
    "an Ed25519 public key": (
        Ed25519PrivateKey.generate()
        .public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo),
        "not an X25519 key",
    ),
    "not PEM": (b"hello", "neither an X25519 public key nor an unencrypted private key"),
}


@pytest.mark.parametrize(("data", "message"), PEM_REFUSALS.values(), ids=PEM_REFUSALS.keys())
def test_other_pem_is_refused(data: bytes, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        x25519_public_from_pem(data)
