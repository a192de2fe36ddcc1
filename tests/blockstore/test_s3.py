"""S3BlockStore against a real S3 server (SeaweedFS): the local stores' guarantees, a corrupted
object refused, and a store that stops answering failing with a clear error."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import obstore
import pytest
from obstore.store import S3Store
from typer.testing import CliRunner, Result

from hearth.adds import cid_for_bytes
from hearth.adds.objects import (
    READ_AHEAD_BYTES,
    HashedBlock,
    open_object,
    open_threads,
    publish,
)
from hearth.blockstore import BlockCorrupt, BlockNotFound, BlockStoreError, InvalidCid
from hearth.blockstore.open import open_block_store
from hearth.blockstore.s3 import S3BlockStore, parse_s3_url
from hearth.cli.main import app
from tests.support.adds_objects import ALICE, BOB, BOXES, NOW, SIGNING, grant_for
from tests.support.seaweedfs import SeaweedS3, seaweedfs


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SeaweedS3]:
    with seaweedfs(tmp_path_factory.mktemp("seaweedfs")) as server:
        yield server


@pytest.fixture
def store(s3: SeaweedS3, request: pytest.FixtureRequest) -> S3BlockStore:
    return S3BlockStore(f"s3://{s3.bucket}/{request.node.name}", config=s3.config())


def test_put_get_has_cids(store: S3BlockStore) -> None:
    blocks = [os.urandom(n) for n in (0, 1, 1000, 1 << 20)]
    for block in blocks:
        store.put(cid_for_bytes(block), block)
        store.put(cid_for_bytes(block), block)  # held: a no-op
    for block in blocks:
        assert store.get(cid_for_bytes(block)) == block
        assert store.has(cid_for_bytes(block))
    assert sorted(store.cids()) == sorted(cid_for_bytes(b) for b in blocks)
    absent = cid_for_bytes(b"absent")
    assert not store.has(absent)
    with pytest.raises(BlockNotFound):
        store.get(absent)
    with pytest.raises(BlockCorrupt):
        store.put(absent, b"other bytes")
    assert not store.has(absent)
    with pytest.raises(InvalidCid):
        store.get("../etc/passwd")


def test_a_corrupted_object_is_refused_and_replaced_by_a_put(s3: SeaweedS3) -> None:
    store = S3BlockStore(f"s3://{s3.bucket}/corrupt", config=s3.config())
    block = b"the real block"
    cid = cid_for_bytes(block)
    store.put(cid, block)
    # The bucket itself, written by something else that damages the object.
    raw = S3Store(s3.bucket, **s3.config(), client_options={"allow_http": True})
    obstore.put(raw, f"corrupt/{cid}", b"the real bloc!")
    with pytest.raises(BlockCorrupt):
        store.get(cid)
    store.put(cid, block)  # a damaged copy is replaced; an intact one never is
    assert store.get(cid) == block


def test_publish_and_open_through_s3(store: S3BlockStore) -> None:
    data = os.urandom(3 * 1024 * 1024 + 5)
    published = publish(
        data,
        store,
        key=SIGNING[ALICE],
        publisher_id=ALICE,
        object_id="s3-object",
        created_at=NOW,
        chunk_size=1024 * 1024,
    )
    grant = grant_for(published)
    # The store asks for 6 reads in flight: 2 workers become 6 threads for 1 MiB chunks, in
    # order all the same; bigger chunks get fewer, within the opener's read-ahead budget.
    opened = open_object(published.manifest, grant, BOXES[BOB], store, now=NOW, workers=2)
    assert opened.threads == 6
    assert b"".join(opened) == data
    assert open_threads(store, 2, READ_AHEAD_BYTES // 4) == 4
    assert open_threads(store, 2, 16 * 1024 * 1024) == 2
    assert open_threads(store, 12, 1024) == 12


def test_publish_uploads_from_its_sealing_threads_through_a_batch(s3: SeaweedS3) -> None:
    """With several workers publish hands the store HashedBlocks through its batch: each
    sealing thread uploads what it sealed; every chunk is stored and the object opens."""
    store = S3BlockStore(f"s3://{s3.bucket}/batched", config=s3.config())
    data = os.urandom(5 * 256 * 1024 + 7)
    published = publish(
        data,
        store,
        key=SIGNING[ALICE],
        publisher_id=ALICE,
        object_id="s3-batched",
        created_at=NOW,
        chunk_size=256 * 1024,
        workers=3,
    )
    chunks = {chunk["cid"] for chunk in published.manifest.document["chunks"]}
    assert len(chunks) == 6
    assert set(store.cids()) == chunks
    opened = open_object(published.manifest, grant_for(published), BOXES[BOB], store, now=NOW)
    assert b"".join(opened) == data


def test_a_batch_takes_hashed_blocks_only_and_replaces_a_damaged_copy(s3: SeaweedS3) -> None:
    store = S3BlockStore(f"s3://{s3.bucket}/batch", config=s3.config())
    block = HashedBlock.of(b"a sealed block")
    raw = S3Store(s3.bucket, **s3.config(), client_options={"allow_http": True})
    obstore.put(raw, f"batch/{block.cid}", b"a sealed bloc!")  # damaged by something else
    batch = store.batch()
    with pytest.raises(TypeError):
        batch.add(b"bytes named by nobody")  # type: ignore[arg-type]
    batch.add(block)
    batch.add(block)  # held intact now: a no-op
    batch.commit()
    assert store.get(block.cid) == b"a sealed block"


def test_open_block_store_takes_an_s3_url(s3: SeaweedS3, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in s3.env().items():
        monkeypatch.setenv(name, value)
    store = open_block_store(f"s3://{s3.bucket}/by-url")
    assert isinstance(store, S3BlockStore)
    store.put(cid_for_bytes(b"x"), b"x")
    assert store.get(cid_for_bytes(b"x")) == b"x"
    assert parse_s3_url("s3://b/a/b/") == ("b", "a/b")
    with pytest.raises(BlockStoreError):
        parse_s3_url("s3:///nobucket")


def test_an_unreachable_store_is_a_clear_error(s3: SeaweedS3) -> None:
    dead = {**s3.config(), "endpoint": "http://127.0.0.1:9"}  # nothing listens on discard
    store = S3BlockStore(f"s3://{s3.bucket}/dead", config=dead)
    with pytest.raises(BlockStoreError, match="failed to store block") as caught:
        store.put(cid_for_bytes(b"y"), b"y")
    assert "s3://" in str(caught.value)
    with pytest.raises(BlockStoreError, match="failed to answer a probe"):
        store.probe(2.0)
    S3BlockStore(f"s3://{s3.bucket}/alive", config=s3.config()).probe(2.0)


def test_the_cli_publishes_to_and_opens_from_s3(
    s3: SeaweedS3, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in s3.env().items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("HEARTH_HOME", str(tmp_path / "no-home"))
    monkeypatch.delenv("HEARTH_BEARER", raising=False)

    def cli(*args: str | Path) -> Result:
        result = CliRunner().invoke(app, [str(a) for a in args])
        assert result.exit_code == 0, (result.stderr, result.exception)
        return result

    blocks = f"s3://{s3.bucket}/cli"
    source = tmp_path / "source.bin"
    source.write_bytes(os.urandom(300_000))
    cli("adds", "keygen", "--out", tmp_path / "alice")
    bob = cli("adds", "keygen", "--out", tmp_path / "bob").stdout
    bob_public = dict(line.split(": ") for line in bob.strip().splitlines())["x25519_public_key"]
    manifest, grant, out = tmp_path / "m.json", tmp_path / "g.json", tmp_path / "out.bin"
    cli(
        "adds", "publish", source, "--key", tmp_path / "alice.ed25519.pem",
        "--publisher-id", "did:example:alice", "--blocks", blocks, "-o", manifest,
        "--content-key-out", tmp_path / "content.key",
    )  # fmt: skip
    cli(
        "adds", "grant", manifest, "--key", tmp_path / "alice.ed25519.pem",
        "--content-key", tmp_path / "content.key",
        "--issuer-id", "did:example:alice", "--audience", "did:example:bob",
        "--audience-key", bob_public, "--now", str(NOW), "-o", grant,
    )  # fmt: skip
    cli(
        "adds", "open", manifest, "--grant", grant, "--key", tmp_path / "bob.x25519.pem",
        "--blocks", blocks, "--now", str(NOW + 60), "-o", out,
    )  # fmt: skip
    assert out.read_bytes() == source.read_bytes()
