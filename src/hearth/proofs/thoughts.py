"""Strand thoughts on the wire: sealing under K_master, and the signed write (DESIGN.md section 4).

A thought is AES-256-GCM under K_master with a random 12-byte nonce and the associated data
``strand-thought/v1`` 0x00 strand_id 0x00 thought_seq, so a ciphertext opens only at the strand
and position it was sealed for: moved to another strand or seq, it does not open. The service
stores only ``ciphertext`` and ``nonce`` (wall 7, ``thought_storage_ciphertext_only``) and never
holds K_master for ``self`` and ``bridged`` custody.

K_master is not derived here: ``hearth.client.mnemonic_keys.derive_keys(words).strand_master``
is the one derivation (HKDF-SHA256 of the BIP-39 seed, info ``hearth/strand-master/v1``).

A write is signed with ``recipes.thought_write_digest`` over exactly the bytes stored (strand,
seq, signing key id, nonce, ciphertext); :func:`write_body` builds the request body of
``POST /v1/strands/{id}/thoughts`` from a sealed thought and a signing key.

Pure code: no I/O. Opening failures are opaque (one error, whatever check failed).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from .encoding import b64_encode
from .key_types import Ed25519PrivateKey
from .recipes import recipe_bytes, sign_digest, thought_write_digest, verify_digest
from .sealing import SealError, decrypt, encrypt

THOUGHT_AAD_CONTEXT = "strand-thought/v1"
KEY_BYTES = 32  # AES-256
NONCE_BYTES = 12
TAG_BYTES = 16


class ThoughtOpenError(ValueError):
    """The thought does not open: wrong key, another strand or seq, or altered bytes."""


@dataclass(frozen=True)
class SealedThought:
    """What the service stores of a thought: the nonce and the ciphertext (tag included)."""

    nonce: bytes
    ciphertext: bytes

    def __post_init__(self) -> None:
        if len(self.nonce) != NONCE_BYTES:
            raise ValueError(f"a thought nonce is {NONCE_BYTES} bytes")
        if len(self.ciphertext) < TAG_BYTES:
            raise ValueError("a thought ciphertext holds at least the 16-byte tag")


def thought_aad(strand_id: str, seq: int) -> bytes:
    """``strand-thought/v1`` 0x00 strand_id 0x00 seq (decimal): the thought's position."""
    if seq < 0:
        raise ValueError("a thought seq is not negative")
    return recipe_bytes(THOUGHT_AAD_CONTEXT, (strand_id, str(seq)))


def _checked(k_master: bytes) -> bytes:
    if len(k_master) != KEY_BYTES:
        raise ValueError(f"K_master is {KEY_BYTES} bytes")
    return k_master


def seal_thought_with_nonce(
    k_master: bytes, strand_id: str, seq: int, plaintext: bytes, nonce: bytes
) -> SealedThought:
    """The deterministic twin of :func:`seal_thought`, for vectors and tests: never reuse a
    nonce under one K_master."""
    if len(nonce) != NONCE_BYTES:
        raise ValueError(f"a thought nonce is {NONCE_BYTES} bytes")
    sealed = encrypt(_checked(k_master), nonce, plaintext, thought_aad(strand_id, seq))
    return SealedThought(nonce, sealed)


def seal_thought(k_master: bytes, strand_id: str, seq: int, plaintext: bytes) -> SealedThought:
    """Seal ``plaintext`` for position ``seq`` of the strand, with a fresh random nonce."""
    return seal_thought_with_nonce(k_master, strand_id, seq, plaintext, os.urandom(NONCE_BYTES))


def open_thought(
    k_master: bytes, strand_id: str, seq: int, nonce: bytes, ciphertext: bytes
) -> bytes:
    """The plaintext, or :class:`ThoughtOpenError` (the same error whatever failed)."""
    try:
        return decrypt(_checked(k_master), nonce, ciphertext, thought_aad(strand_id, seq))
    except (SealError, ValueError):
        raise ThoughtOpenError("the thought does not open with this key at this position") from None


def sign_thought_write(
    key: Ed25519PrivateKey, signing_key_id: str, strand_id: str, seq: int, sealed: SealedThought
) -> str:
    """Standard base64 of the Ed25519 signature over the write's digest."""
    digest = thought_write_digest(strand_id, seq, sealed.nonce, sealed.ciphertext, signing_key_id)
    return sign_digest(key, digest)


def verify_thought_write(
    public_key: bytes,
    signature: str,
    *,
    signing_key_id: str,
    strand_id: str,
    seq: int,
    sealed: SealedThought,
) -> bool:
    """Whether ``signature`` is the key's over this exact write; never raises."""
    digest = thought_write_digest(strand_id, seq, sealed.nonce, sealed.ciphertext, signing_key_id)
    return verify_digest(public_key, signature, digest)


def write_body(
    key: Ed25519PrivateKey, signing_key_id: str, strand_id: str, seq: int, sealed: SealedThought
) -> dict[str, object]:
    """The JSON body of ``POST /v1/strands/{strand_id}/thoughts`` for this sealed thought."""
    return {
        "seq": seq,
        "nonce": b64_encode(sealed.nonce),
        "ciphertext": b64_encode(sealed.ciphertext),
        "signing_key_id": signing_key_id,
        "signature": sign_thought_write(key, signing_key_id, strand_id, seq, sealed),
    }


__all__ = [
    "KEY_BYTES",
    "NONCE_BYTES",
    "TAG_BYTES",
    "THOUGHT_AAD_CONTEXT",
    "SealedThought",
    "ThoughtOpenError",
    "open_thought",
    "seal_thought",
    "seal_thought_with_nonce",
    "sign_thought_write",
    "thought_aad",
    "verify_thought_write",
    "write_body",
]
