"""Golden vectors for hearth's own crypto recipes: the one HKDF (``hearth.proofs.kdf``), the one
AES-256-GCM seal/open with associated data (``hearth.proofs.sealing``), a trusted runtime's key
material and K_master, and the control token's hash (``hearth.proofs.runtime_keys``).

``python -m tests.vectors.generate_house_crypto`` rewrites ``FILENAME`` beside this module from
fixed inputs; ``test_house_crypto_vectors.py`` regenerates it in memory, compares byte for byte,
and recomputes every value from its definition with other code (the standard library and
cryptography's primitives). Byte strings are lower-case hex.

The file is JSON but not named ``*.json``: ``test_vectors.py`` requires every ``*.json`` here to
come from ``generate.render()``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from hearth.proofs.kdf import hkdf
from hearth.proofs.key_types import Ed25519PrivateKey
from hearth.proofs.runtime_keys import (
    TRUSTED_K_MASTER_INFO,
    control_token_hash,
    trusted_k_master,
    wrap_runtime_key_with_nonce,
)
from hearth.proofs.sealing import associated_data, derive_key, seal_with_nonce

from .generate import fixed_bytes

HERE = Path(__file__).parent
FILENAME = "house-crypto.golden"

MASTER_KEY = "house-vector master key ✓"
RUNTIME_ID = "5d0c2f4e-8b1a-4c3d-9e6f-7a2b1c0d9e8f"
RUNTIME_SEED = fixed_bytes("house/runtime-seed", 32)
CONTROL_TOKEN = "hrt_" + fixed_bytes("house/control-token", 32).hex()

# (name, ikm, salt, info, length): a mnemonic-style key (no salt), a bridge session secret
# (salted with two nonces) and an output longer than one HKDF block.
HKDF_CASES = [
    ("no salt", fixed_bytes("house/hkdf/seed", 64), b"", b"hearth/strand-master/v1", 32),
    (
        "salted",
        b"hrt_session-token",
        fixed_bytes("house/hkdf/nonces", 64),
        b"bridge-session/v1",
        32,
    ),
    ("two blocks", fixed_bytes("house/hkdf/ikm", 32), b"salt", b"hearth/vector/v1", 48),
]
# (name, info, aad parts, nonce, plaintext): values sealed at rest under the master key.
SEAL_CASES = [
    (
        "vault value",
        b"hearth/vault/v1",
        (b"hearth-vault/v1", b"project-1", b"OPENAI_API_KEY"),
        fixed_bytes("house/seal/nonce/1", 12),
        b"sk-vector-secret",
    ),
    ("empty plaintext", b"hearth/vector/v1", (b"ctx",), fixed_bytes("house/seal/nonce/2", 12), b""),
]
RUNTIME_KEY_NONCE = fixed_bytes("house/runtime-key/nonce", 12)


def vectors() -> dict[str, Any]:
    runtime_key = Ed25519PrivateKey.from_private_bytes(RUNTIME_SEED)
    return {
        "description": "hearth's own recipes: HKDF, AES-256-GCM sealing, runtime key material",
        "hkdf": [
            {
                "name": name,
                "ikm": ikm.hex(),
                "salt": salt.hex(),
                "info": info.hex(),
                "length": length,
                "okm": hkdf(ikm, info, salt=salt, length=length).hex(),
            }
            for name, ikm, salt, info, length in HKDF_CASES
        ],
        "master_key": MASTER_KEY,
        "sealed": [
            {
                "name": name,
                "info": info.hex(),
                "key": derive_key(MASTER_KEY, info).hex(),
                "aad": associated_data(*parts).hex(),
                "nonce": nonce.hex(),
                "plaintext": plaintext.hex(),
                "sealed": seal_with_nonce(
                    derive_key(MASTER_KEY, info), nonce, plaintext, associated_data(*parts)
                ).hex(),
            }
            for name, info, parts, nonce, plaintext in SEAL_CASES
        ],
        "runtime_key": {
            "runtime_id": RUNTIME_ID,
            "seed": RUNTIME_SEED.hex(),
            "public_key": runtime_key.public_key().public_bytes_raw().hex(),
            "nonce": RUNTIME_KEY_NONCE.hex(),
            "key_material": wrap_runtime_key_with_nonce(
                RUNTIME_ID, runtime_key, MASTER_KEY, RUNTIME_KEY_NONCE
            ).hex(),
            "k_master_info": TRUSTED_K_MASTER_INFO.hex(),
            "k_master": trusted_k_master(RUNTIME_SEED, RUNTIME_ID).hex(),
        },
        "control_token": {"token": CONTROL_TOKEN, "hash": control_token_hash(CONTROL_TOKEN)},
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
