"""hearth.proofs.thoughts: a thought opens only with its K_master, only at its strand and seq,
and only unaltered; a write's signature holds only over exactly the bytes it names."""

from __future__ import annotations

import uuid
from dataclasses import replace

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from hearth.client.mnemonic_keys import derive_keys, new_mnemonic
from hearth.proofs import b64_decode
from hearth.proofs.recipes import thought_write_digest
from hearth.proofs.thoughts import (
    NONCE_BYTES,
    SealedThought,
    ThoughtOpenError,
    open_thought,
    seal_thought,
    seal_thought_with_nonce,
    sign_thought_write,
    thought_aad,
    verify_thought_write,
    write_body,
)

K_MASTER = derive_keys(new_mnemonic()).strand_master
STRAND = str(uuid.uuid4())
PLAINTEXT = "a thought, with a NUL \x00 inside ✓".encode()


def test_aad_is_the_context_strand_and_seq_joined_by_nul() -> None:
    assert thought_aad(STRAND, 7) == b"strand-thought/v1\x00" + STRAND.encode() + b"\x007"
    with pytest.raises(ValueError, match="not negative"):
        thought_aad(STRAND, -1)


def test_sealed_opens_with_its_key_at_its_position() -> None:
    sealed = seal_thought(K_MASTER, STRAND, 3, PLAINTEXT)
    assert len(sealed.nonce) == NONCE_BYTES
    assert len(sealed.ciphertext) == len(PLAINTEXT) + 16
    assert PLAINTEXT not in sealed.ciphertext
    assert open_thought(K_MASTER, STRAND, 3, sealed.nonce, sealed.ciphertext) == PLAINTEXT


def test_fresh_nonce_each_time() -> None:
    first = seal_thought(K_MASTER, STRAND, 1, PLAINTEXT)
    second = seal_thought(K_MASTER, STRAND, 1, PLAINTEXT)
    assert first.nonce != second.nonce
    assert first.ciphertext != second.ciphertext


UNOPENABLE = {
    "another K_master": (derive_keys(new_mnemonic()).strand_master, STRAND, 3, 0),
    "another strand": (K_MASTER, str(uuid.uuid4()), 3, 0),
    "another seq": (K_MASTER, STRAND, 4, 0),
    "a flipped ciphertext bit": (K_MASTER, STRAND, 3, 1),
    "a flipped tag bit": (K_MASTER, STRAND, 3, -1),
}


@pytest.mark.parametrize("case", sorted(UNOPENABLE))
def test_does_not_open_elsewhere(case: str) -> None:
    key, strand, seq, flip = UNOPENABLE[case]
    sealed = seal_thought(K_MASTER, STRAND, 3, PLAINTEXT)
    ciphertext = bytearray(sealed.ciphertext)
    if flip:
        ciphertext[0 if flip > 0 else -1] ^= 0x01
    with pytest.raises(ThoughtOpenError) as refused:
        open_thought(key, strand, seq, sealed.nonce, bytes(ciphertext))
    # Opaque: the same message whatever failed.
    assert str(refused.value) == "the thought does not open with this key at this position"


def test_a_wrong_nonce_is_the_same_opaque_error() -> None:
    sealed = seal_thought(K_MASTER, STRAND, 3, PLAINTEXT)
    with pytest.raises(ThoughtOpenError):
        open_thought(K_MASTER, STRAND, 3, bytes(NONCE_BYTES), sealed.ciphertext)


def test_key_and_nonce_sizes_are_enforced() -> None:
    with pytest.raises(ValueError, match="K_master is 32 bytes"):
        seal_thought(K_MASTER[:16], STRAND, 1, PLAINTEXT)
    with pytest.raises(ValueError, match="nonce is 12 bytes"):
        seal_thought_with_nonce(K_MASTER, STRAND, 1, PLAINTEXT, b"\x00" * 11)
    with pytest.raises(ValueError, match="16-byte tag"):
        SealedThought(b"\x00" * 12, b"\x00" * 15)


def test_signed_write_verifies_only_over_its_exact_bytes() -> None:
    key = Ed25519PrivateKey.generate()
    public = key.public_key().public_bytes_raw()
    sealed = seal_thought(K_MASTER, STRAND, 5, PLAINTEXT)
    signature = sign_thought_write(key, "laptop", STRAND, 5, sealed)
    good = {"signing_key_id": "laptop", "strand_id": STRAND, "seq": 5, "sealed": sealed}
    assert verify_thought_write(public, signature, **good)  # type: ignore[arg-type]
    altered_ct = replace(sealed, ciphertext=sealed.ciphertext[:-1] + b"\x00")
    other = seal_thought(K_MASTER, STRAND, 5, PLAINTEXT)
    for change in (
        {"signing_key_id": "primary"},
        {"strand_id": str(uuid.uuid4())},
        {"seq": 6},
        {"sealed": altered_ct},
        {"sealed": replace(sealed, nonce=other.nonce)},
    ):
        assert not verify_thought_write(public, signature, **{**good, **change})  # type: ignore[arg-type]
    stranger = Ed25519PrivateKey.generate().public_key().public_bytes_raw()
    assert not verify_thought_write(stranger, signature, **good)  # type: ignore[arg-type]
    assert not verify_thought_write(public, "not base64!", **good)  # type: ignore[arg-type]


def test_write_body_carries_only_ciphertext_nonce_and_the_signature() -> None:
    key = Ed25519PrivateKey.generate()
    sealed = seal_thought(K_MASTER, STRAND, 9, PLAINTEXT)
    body = write_body(key, "primary", STRAND, 9, sealed)
    assert sorted(body) == ["ciphertext", "nonce", "seq", "signature", "signing_key_id"]
    assert b64_decode(str(body["nonce"])) == sealed.nonce
    assert b64_decode(str(body["ciphertext"])) == sealed.ciphertext
    digest = thought_write_digest(STRAND, 9, sealed.nonce, sealed.ciphertext, "primary")
    key.public_key().verify(b64_decode(str(body["signature"])), digest)
