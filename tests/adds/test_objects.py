"""The object layer: publish, issue_grant, unwrap_grant, open_object and delegation chains.

Each refusal has its own test and is identified by its stable ``open.*`` (or ``issue.*``,
``publish.*``) code; blocks live in an in-memory store that implements BlockSink and
BlockSource.
"""

from __future__ import annotations

import gc
import hashlib
import io
import json
import os
import random
import re
import tracemalloc
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from hearth.adds import (
    AddsError,
    OpenError,
    Published,
    Right,
    SignedDocument,
    b64url_encode,
    build_grant,
    canonicalize,
    check_delegation,
    cid_for_bytes,
    content_key_id,
    issue_grant,
    open_object,
    publish,
    sign_document,
    unwrap_grant,
    validate,
    wrap_content_key,
)
from tests.support.adds_objects import (
    ALICE,
    BOB,
    BOXES,
    CAROL,
    CHUNK,
    DAVE,
    DAY,
    NOW,
    SIGNING,
    MemoryStore,
    box_key,
    box_public,
    do_publish,
    grant_for,
    pseudo_random,
    read_all,
    refusal,
    signing_key,
)


def resign(document: dict[str, Any], key: Ed25519PrivateKey) -> SignedDocument:
    """Sign a hand-edited document (no validation: it may be invalid on purpose)."""
    signed = sign_document({k: v for k, v in document.items() if k != "signature"}, key)
    canonical = canonicalize(signed)
    return SignedDocument(signed, canonical, cid_for_bytes(canonical))


def detail_codes(error: AddsError) -> set[str]:
    return {p.code for p in error.problems}


@pytest.fixture(scope="module")
def three_chunks() -> tuple[bytes, Published, MemoryStore]:
    data = pseudo_random(3 * CHUNK + 5, seed=3)
    published, store = do_publish(data)
    return data, published, store


# --- publish and round trips ----------------------------------------------------------------


