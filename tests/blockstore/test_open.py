"""open_block_store's choice of store, and copy_blocks between stores."""

from __future__ import annotations

from pathlib import Path

import pytest

from hearth.blockstore import (
    MARKER_NAME,
    BlockCorrupt,
    BlockNotFound,
    BlockStoreError,
    CopyResult,
    DirectoryBlockStore,
    FileBlockStore,
    HttpBlockStore,
    InvalidCid,
    copy_blocks,
    open_block_store,
)
from tests.support.blocks import files_under, make_block


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:9/", "https://provider.example", "https://p.example/base/"]
)
def test_urls_open_a_provider(url: str) -> None:
    store = open_block_store(url, bearer="token")
    assert isinstance(store, HttpBlockStore)
    assert store.base_url == url.rstrip("/")
    store.close()


def test_a_directory_with_the_marker_opens_as_a_file_store(tmp_path: Path) -> None:
    cid, data = make_block("marked")
    FileBlockStore(tmp_path / "store").put(cid, data)
    store = open_block_store(str(tmp_path / "store"))
    assert isinstance(store, FileBlockStore)
    assert store.get(cid) == data


def test_a_directory_without_the_marker_opens_as_the_plain_form(tmp_path: Path) -> None:
    cid, data = make_block("plain")
    (tmp_path / cid).write_bytes(data)
    for location in (str(tmp_path), tmp_path):
        store = open_block_store(location, create=True)
        assert isinstance(store, DirectoryBlockStore)
        assert store.get(cid) == data
    assert not (tmp_path / MARKER_NAME).exists()


def test_a_missing_path_becomes_a_new_file_store_only_when_asked(tmp_path: Path) -> None:
    missing = tmp_path / "new" / "store"
    with pytest.raises(BlockStoreError, match="no block store at"):
        open_block_store(str(missing))
    assert not missing.exists()
    store = open_block_store(str(missing), create=True)
    assert isinstance(store, FileBlockStore)
    assert (missing / MARKER_NAME).is_file()


@pytest.mark.parametrize(
    ("location", "message"),
    [
        ("", "no block store location"),
        ("ftp://provider.example/blocks", "unsupported block store URL"),
        ("file:///tmp/blocks", "unsupported block store URL"),
    ],
)
def test_unusable_locations_are_refused(location: str, message: str) -> None:
    with pytest.raises(BlockStoreError, match=message):
        open_block_store(location, create=True)


def test_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "blocks.tar").write_bytes(b"x")
    with pytest.raises(BlockStoreError, match="not a directory"):
        open_block_store(str(tmp_path / "blocks.tar"), create=True)


def test_copy_converts_a_store_to_the_plain_form_and_back(tmp_path: Path) -> None:
    store = FileBlockStore(tmp_path / "store")
    blocks = dict(make_block(n, 200 + n) for n in range(6))
    for cid, data in blocks.items():
        store.put(cid, data)

    plain = DirectoryBlockStore(tmp_path / "plain")
    seen: list[tuple[str, bool]] = []
    result = copy_blocks(store, plain, progress=lambda cid, copied: seen.append((cid, copied)))
    assert result == CopyResult(copied=6, present=0)
    assert sorted(seen) == sorted((cid, True) for cid in blocks)
    assert files_under(tmp_path / "plain") == sorted(blocks)

    back = FileBlockStore(tmp_path / "back")
    first = sorted(blocks)[:2]
    assert copy_blocks(plain, back, first) == CopyResult(copied=2, present=0)
    assert copy_blocks(plain, back) == CopyResult(copied=4, present=2)
    for cid, data in blocks.items():
        assert back.get(cid) == data


def test_copy_stops_at_a_missing_or_damaged_source_block(tmp_path: Path) -> None:
    source = DirectoryBlockStore(tmp_path / "source")
    target = DirectoryBlockStore(tmp_path / "target")
    good, good_data = make_block("good")
    bad, bad_data = make_block("bad")
    absent, _ = make_block("absent")
    source.put(good, good_data)
    (tmp_path / "source" / bad).write_bytes(bad_data[:-1])

    with pytest.raises(BlockNotFound):
        copy_blocks(source, target, [good, absent])
    assert list(target.cids()) == [good]
    with pytest.raises(BlockCorrupt):
        copy_blocks(source, target, [bad])
    assert not target.has(bad)
    with pytest.raises(InvalidCid):
        copy_blocks(source, target, ["not-a-cid"])
