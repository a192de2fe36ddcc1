"""Golden vectors: every document kind built with fixed keys and a fixed clock.

``python -m tests.vectors.generate`` rewrites the files beside this module; ``test_vectors.py``
regenerates them in memory and compares byte for byte, so any change to canonical bytes, signed
bytes, CIDs or key encodings shows up as a failing test and a reviewable diff.

Files: ``<name>.json`` is the canonical (RFC 8785) bytes of a signed document; ``index.json``
records, for each, its kind, CID and the SHA-256 of its signed bytes, plus primitive vectors
(base64url, CIDs, canonical JSON); ``keys/*.pem`` are the fixed private keys (test keys only).
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from hearth.adds import (
    Chunk,
    Commitment,
    Encryption,
    Endpoint,
    InventoryItem,
    KeyWrap,
    Right,
    Role,
    SignedDocument,
    b64url_encode,
    build_grant,
    build_head,
    build_manifest,
    build_provider_record,
    build_receipt,
    canonicalize,
    cid_for_bytes,
    signed_bytes,
)
from hearth.adds.keys import private_key_pem

HERE = Path(__file__).parent
NOW = 1_795_000_000  # 2026-11-18T11:06:40Z, the fixed clock of every vector


def fixed_bytes(label: str, length: int) -> bytes:
    """Deterministic pseudo-random bytes, so vectors never change between runs."""
    out = b""
    counter = 0
    while len(out) < length:
        out += hashlib.sha256(f"hearth-vector/{label}/{counter}".encode()).digest()
        counter += 1
    return out[:length]


def signing_key(name: str) -> Ed25519PrivateKey:
    return Ed25519PrivateKey.from_private_bytes(fixed_bytes(f"ed25519/{name}", 32))


def box_key(name: str) -> X25519PrivateKey:
    return X25519PrivateKey.from_private_bytes(fixed_bytes(f"x25519/{name}", 32))


PUBLISHER = signing_key("publisher")
READER_BOX = box_key("reader")
PROVIDER = signing_key("provider")
ALICE = "did:example:alice"
BOB = "did:example:bob"
PROVIDER_ID = "did:example:provider"


def _chunks(sizes: list[int]) -> list[Chunk]:
    return [
        Chunk(
            i, cid_for_bytes(fixed_bytes(f"block/{i}", size + 16)), fixed_bytes(f"n/{i}", 12), size
        )
        for i, size in enumerate(sizes)
    ]


def documents() -> dict[str, SignedDocument]:
    """The named documents: a minimal and a full (every optional member) one per kind."""
    encryption = Encryption(
        key_id="sha256:" + b64url_encode(fixed_bytes("key-id", 32)),
        chunk_size=1024,
        aad_context=fixed_bytes("aad-context", 32),
    )
    manifest_minimal = build_manifest(
        key=PUBLISHER,
        publisher_id=ALICE,
        object_id="object-empty",
        created_at=NOW,
        plaintext_size=0,
        encryption=encryption,
        chunks=_chunks([0]),
    )
    manifest_full = build_manifest(
        key=PUBLISHER,
        publisher_id=ALICE,
        object_id="notes/2026-11-18",
        created_at=NOW,
        plaintext_size=2 * 1024 + 100,
        encryption=encryption,
        chunks=_chunks([1024, 1024, 100]),
        media_type="text/markdown; charset=utf-8",
        schema="https://schemas.example/notes/v1",
        provenance_parents=[manifest_minimal.cid],
        transformation="summarise",
        generated_by="did:example:alice#agent",
        metadata={"title": "Café notes ✓", "tags": ["a", "b"], "weight": 0.5, "𝄞": None},
        extensions={"example:colour": "teal", "urn:x-hearth:n": 1},
    )
    wrap = KeyWrap(fixed_bytes("eph", 32), fixed_bytes("wrap-nonce", 12), fixed_bytes("wrap", 48))
    reader_public = READER_BOX.public_key().public_bytes_raw()
    grant_minimal = build_grant(
        key=PUBLISHER,
        issuer_id=ALICE,
        grant_id="grant-1",
        manifest_cid=manifest_full.cid,
        audience=BOB,
        audience_x25519_public_key=reader_public,
        rights=[Right.READ],
        issued_at=NOW,
        expires_at=NOW + 86_400,
        key_wrap=wrap,
    )
    grant_full = build_grant(
        key=PUBLISHER,
        issuer_id=ALICE,
        grant_id="grant-2",
        manifest_cid=manifest_full.cid,
        audience=BOB,
        audience_x25519_public_key=reader_public,
        rights=[Right.READ, Right.DERIVE, Right.REPLICATE, Right.DELEGATE],
        issued_at=NOW,
        not_before=NOW + 60,
        expires_at=NOW + 86_400,
        parent_grant=grant_minimal.cid,
        task_id="task-42",
        purpose="summarise the notes",
        key_wrap=wrap,
        extensions={"example:audit": {"ticket": 7}},
    )
    items = [
        InventoryItem(manifest_full.cid, len(manifest_full.canonical), Role.MANIFEST),
        *(
            InventoryItem(c.cid, c.plaintext_size + 16, Role.BLOCK)
            for c in _chunks([1024, 1024, 100])
        ),
    ]
    record_minimal = build_provider_record(
        key=PROVIDER,
        provider_id=PROVIDER_ID,
        record_id="inventory",
        sequence=0,
        issued_at=NOW,
        expires_at=NOW + 3_600,
        inventory=items[:1],
        endpoints=[Endpoint("https", "https://provider.example/v1/adds/blocks/{cid}")],
    )
    record_full = build_provider_record(
        key=PROVIDER,
        provider_id=PROVIDER_ID,
        record_id="inventory",
        sequence=1,
        issued_at=NOW + 10,
        expires_at=NOW + 3_600,
        supersedes=record_minimal.cid,
        inventory=items,
        endpoints=[
            Endpoint("https", "https://provider.example/v1/adds/blocks/{cid}", priority=0),
            Endpoint("https", "https://mirror.example/blocks{?cid}", priority=10),
        ],
        extensions={"example:region": "lhr"},
    )
    head_minimal = build_head(
        key=PUBLISHER,
        issuer_id=ALICE,
        head_id="notes",
        sequence=0,
        manifest_cid=manifest_minimal.cid,
        parents=[],
        updated_at=NOW,
    )
    head_full = build_head(
        key=PUBLISHER,
        issuer_id=ALICE,
        head_id="notes",
        sequence=1,
        manifest_cid=manifest_full.cid,
        parents=[head_minimal.cid],
        updated_at=NOW + 1,
        extensions={"example:note": "second version"},
    )
    receipt_minimal = build_receipt(
        key=PROVIDER,
        provider_id=PROVIDER_ID,
        receipt_id="receipt-1",
        issued_at=NOW,
        retention_until=NOW + 30 * 86_400,
        commitment=Commitment.STORE,
        items=items[:1],
    )
    receipt_full = build_receipt(
        key=PROVIDER,
        provider_id=PROVIDER_ID,
        receipt_id="receipt-2",
        provider_record=record_full.cid,
        issued_at=NOW,
        retention_until=NOW + 365 * 86_400,
        commitment=Commitment.STORE_AND_SERVE,
        items=items,
        availability_target="99.9%",
        storage_class="standard",
        regions=["lhr", "fra"],
        extensions={"example:price": {"gbp_minor": 12}},
    )
    return {
        "manifest-minimal": manifest_minimal,
        "manifest-full": manifest_full,
        "grant-minimal": grant_minimal,
        "grant-full": grant_full,
        "provider_record-minimal": record_minimal,
        "provider_record-full": record_full,
        "head-minimal": head_minimal,
        "head-full": head_full,
        "receipt-minimal": receipt_minimal,
        "receipt-full": receipt_full,
    }


def primitives() -> dict[str, Any]:
    """Small vectors for the codecs underneath the documents."""
    tricky = {"b": [1, -0, 9007199254740991, 1e21, 1.5e-7, "\u20ac\n\u001f"], "a": {"é": True}}
    return {
        "base64url": {text: b64url_encode(text.encode()) for text in ["f", "fo", "foo", "foob"]},
        "cid": {
            "empty": cid_for_bytes(b""),
            "hello": cid_for_bytes(b"hello"),
        },
        "canonical": canonicalize(tricky).decode(),
    }


def render() -> dict[str, bytes]:
    """Every file of the vector set, by relative path."""
    files: dict[str, bytes] = {}
    index: dict[str, Any] = {"now": NOW, "documents": {}, "primitives": primitives()}
    for name, signed in documents().items():
        files[f"{name}.json"] = signed.canonical
        index["documents"][name] = {
            "kind": signed.kind,
            "cid": signed.cid,
            "signed_bytes_sha256": hashlib.sha256(signed_bytes(signed.document)).hexdigest(),
        }
    for name, key in {"publisher": PUBLISHER, "provider": PROVIDER, "reader": READER_BOX}.items():
        kind = "x25519" if isinstance(key, X25519PrivateKey) else "ed25519"
        files[f"keys/{name}.{kind}.pem"] = private_key_pem(key)
    files["index.json"] = (json.dumps(index, indent=2, ensure_ascii=False) + "\n").encode()
    # Imported here: generate_crypto builds on this module's fixed_bytes.
    from . import generate_crypto  # noqa: PLC0415

    files.update(generate_crypto.render())
    return files


def main() -> int:
    for relative, content in render().items():
        path = HERE / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
    print(f"wrote {len(render())} files under {HERE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