@pytest.mark.parametrize(
    "size", [0, 1, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK, 3 * CHUNK + 5], ids=lambda s: f"{s}B"
)
@pytest.mark.parametrize("workers", [1, 3])
def test_round_trip(size: int, workers: int) -> None:
    data = pseudo_random(size, seed=size)
    published, store = do_publish(data, workers=workers)
    grant = grant_for(published)
    assert read_all(published, grant, store) == data
    manifest = published.manifest.document
    expected_chunks = max(1, -(-size // CHUNK))
    assert len(manifest["chunks"]) == expected_chunks
    assert manifest["plaintext"] == {"size": size}
    assert [c["plaintext_size"] for c in manifest["chunks"]] == (
        [CHUNK] * (expected_chunks - 1) + [size - CHUNK * (expected_chunks - 1)]
    )
    assert len(store.blocks) == expected_chunks


def test_empty_object_is_one_empty_chunk() -> None:
    published, store = do_publish(b"")
    (chunk,) = published.manifest.document["chunks"]
    assert chunk["plaintext_size"] == 0
    assert chunk["ciphertext_size"] == 16
    assert read_all(published, grant_for(published), store) == b""


def test_published_manifest_validates_and_names_its_blocks(
    three_chunks: tuple[bytes, Published, MemoryStore],
) -> None:
    _, published, store = three_chunks
    result = validate(published.manifest.canonical)
    assert result.valid, result.errors
    assert result.cid == published.cid == published.manifest.cid
    manifest = published.manifest.document
    assert manifest["encryption"]["key_id"] == content_key_id(published.content_key)
    assert manifest["encryption"]["chunk_size"] == CHUNK
    for chunk in manifest["chunks"]:
        assert len(store.blocks[chunk["cid"]]) == chunk["ciphertext_size"]
    nonces = {c["nonce"] for c in manifest["chunks"]}
    assert len(nonces) == len(manifest["chunks"])


def test_publish_draws_a_fresh_key_context_and_nonces_every_time() -> None:
    first, _ = do_publish(b"same bytes")
    second, _ = do_publish(b"same bytes")
    assert first.content_key != second.content_key
    one, two = first.manifest.document, second.manifest.document
    assert one["encryption"]["aad_context"] != two["encryption"]["aad_context"]
    assert one["chunks"][0]["nonce"] != two["chunks"][0]["nonce"]
    assert one["chunks"][0]["cid"] != two["chunks"][0]["cid"]


def test_published_repr_hides_the_content_key(
    three_chunks: tuple[bytes, Published, MemoryStore],
) -> None:
    _, published, _ = three_chunks
    text = repr(published)
    key = published.content_key
    assert "content_key" not in text
    for form in (repr(key), key.hex(), b64url_encode(key)):
        assert form not in text


def test_publish_passes_optional_members_to_the_manifest() -> None:
    parent = cid_for_bytes(b"parent manifest")
    published, _ = do_publish(
        b"{}",
        media_type="application/json",
        schema="https://schemas.example/x",
        metadata={"title": "x"},
        provenance_parents=[parent],
    )
    manifest = published.manifest.document
    assert manifest["media_type"] == "application/json"
    assert manifest["schema"] == "https://schemas.example/x"
    assert manifest["metadata"] == {"title": "x"}
    assert manifest["provenance"] == {"parents": [parent]}


class ReadOnly:
    """A stream with ``read`` only, returning short reads."""

    def __init__(self, data: bytes) -> None:
        self._stream = io.BytesIO(data)

    def read(self, size: int) -> bytes:
        return self._stream.read(min(size, 700))


class Trickle(io.RawIOBase):
    """A raw stream whose ``readinto`` returns at most 300 bytes at a time."""

    def __init__(self, data: bytes) -> None:
        self._stream = io.BytesIO(data)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer)[:300]
        return self._stream.readinto(view)


def reused_buffer_pieces(data: bytes, size: int) -> Iterator[bytearray]:
    """Yields the same bytearray, overwritten each time, as a careless reader might."""
    buffer = bytearray(size)
    for start in range(0, len(data), size):
        piece = data[start : start + size]
        buffer[: len(piece)] = piece
        yield buffer if len(piece) == size else bytearray(piece)
        buffer[:] = bytes(size)  # overwritten before the next piece


def random_pieces(data: bytes) -> Iterator[bytes]:
    chooser = random.Random(7)
    start = 0
    while start < len(data):
        size = chooser.choice([0, 1, 100, CHUNK - 1, CHUNK, 3 * CHUNK + 7])
        yield data[start : start + size]
        start += size


SOURCES = {
    "bytes": lambda data: data,
    "bytearray": bytearray,
    "memoryview": memoryview,
    "bytesio": io.BytesIO,
    "read_only": ReadOnly,
    "trickle_readinto": Trickle,
    "random_pieces": random_pieces,
    "bytearray_pieces": lambda data: (
        bytearray(data[i : i + 333]) for i in range(0, len(data), 333)
    ),
    "reused_buffer": lambda data: reused_buffer_pieces(data, CHUNK),
}


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("kind", sorted(SOURCES))
def test_every_source_form_round_trips(kind: str, workers: int) -> None:
    data = pseudo_random(7 * CHUNK + 123, seed=11)
    published, store = do_publish(SOURCES[kind](data), workers=workers)
    assert published.manifest.document["plaintext"]["size"] == len(data)
    assert read_all(published, grant_for(published), store) == data


def test_progress_reports_plaintext_bytes_stored() -> None:
    seen: list[int] = []
    do_publish(pseudo_random(2 * CHUNK + 5), on_progress=seen.append)
    assert seen == [CHUNK, 2 * CHUNK, 2 * CHUNK + 5]


def test_progress_on_empty_object() -> None:
    seen: list[int] = []
    do_publish(b"", on_progress=seen.append)
    assert seen == [0]


@pytest.mark.parametrize("workers", [1, 4])
def test_blocks_are_stored_in_chunk_order(workers: int) -> None:
    stored: list[str] = []

    class Recorder(MemoryStore):
        def put(self, cid: str, data: bytes) -> None:
            stored.append(cid)
            super().put(cid, data)

    published, _ = do_publish(pseudo_random(20 * CHUNK + 1), Recorder(), workers=workers)
    assert stored == [c["cid"] for c in published.manifest.document["chunks"]]


@pytest.mark.parametrize("chunk_size", [0, 16_777_217])
def test_publish_refuses_chunk_size_outside_the_profile(chunk_size: int) -> None:
    with pytest.raises(AddsError) as excinfo:
        do_publish(b"x", chunk_size=chunk_size)
    assert excinfo.value.problems[0].code == "publish.chunk_size"


def test_publish_refuses_zero_workers() -> None:
    with pytest.raises(AddsError) as excinfo:
        do_publish(b"x", workers=0)
    assert excinfo.value.problems[0].code == "publish.workers"


def test_publish_refuses_a_non_blocking_source() -> None:
    class WouldBlock(io.RawIOBase):
        def readable(self) -> bool:
            return True

        def readinto(self, buffer: Any) -> int | None:
            return None

    with pytest.raises(AddsError) as excinfo:
        do_publish(WouldBlock())
    assert excinfo.value.problems[0].code == "publish.source_would_block"


def test_publish_propagates_sink_failure() -> None:
    class Full(MemoryStore):
        def put(self, cid: str, data: bytes) -> None:
            raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        do_publish(pseudo_random(3 * CHUNK), Full(), workers=2)


def test_large_object_round_trip() -> None:
    """64 MiB in 1 MiB chunks, sealed by two workers, opened chunk by chunk."""
    size = 64 << 20
    data = os.urandom(size)
    published, store = do_publish(data, chunk_size=1 << 20, workers=2)
    assert len(published.manifest.document["chunks"]) == 64
    assert validate(published.manifest.canonical).valid
    grant = grant_for(published)
    digest = hashlib.sha256()
    total = 0
    for piece in open_object(published.manifest, grant, BOXES[BOB], store, now=NOW):
        assert len(piece) == 1 << 20
        digest.update(piece)
        total += len(piece)
    assert total == size
    assert digest.digest() == hashlib.sha256(data).digest()


def _generated(size: int, piece: int) -> Iterator[bytes]:
    pattern = pseudo_random(piece, seed=99)
    for _ in range(size // piece):
        yield pattern


class CountingSink:
    def __init__(self) -> None:
        self.sizes: list[int] = []

    def put(self, cid: str, data: bytes) -> None:
        self.sizes.append(len(data))


@pytest.mark.parametrize("workers", [1, 2])
def test_publish_memory_is_bounded_by_the_chunk_size(workers: int) -> None:
    size, chunk_size = 64 << 20, 1 << 20
    sink = CountingSink()
    gc.collect()
    tracemalloc.start()
    try:
        published = publish(
            _generated(size, 64 << 10),
            sink,
            key=SIGNING[ALICE],
            publisher_id=ALICE,
            object_id="big",
            created_at=NOW,
            chunk_size=chunk_size,
            workers=workers,
        )
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert published.manifest.document["plaintext"]["size"] == size
    assert sum(sink.sizes) == size + 64 * 16
    assert peak < (2 * workers + 2) * chunk_size, f"peak {peak} bytes"


def test_open_memory_is_bounded_by_the_chunk_size() -> None:
    size, chunk_size = 32 << 20, 1 << 20
    published, store = do_publish(_generated(size, chunk_size), chunk_size=chunk_size)
    grant = grant_for(published)
    gc.collect()
    tracemalloc.start()
    try:
        total = 0
        for piece in open_object(published.manifest, grant, BOXES[BOB], store, now=NOW):
            total += len(piece)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert total == size
    assert peak < 4 * chunk_size, f"peak {peak} bytes"


# --- grants and opening ---------------------------------------------------------------------


def test_unwrap_grant_returns_the_content_key(
    three_chunks: tuple[bytes, Published, MemoryStore],
) -> None:
    _, published, _ = three_chunks
    grant = grant_for(published)
    key = unwrap_grant(grant, published.manifest, BOXES[BOB], now=NOW)
    assert key == published.content_key


@pytest.mark.parametrize("form", ["signed", "dict", "canonical_bytes", "pretty_bytes"])
def test_documents_are_accepted_in_every_form(
    form: str, three_chunks: tuple[bytes, Published, MemoryStore]
) -> None:
    data, published, store = three_chunks
    grant = grant_for(published)

    def shaped(document: SignedDocument) -> Any:
        return {
            "signed": document,
            "dict": json.loads(document.canonical),
            "canonical_bytes": document.canonical,
            "pretty_bytes": json.dumps(document.document, indent=2).encode(),
        }[form]

    opened = open_object(shaped(published.manifest), shaped(grant), BOXES[BOB], store, now=NOW)
    assert b"".join(opened) == data


def test_open_checks_everything_before_fetching_a_block(
    three_chunks: tuple[bytes, Published, MemoryStore],
) -> None:
    _, published, store = three_chunks
    grant = grant_for(published)
    store.fetched.clear()
    with pytest.raises(OpenError):
        open_object(published.manifest, grant, BOXES[BOB], store, now=NOW + DAY)
    assert store.fetched == []
    chunks = open_object(published.manifest, grant, BOXES[BOB], store, now=NOW)
    assert store.fetched == []
    next(chunks)
    assert len(store.fetched) == 1


def test_open_grant_usable_from_issued_at_until_just_before_expiry(
    three_chunks: tuple[bytes, Published, MemoryStore],
) -> None:
    data, published, store = three_chunks
    grant = grant_for(published, issued_at=NOW, expires_at=NOW + 10)
    assert read_all(published, grant, store, now=NOW) == data
    assert read_all(published, grant, store, now=NOW + 9) == data


def test_issue_grant_refuses_a_content_key_that_is_not_the_manifests(
    three_chunks: tuple[bytes, Published, MemoryStore],
) -> None:
    _, published, _ = three_chunks
    with pytest.raises(AddsError) as excinfo:
        grant_for(published.manifest, os.urandom(32))
    assert excinfo.value.problems[0].code == "issue.key_id_mismatch"


def test_issue_grant_refuses_an_invalid_manifest(
    three_chunks: tuple[bytes, Published, MemoryStore],
) -> None:
    _, published, _ = three_chunks
    tampered = {**published.manifest.document, "object_id": "other"}
    with pytest.raises(AddsError) as excinfo:
        issue_grant(
            manifest=tampered,
            content_key=published.content_key,
            key=SIGNING[ALICE],
            issuer_id=ALICE,
            grant_id="g",
            audience=BOB,
            audience_x25519_public_key=box_public(BOB),
            rights=[Right.READ],
            issued_at=NOW,
            expires_at=NOW + DAY,
        )
    assert excinfo.value.problems[0].code == "issue.manifest_invalid"
    assert "profile.signature.invalid" in detail_codes(excinfo.value)


# --- refusals to open: documents, grant and keys --------------------------------------------


def test_open_refuses_a_tampered_manifest(
    three_chunks: tuple[bytes, Published, MemoryStore],
) -> None:
    _, published, store = three_chunks
    grant = grant_for(published)
    tampered = {**published.manifest.document, "object_id": "other"}
    error = refusal(open_object, tampered, grant, BOXES[BOB], store, now=NOW)
    assert error.code == "open.manifest_invalid"
    assert "profile.signature.invalid" in detail_codes(error)


def test_open_refuses_a_grant_given_as_the_manifest(
    three_chunks: tuple[bytes, Published, MemoryStore],
) -> None:
    _, published, store = three_chunks
    grant = grant_for(published)
    error = refusal(open_object, grant, grant, BOXES[BOB], store, now=NOW)
    assert error.code == "open.manifest_invalid"
    assert "spec.kind" in detail_codes(error)


def test_open_refuses_bytes_that_are_not_a_document(
    three_chunks: tuple[bytes, Published, MemoryStore],
) -> None:
    _, published, store = three_chunks
    error = refusal(open_object, published.manifest, b"{not json", BOXES[BOB], store, now=NOW)
    assert error.code == "open.grant_invalid"
    assert "spec.ijson.syntax" in detail_codes(error)


def test_open_refuses_a_tampered_grant(
    three_chunks: tuple[bytes, Published, MemoryStore],
) -> None:
    _, published, store = three_chunks
    grant = grant_for(published)
    tampered = {**grant.document, "expires_at": NOW + 365 * DAY}
    error = refusal(open_object, published.manifest, tampered, BOXES[BOB], store, now=NOW)
    assert error.code == "open.grant_invalid"
    assert "profile.signature.invalid" in detail_codes(error)


def test_open_refuses_a_grant_without_read(
    three_chunks: tuple[bytes, Published, MemoryStore],
) -> None:
    """Specification rule 5 makes such a grant invalid, even when properly signed."""
    _, published, store = three_chunks
    grant = grant_for(published, rights=[Right.READ, Right.REPLICATE])
    no_read = resign({**grant.document, "rights": ["replicate"]}, SIGNING[ALICE])
    error = refusal(open_object, published.manifest, no_read, BOXES[BOB], store, now=NOW)
    assert error.code == "open.grant_invalid"
    assert "spec.rights.read" in detail_codes(error)


def test_open_refuses_a_grant_for_another_manifest(
    three_chunks: tuple[bytes, Published, MemoryStore],
) -> None:
    _, published, store = three_chunks
    other, _ = do_publish(b"another object")
    grant = grant_for(other)
    error = refusal(open_object, published.manifest, grant, BOXES[BOB], store, now=NOW)
    assert error.code == "open.manifest_mismatch"
    assert "manifest does not match the grant" in str(error)


def test_open_refuses_a_grant_not_yet_issued(
    three_chunks: tuple[bytes, Published, MemoryStore],
) -> None:
    _, published, store = three_chunks
    grant = grant_for(published, issued_at=NOW + 1)
    error = refusal(open_object, published.manifest, grant, BOXES[BOB], store, now=NOW)
    assert error.code == "open.not_yet_valid"
    assert error.problems[0].pointer == "/issued_at"


def test_open_refuses_a_grant_before_not_before(
    three_chunks: tuple[bytes, Published, MemoryStore],
) -> None:
    data, published, store = three_chunks
    grant = grant_for(published, issued_at=NOW - 100, not_before=NOW + 1)
    error = refusal(open_object, published.manifest, grant, BOXES[BOB], store, now=NOW)
    assert error.code == "open.not_yet_valid"
    assert error.problems[0].pointer == "/not_before"
    assert read_all(published, grant, store, now=NOW + 1) == data


def test_open_refuses_an_expired_grant(
    three_chunks: tuple[bytes, Published, MemoryStore],
) -> None:
    _, published, store = three_chunks
    grant = grant_for(published, issued_at=NOW - 100, expires_at=NOW)
    error = refusal(open_object, published.manifest, grant, BOXES[BOB], store, now=NOW)
    assert error.code == "open.expired"


def test_open_refuses_a_private_key_that_is_not_the_audiences(
    three_chunks: tuple[bytes, Published, MemoryStore],
) -> None:
    _, published, store = three_chunks
    grant = grant_for(published)
    error = refusal(open_object, published.manifest, grant, BOXES[CAROL], store, now=NOW)
    assert error.code == "open.wrong_key"


def _grant_with_wrap(published: Published, wrap_key: bytes, wrap_cid: str) -> SignedDocument:
    return build_grant(
        key=SIGNING[ALICE],
        issuer_id=ALICE,
        grant_id="grant-odd-wrap",
        manifest_cid=published.cid,
        audience=BOB,
        audience_x25519_public_key=box_public(BOB),
        rights=[Right.READ],
        issued_at=NOW,
        expires_at=NOW + DAY,
        key_wrap=wrap_content_key(wrap_key, box_public(BOB), wrap_cid),
    )


def test_open_refuses_a_wrap_bound_to_another_manifest(
    three_chunks: tuple[bytes, Published, MemoryStore],
) -> None:
    _, published, store = three_chunks
    grant = _grant_with_wrap(published, published.content_key, cid_for_bytes(b"elsewhere"))
    error = refusal(open_object, published.manifest, grant, BOXES[BOB], store, now=NOW)
    assert error.code == "open.unwrap_failed"
    assert "crypto.unwrap_failed" in detail_codes(error)


def test_open_refuses_an_altered_wrap(
    three_chunks: tuple[bytes, Published, MemoryStore],
) -> None:
    _, published, store = three_chunks
    grant = grant_for(published)
    wrap = dict(grant.document["key_wrap"])
    wrap["nonce"] = b64url_encode(bytes(12))
    altered = resign({**grant.document, "key_wrap": wrap}, SIGNING[ALICE])
    error = refusal(open_object, published.manifest, altered, BOXES[BOB], store, now=NOW)
    assert error.code == "open.unwrap_failed"


def test_open_refuses_a_wrapped_key_that_is_not_the_manifests(
    three_chunks: tuple[bytes, Published, MemoryStore],
) -> None:
    _, published, store = three_chunks
    grant = _grant_with_wrap(published, os.urandom(32), published.cid)
    error = refusal(open_object, published.manifest, grant, BOXES[BOB], store, now=NOW)
    assert error.code == "open.key_id_mismatch"


def test_unwrap_grant_refuses_like_open(
    three_chunks: tuple[bytes, Published, MemoryStore],
) -> None:
    _, published, _ = three_chunks
    grant = grant_for(published)
    error = refusal(unwrap_grant, grant, published.manifest, BOXES[CAROL], now=NOW)
    assert error.code == "open.wrong_key"


# --- refusals to open: blocks ---------------------------------------------------------------


def _fresh(chunks: int = 4) -> tuple[bytes, Published, MemoryStore, SignedDocument]:
    data = pseudo_random(chunks * CHUNK, seed=chunks)
    published, store = do_publish(data)
    return data, published, store, grant_for(published)


def _chunk_cids(published: Published | SignedDocument) -> list[str]:
    manifest = published.manifest if isinstance(published, Published) else published
    return [c["cid"] for c in manifest.document["chunks"]]


def test_open_refuses_a_missing_block() -> None:
    _, published, store, grant = _fresh()
    del store.blocks[_chunk_cids(published)[2]]
    chunks = open_object(published.manifest, grant, BOXES[BOB], store, now=NOW)
    assert len([next(chunks), next(chunks)]) == 2  # the chunks before it are delivered
    error = refusal(lambda: chunks)
    assert error.code == "open.block_missing"
    assert error.problems[0].pointer == "/chunks/2"


def test_open_refuses_a_block_the_store_reports_missing_its_own_way() -> None:
    class BlockNotFound(KeyError):
        pass

    class Store(MemoryStore):
        def get(self, cid: str) -> bytes:
            raise BlockNotFound(cid)

    _, published, _, grant = _fresh()
    error = refusal(read_all, published, grant, Store())
    assert error.code == "open.block_missing"


def test_open_lets_other_store_failures_through() -> None:
    class Down(MemoryStore):
        def get(self, cid: str) -> bytes:
            raise ConnectionError("provider unreachable")

    _, published, _, grant = _fresh()
    with pytest.raises(ConnectionError):
        read_all(published, grant, Down())


def test_open_refuses_a_block_whose_bytes_are_not_its_cid() -> None:
    _, published, store, grant = _fresh()
    cid = _chunk_cids(published)[1]
    altered = bytearray(store.blocks[cid])
    altered[10] ^= 0x01
    store.blocks[cid] = bytes(altered)
    error = refusal(read_all, published, grant, store)
    assert error.code == "open.block_cid_mismatch"
    assert error.problems[0].pointer == "/chunks/1"


def test_open_refuses_blocks_swapped_in_the_store() -> None:
    _, published, store, grant = _fresh()
    first, second = _chunk_cids(published)[:2]
    store.blocks[first], store.blocks[second] = store.blocks[second], store.blocks[first]
    error = refusal(read_all, published, grant, store)
    assert error.code == "open.block_cid_mismatch"
    assert error.problems[0].pointer == "/chunks/0"


def test_open_refuses_a_truncated_block() -> None:
    _, published, store, grant = _fresh()
    cid = _chunk_cids(published)[0]
    store.blocks[cid] = store.blocks[cid][:-1]
    error = refusal(read_all, published, grant, store)
    assert error.code == "open.block_size_mismatch"


def _resigned_manifest(published: Published, chunks: list[dict[str, Any]]) -> SignedDocument:
    """The manifest with another chunk list, re-signed by its publisher, indices renumbered
    and the total adjusted, so that it is a valid manifest."""
    renumbered = [{**c, "index": i} for i, c in enumerate(chunks)]
    document = {
        **published.manifest.document,
        "chunks": renumbered,
        "plaintext": {"size": sum(c["plaintext_size"] for c in chunks)},
    }
    manifest = resign(document, SIGNING[ALICE])
    assert validate(manifest.canonical).valid
    return manifest


def test_open_refuses_a_block_of_another_size_under_a_resigned_manifest() -> None:
    """Chunk 0 names the short last block (its CID matches, its size does not)."""
    data = pseudo_random(2 * CHUNK + 10)
    published, store = do_publish(data)
    chunks = [dict(c) for c in published.manifest.document["chunks"]]
    chunks[0]["cid"], chunks[2]["cid"] = chunks[2]["cid"], chunks[0]["cid"]
    manifest = _resigned_manifest(published, chunks)
    grant = grant_for(manifest, published.content_key)
    error = refusal(read_all, manifest, grant, store)
    assert error.code == "open.block_size_mismatch"
    assert error.problems[0].pointer == "/chunks/0"


def test_open_refuses_reordered_chunks_under_a_resigned_manifest() -> None:
    """Each block is authentic and the right size, but the index is in the AAD."""
    _, published, store, _ = _fresh()
    chunks = [dict(c) for c in published.manifest.document["chunks"]]
    chunks[0], chunks[1] = chunks[1], chunks[0]
    manifest = _resigned_manifest(published, chunks)
    grant = grant_for(manifest, published.content_key)
    error = refusal(read_all, manifest, grant, store)
    assert error.code == "open.decrypt_failed"
    assert error.problems[0].pointer == "/chunks/0"


def test_open_refuses_a_chunk_removed_from_the_signed_list() -> None:
    _, published, store, grant = _fresh()
    document = dict(published.manifest.document)
    document["chunks"] = document["chunks"][:-1]
    error = refusal(read_all, document, grant, store)
    assert error.code == "open.manifest_invalid"
    assert "profile.signature.invalid" in detail_codes(error)


def test_open_refuses_a_resigned_manifest_missing_its_last_chunk() -> None:
    _, published, store, _ = _fresh()
    document = dict(published.manifest.document)
    document["chunks"] = document["chunks"][:-1]
    manifest = resign(document, SIGNING[ALICE])
    grant = build_grant(
        key=SIGNING[ALICE],
        issuer_id=ALICE,
        grant_id="g",
        manifest_cid=manifest.cid,
        audience=BOB,
        audience_x25519_public_key=box_public(BOB),
        rights=[Right.READ],
        issued_at=NOW,
        expires_at=NOW + DAY,
        key_wrap=wrap_content_key(published.content_key, box_public(BOB), manifest.cid),
    )
    error = refusal(read_all, manifest, grant, store)
    assert error.code == "open.manifest_invalid"
    assert "profile.chunks.total" in detail_codes(error)


def test_open_refuses_a_resigned_manifest_missing_a_middle_chunk() -> None:
    _, published, store, _ = _fresh()
    chunks = [dict(c) for c in published.manifest.document["chunks"]]
    del chunks[1]
    manifest = _resigned_manifest(published, chunks)
    grant = grant_for(manifest, published.content_key)
    error = refusal(read_all, manifest, grant, store)
    assert error.code == "open.decrypt_failed"
    assert error.problems[0].pointer == "/chunks/1"


def test_old_grant_does_not_open_a_resigned_manifest() -> None:
    _, published, store, grant = _fresh()
    chunks = [dict(c) for c in published.manifest.document["chunks"]][:-1]
    manifest = _resigned_manifest(published, chunks)
    error = refusal(read_all, manifest, grant, store)
    assert error.code == "open.manifest_mismatch"


# --- delegation -----------------------------------------------------------------------------


def delegated(
    published: Published,
    parent: SignedDocument,
    *,
    issuer: str,
    audience: str,
    rights: Sequence[Right | str] = (Right.READ,),
    expires_at: int = NOW + DAY,
    **options: Any,
) -> SignedDocument:
    """A grant by ``issuer`` (the parent's audience, normally) to ``audience``, re-wrapping the
    key ``issuer`` unwrapped."""
    return grant_for(
        published,
        issuer=issuer,
        audience=audience,
        rights=rights,
        expires_at=expires_at,
        parent_grant=parent.cid,
        **options,
    )


@pytest.fixture(scope="module")
def chain() -> tuple[bytes, Published, MemoryStore, SignedDocument, SignedDocument]:
    """Alice -> Bob (read, delegate) -> Carol (read)."""
    data = pseudo_random(2 * CHUNK + 1, seed=21)
    published, store = do_publish(data)
    root = grant_for(published, audience=BOB, rights=[Right.READ, Right.DELEGATE])
    child = delegated(published, root, issuer=BOB, audience=CAROL)
    return data, published, store, root, child


Chain = tuple[bytes, Published, MemoryStore, SignedDocument, SignedDocument]


def test_delegated_grant_opens_with_its_parent(chain: Chain) -> None:
    data, published, store, root, child = chain
    assert read_all(published, child, store, reader=CAROL, parents=[root]) == data
    assert check_delegation(child, root) == []


def test_delegation_chain_of_three_opens_with_parents_in_any_order(chain: Chain) -> None:
    data, published, store, root, _ = chain
    middle = delegated(
        published, root, issuer=BOB, audience=CAROL, rights=[Right.READ, Right.DELEGATE]
    )
    leaf = delegated(published, middle, issuer=CAROL, audience=DAVE)
    parents = [middle.canonical, root.document]
    assert read_all(published, leaf, store, reader=DAVE, parents=parents) == data


def test_delegation_refuses_a_missing_parent(chain: Chain) -> None:
    _, published, store, _, child = chain
    error = refusal(read_all, published, child, store, reader=CAROL)
    assert error.code == "open.parent_missing"


def test_delegation_refuses_a_missing_grandparent(chain: Chain) -> None:
    _, published, store, root, _ = chain
    middle = delegated(
        published, root, issuer=BOB, audience=CAROL, rights=[Right.READ, Right.DELEGATE]
    )
    leaf = delegated(published, middle, issuer=CAROL, audience=DAVE)
    error = refusal(read_all, published, leaf, store, reader=DAVE, parents=[middle])
    assert error.code == "open.parent_missing"
    assert "depth 2" in error.message


def test_delegation_refuses_an_invalid_parent(chain: Chain) -> None:
    _, published, store, root, _ = chain
    # A parent with a broken signature, named by its CID all the same.
    broken = {**root.document, "grant_id": "forged"}
    broken_cid = cid_for_bytes(canonicalize(broken))
    child = grant_for(published, issuer=BOB, audience=CAROL, parent_grant=broken_cid)
    error = refusal(read_all, published, child, store, reader=CAROL, parents=[broken])
    assert error.code == "open.delegation_invalid"
    assert "profile.signature.invalid" in detail_codes(error)


def _link_error(
    chain: Chain, *, root_rights: Sequence[Right] = (Right.READ, Right.DELEGATE), **child: Any
) -> OpenError:
    _, published, store, _, _ = chain
    root_audience = child.pop("root_audience", BOB)
    root_expires = child.pop("root_expires", NOW + DAY)
    root_source = child.pop("root_published", published)
    root = grant_for(
        root_source, audience=root_audience, rights=root_rights, expires_at=root_expires
    )
    options = {"issuer": BOB, "audience": CAROL, **child}
    leaf = delegated(published, root, **options)
    return refusal(read_all, published, leaf, store, reader=CAROL, parents=[root])


def test_delegation_refuses_a_parent_without_delegate(chain: Chain) -> None:
    error = _link_error(chain, root_rights=[Right.READ, Right.REPLICATE])
    assert error.code == "open.delegation_invalid"
    assert detail_codes(error) >= {"profile.delegation.no_delegate"}


def test_delegation_refuses_a_parent_for_another_manifest(chain: Chain) -> None:
    other, _ = do_publish(b"another object")
    error = _link_error(chain, root_published=other)
    assert error.code == "open.delegation_invalid"
    assert "profile.delegation.manifest" in detail_codes(error)


def test_delegation_refuses_an_issuer_who_is_not_the_parents_audience(chain: Chain) -> None:
    error = _link_error(chain, root_audience=DAVE)
    assert error.code == "open.delegation_invalid"
    assert "profile.delegation.audience" in detail_codes(error)


def test_delegation_refuses_rights_the_parent_lacks(chain: Chain) -> None:
    error = _link_error(chain, rights=[Right.READ, Right.REPLICATE])
    assert error.code == "open.delegation_invalid"
    assert "profile.delegation.rights" in detail_codes(error)


def test_delegation_refuses_a_child_outliving_its_parent(chain: Chain) -> None:
    error = _link_error(chain, root_expires=NOW + 100, expires_at=NOW + 101)
    assert error.code == "open.delegation_invalid"
    assert "profile.delegation.expires" in detail_codes(error)


def test_delegation_refuses_a_parent_not_usable_now(chain: Chain) -> None:
    _, published, store, _, _ = chain
    root = grant_for(
        published, audience=BOB, rights=[Right.READ, Right.DELEGATE], not_before=NOW + 1
    )
    leaf = delegated(published, root, issuer=BOB, audience=CAROL)
    error = refusal(read_all, published, leaf, store, reader=CAROL, parents=[root])
    assert error.code == "open.parent_not_usable"


def _chain_of(published: Published, links: int) -> tuple[SignedDocument, list[SignedDocument]]:
    """A grant ``links`` delegations below a root grant, and its ancestors."""
    names = [f"did:example:agent-{i}" for i in range(links + 1)]
    for name in names:
        SIGNING.setdefault(name, signing_key(name))
        BOXES.setdefault(name, box_key(name))
    grants = [grant_for(published, audience=names[0], rights=[Right.READ, Right.DELEGATE])]
    for i in range(1, links + 1):
        grants.append(
            delegated(
                published,
                grants[-1],
                issuer=names[i - 1],
                audience=names[i],
                rights=[Right.READ, Right.DELEGATE],
            )
        )
    return grants[-1], grants[:-1]


def test_delegation_chain_at_the_depth_limit_opens(chain: Chain) -> None:
    data, published, store, _, _ = chain
    leaf, ancestors = _chain_of(published, 16)
    reader = leaf.document["audience"]
    assert read_all(published, leaf, store, reader=reader, parents=ancestors[::-1]) == data


def test_delegation_refuses_a_chain_beyond_the_depth_limit(chain: Chain) -> None:
    _, published, store, _, _ = chain
    leaf, ancestors = _chain_of(published, 17)
    reader = leaf.document["audience"]
    error = refusal(read_all, published, leaf, store, reader=reader, parents=ancestors)
    assert error.code == "open.delegation_too_deep"


def test_check_delegation_reports_every_broken_rule(chain: Chain) -> None:
    _, published, _, _, _ = chain
    root = grant_for(published, audience=DAVE, rights=[Right.READ], expires_at=NOW + 100)
    leaf = delegated(published, root, issuer=BOB, audience=CAROL, rights=[Right.READ, Right.DERIVE])
    codes = [p.code for p in check_delegation(leaf, root)]
    assert codes == [
        "profile.delegation.no_delegate",
        "profile.delegation.audience",
        "profile.delegation.rights",
        "profile.delegation.expires",
    ]


def test_check_delegation_refuses_a_parent_that_is_not_the_named_one(chain: Chain) -> None:
    _, published, _, _, child = chain
    unrelated = grant_for(published, audience=BOB, rights=[Right.READ, Right.DELEGATE])
    assert unrelated.cid != child.document["parent_grant"]
    codes = {p.code for p in check_delegation(child, unrelated)}
    assert codes == {"profile.delegation.parent_cid"}


def test_check_delegation_refuses_a_grant_without_parent(chain: Chain) -> None:
    _, _, _, root, _ = chain
    assert [p.code for p in check_delegation(root, root)] == ["profile.delegation.no_parent"]


def test_check_delegation_refuses_invalid_documents(chain: Chain) -> None:
    _, _, _, root, child = chain
    broken_child = {**child.document, "audience": "did:example:mallory"}
    broken_root = {**root.document, "audience": "did:example:mallory"}
    codes = [p.code for p in check_delegation(broken_child, broken_root)]
    assert codes == ["profile.delegation.child_invalid", "profile.delegation.parent_invalid"]


# --- documentation --------------------------------------------------------------------------

_CODE = r"(?:open|publish|issue|crypto|profile\.delegation)\.[a-z_]+"


def test_every_object_layer_code_is_documented_and_every_documented_one_exists() -> None:
    root = Path(__file__).resolve().parents[2]
    source = "".join(
        (root / "src" / "hearth" / "adds" / name).read_text(encoding="utf-8")
        for name in ("objects.py", "aead.py")
    )
    in_code = set(re.findall(rf'"({_CODE})"', source))
    docs = (root / "docs" / "adds.md").read_text(encoding="utf-8")
    section = docs[docs.index("## Objects: publish, grant, open") :]
    documented = set(re.findall(rf"^\| `({_CODE})` \|", section, re.MULTILINE))
    assert in_code == documented
    assert len(in_code) > 30
