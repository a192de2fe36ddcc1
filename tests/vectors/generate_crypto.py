"""Golden vectors for the ADDS crypto wire formats (``hearth.adds.aead``).

``python -m tests.vectors.generate_crypto`` rewrites ``FILENAME`` beside this module from fixed
inputs; ``test_crypto_vectors.py`` regenerates it in memory, compares byte for byte, recomputes
every value from its definition with other code, and unwraps and decrypts.

Byte strings are lower-case hex (as in Wycheproof); ``key_wrap.json`` is the member as it
appears in a grant (base64url). Vectors: the chunk AAD for a fixed context and index, the
content key id of a fixed key, a key wrap with a fixed ephemeral key and nonce (with its
intermediate values: shared secret, HKDF salt and info, KEK) and two encrypted chunks.

The file is not named ``*.json``: ``test_vectors.py`` requires every ``*.json`` here to come
from ``generate.render()``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from hearth.adds.aead import (
    KEY_WRAP_INFO,
    chunk_aad,
    content_key_id,
    encrypt_chunk,
    hkdf_sha256,
    wrap_content_key,
    x25519_shared,
)
from hearth.adds.cid import cid_for_bytes

from .generate import fixed_bytes

HERE = Path(__file__).parent
FILENAME = "adds-crypto.json"

CONTENT_KEY = fixed_bytes("crypto/content-key", 32)
AAD_CONTEXT = fixed_bytes("crypto/aad-context", 32)
AUDIENCE_PRIVATE = fixed_bytes("crypto/audience", 32)
EPHEMERAL_PRIVATE = fixed_bytes("crypto/ephemeral", 32)
WRAP_NONCE = fixed_bytes("crypto/wrap-nonce", 12)
MANIFEST_CID = cid_for_bytes(b"hearth golden vector: the manifest a key wrap is bound to")
CHUNKS = [
    (0, fixed_bytes("crypto/chunk-nonce/0", 12), b""),
    (258, fixed_bytes("crypto/chunk-nonce/258", 12), "ADDS chunk 258 ✓\n".encode()),
]


def _public(private: bytes) -> bytes:
    return X25519PrivateKey.from_private_bytes(private).public_key().public_bytes_raw()


def vectors() -> dict[str, Any]:
    audience_public = _public(AUDIENCE_PRIVATE)
    ephemeral_public = _public(EPHEMERAL_PRIVATE)
    shared = x25519_shared(EPHEMERAL_PRIVATE, audience_public)
    salt = ephemeral_public + audience_public
    info = KEY_WRAP_INFO + MANIFEST_CID.encode("ascii")
    wrap = wrap_content_key(
        CONTENT_KEY,
        audience_public,
        MANIFEST_CID,
        ephemeral_private=EPHEMERAL_PRIVATE,
        nonce=WRAP_NONCE,
    )
    chunks = []
    for index, nonce, plaintext in CHUNKS:
        block = encrypt_chunk(CONTENT_KEY, nonce, AAD_CONTEXT, index, plaintext)
        chunks.append(
            {
                "content_key": CONTENT_KEY.hex(),
                "aad_context": AAD_CONTEXT.hex(),
                "index": index,
                "nonce": nonce.hex(),
                "plaintext": plaintext.hex(),
                "aad": chunk_aad(AAD_CONTEXT, index).hex(),
                "block": block.hex(),
                "cid": cid_for_bytes(block),
            }
        )
    return {
        "description": "ADDS 0.1 crypto wire formats (hearth DESIGN.md section 3)",
        "chunk_aad": {
            "aad_context": AAD_CONTEXT.hex(),
            "index": 0x01020304,
            "aad": chunk_aad(AAD_CONTEXT, 0x01020304).hex(),
        },
        "content_key_id": {
            "content_key": CONTENT_KEY.hex(),
            "key_id": content_key_id(CONTENT_KEY),
        },
        "key_wrap": {
            "content_key": CONTENT_KEY.hex(),
            "manifest_cid": MANIFEST_CID,
            "audience_private": AUDIENCE_PRIVATE.hex(),
            "audience_public": audience_public.hex(),
            "ephemeral_private": EPHEMERAL_PRIVATE.hex(),
            "ephemeral_public": ephemeral_public.hex(),
            "nonce": WRAP_NONCE.hex(),
            "shared_secret": shared.hex(),
            "hkdf_salt": salt.hex(),
            "hkdf_info": info.hex(),
            "kek": hkdf_sha256(shared, salt, info, 32).hex(),
            "ciphertext": wrap.ciphertext.hex(),
            "json": wrap.as_json(),
        },
        "chunks": chunks,
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
