"""Golden vectors for strand thoughts (``hearth.proofs.thoughts``) and the thought-write recipe
(``hearth.proofs.recipes.thought_write_digest``).

``python -m tests.vectors.generate_thoughts`` rewrites ``FILENAME`` beside this module from fixed
inputs; ``test_thought_vectors.py`` regenerates it in memory, compares byte for byte, and
recomputes every value from its definition with other code (the standard library and
cryptography's primitives).

Vectors: K_master from a fixed 24-word mnemonic (through ``hearth.client.mnemonic_keys``, the one
derivation), the thought AAD of a fixed strand and seq, two sealed thoughts with fixed nonces,
and a signed write of each (recipe bytes, digest, Ed25519 signature, the HTTP body). Byte
strings are lower-case hex; keys and signatures on the wire are standard base64.

The file is JSON but not named ``*.json``: ``test_vectors.py`` requires every ``*.json`` here to
come from ``generate.render()``.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from mnemonic import Mnemonic

from hearth.client.mnemonic_keys import derive_keys
from hearth.proofs import b64_encode
from hearth.proofs.recipes import THOUGHT_WRITE_CONTEXT, recipe_bytes, thought_write_digest
from hearth.proofs.thoughts import (
    THOUGHT_AAD_CONTEXT,
    seal_thought_with_nonce,
    thought_aad,
    write_body,
)

from .generate import fixed_bytes

HERE = Path(__file__).parent
FILENAME = "strand-thoughts.golden"

MNEMONIC = Mnemonic("english").to_mnemonic(fixed_bytes("thoughts/entropy", 32))
STRAND_ID = "0b6f1c9e-3a52-4d7e-9c41-5f2a8e7d6b30"
RUNTIME_SEED = fixed_bytes("thoughts/runtime-key", 32)
RUNTIME_KID = "runtime-night-shift"
THOUGHTS = [
    (1, fixed_bytes("thoughts/nonce/1", 12), b""),
    (42, fixed_bytes("thoughts/nonce/42", 12), "The kettle is on; Wren listens ✓\n".encode()),
]


def vectors() -> dict[str, Any]:
    identity = derive_keys(MNEMONIC)
    k_master = identity.strand_master
    runtime_key = Ed25519PrivateKey.from_private_bytes(RUNTIME_SEED)
    signers = [("primary", identity.signing), (RUNTIME_KID, runtime_key)]
    thoughts = []
    for (seq, nonce, plaintext), (kid, key) in zip(THOUGHTS, signers, strict=True):
        sealed = seal_thought_with_nonce(k_master, STRAND_ID, seq, plaintext, nonce)
        fields = (
            STRAND_ID,
            str(seq),
            kid,
            b64_encode(nonce),
            hashlib.sha256(sealed.ciphertext).hexdigest(),
        )
        thoughts.append(
            {
                "seq": seq,
                "nonce": nonce.hex(),
                "plaintext": plaintext.hex(),
                "aad": thought_aad(STRAND_ID, seq).hex(),
                "ciphertext": sealed.ciphertext.hex(),
                "signing_key_id": kid,
                "signing_public_key": b64_encode(key.public_key().public_bytes_raw()),
                "write_bytes": recipe_bytes(THOUGHT_WRITE_CONTEXT, fields).hex(),
                "write_digest": thought_write_digest(
                    STRAND_ID, seq, nonce, sealed.ciphertext, kid
                ).hex(),
                "body": write_body(key, kid, STRAND_ID, seq, sealed),
            }
        )
    return {
        "description": "strand thoughts (hearth DESIGN.md section 4): AAD, sealing, signed write",
        "mnemonic": MNEMONIC,
        "k_master": k_master.hex(),
        "root_public_key": identity.signing_public_b64,
        "runtime_private_seed": RUNTIME_SEED.hex(),
        "strand_id": STRAND_ID,
        "aad_context": THOUGHT_AAD_CONTEXT,
        "write_context": THOUGHT_WRITE_CONTEXT,
        "thoughts": thoughts,
    }


def render() -> dict[str, bytes]:
    """The vector file, by name relative to this folder."""
    text = json.dumps(vectors(), indent=2, ensure_ascii=False) + "\n"
    return {FILENAME: text.encode("utf-8")}


def main() -> int:
    for name, content in render().items():
        (HERE / name).write_bytes(content)
        print(f"wrote {HERE / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
