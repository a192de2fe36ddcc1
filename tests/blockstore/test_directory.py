"""DirectoryBlockStore: the plain interchange form (the shared contract is in test_fs.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from hearth.blockstore import (
    MARKER_NAME,
    BlockCorrupt,
    BlockNotFound,
    BlockStoreError,
    DirectoryBlockStore,
    FileBlockStore,
)
from tests.support.blocks import files_under, make_block, with_tail_bits


def test_blocks_are_flat_files_named_by_their_cids(tmp_path: Path) -> None:
    store = DirectoryBlockStore(tmp_path)
    blocks = dict(make_block(n, 100 + n) for n in range(5))
    for cid, data in blocks.items():
        store.put(cid, data)
    assert files_under(tmp_path) == sorted(blocks)
    for cid, data in blocks.items():
        assert (tmp_path / cid).read_bytes() == data
    assert [path for path in tmp_path.iterdir() if path.is_dir()] == []
    assert list(store.cids()) == sorted(blocks)


def test_files_written_by_other_tools_are_read_and_strays_ignored(tmp_path: Path) -> None:
    cid, data = make_block("copied in")
    (tmp_path / cid).write_bytes(data)  # as cp or an archive would leave it
    other_cid, other_data = make_block("other")
    (tmp_path / "README.md").write_text("blocks of my backup")
    (tmp_path / ".tmp-abc").write_bytes(b"partial")
    (tmp_path / cid.upper()).write_bytes(data)
    (tmp_path / with_tail_bits(other_cid)).write_bytes(other_data)
    (tmp_path / other_cid).mkdir()  # a directory named like a CID is not a block
    store = DirectoryBlockStore(tmp_path, create=False)
    assert list(store.cids()) == [cid]
    assert store.get(cid) == data
    assert not store.has(other_cid)
    with pytest.raises(BlockNotFound):
        store.get(other_cid)


def test_a_file_under_the_wrong_name_is_refused_on_get(tmp_path: Path) -> None:
    cid, _ = make_block("name")
    _, other = make_block("content")
    (tmp_path / cid).write_bytes(other)
    store = DirectoryBlockStore(tmp_path)
    assert list(store.cids()) == [cid]  # listing reads names only
    with pytest.raises(BlockCorrupt):
        store.get(cid)


def test_a_missing_directory_is_made_with_its_parents(tmp_path: Path) -> None:
    root = tmp_path / "a" / "b" / "blocks"
    store = DirectoryBlockStore(root)
    assert root.is_dir()
    cid, data = make_block("new")
    store.put(cid, data)
    assert (root / cid).read_bytes() == data


def test_refusals(tmp_path: Path) -> None:
    with pytest.raises(BlockStoreError, match="no directory"):
        DirectoryBlockStore(tmp_path / "missing", create=False)
    (tmp_path / "file").write_text("x")
    with pytest.raises(BlockStoreError, match="not a directory"):
        DirectoryBlockStore(tmp_path / "file")
    FileBlockStore(tmp_path / "store")
    with pytest.raises(BlockStoreError, match=MARKER_NAME):
        DirectoryBlockStore(tmp_path / "store")


def test_a_plain_copy_of_the_directory_is_a_store(tmp_path: Path) -> None:
    source = DirectoryBlockStore(tmp_path / "out")
    blocks = dict(make_block(n, 300) for n in range(4))
    for cid, data in blocks.items():
        source.put(cid, data)
    shutil.copytree(tmp_path / "out", tmp_path / "elsewhere")
    copy = DirectoryBlockStore(tmp_path / "elsewhere", create=False)
    assert sorted(copy.cids()) == sorted(blocks)
    for cid, data in blocks.items():
        assert copy.get(cid) == data
