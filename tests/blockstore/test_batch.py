"""Batches of the local stores: the trusted path publish uses, durable once per group.

A batch takes only HashedBlocks (CIDs computed from the bytes by hearth.adds), never a CID from
elsewhere; a block is invisible until its group is flushed; a flush fdatasyncs every file
before renaming any, and fsyncs each directory touched once, after the renames. The SIGKILL
test of the batch path is in test_fs.py, beside the one of ``put``.
"""

from __future__ import annotations

import errno
import os
import re
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from hearth.adds import issue_grant, objects, open_object, publish
from hearth.adds.keys import generate_key_pair
from hearth.adds.objects import BatchingBlockSink, HashedBlock
from hearth.blockstore import (
    BlockNotFound,
    BlockStoreError,
    DirectoryBlockStore,
    FileBlockStore,
    HttpBlockStore,
    direct_io,
)
from hearth.blockstore import fs as fs_module
from hearth.blockstore.fs import LocalBatch
from tests.support.blocks import files_under, make_block, temp_files

LocalStore = FileBlockStore | DirectoryBlockStore
KINDS: dict[str, Callable[[Path], LocalStore]] = {
    "file": FileBlockStore,
    "directory": DirectoryBlockStore,
}


@pytest.fixture(params=sorted(KINDS))
def local_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[LocalStore]:
    store = KINDS[request.param](tmp_path / "store")
    yield store
    store.close()


def hashed(seed: int | str, size: int = 2000) -> HashedBlock:
    _, data = make_block(seed, size)
    return HashedBlock.of(data)


def visible_blocks(store: LocalStore) -> list[str]:
    return sorted(store.cids())


def publish_and_open(store: LocalStore, data: bytes, *, chunk_size: int, workers: int) -> list[str]:
    """Publish ``data`` into ``store``, grant it, open it from there and check every byte; the
    CIDs of its blocks."""
    pair = generate_key_pair()
    published = publish(
        data,
        store,
        key=pair.signing,
        publisher_id="p",
        object_id="o",
        created_at=1_800_000_000,
        chunk_size=chunk_size,
        workers=workers,
    )
    grant = issue_grant(
        manifest=published.manifest,
        content_key=published.content_key,
        key=pair.signing,
        issuer_id="p",
        grant_id="g",
        audience="r",
        audience_x25519_public_key=pair.box_public,
        rights=["read"],
        issued_at=1_800_000_000,
        expires_at=1_800_086_400,
    )
    opened = open_object(
        published.manifest, grant, pair.box, store, now=1_800_000_001, workers=workers
    )
    assert b"".join(opened) == data
    return sorted({c["cid"] for c in published.manifest.document["chunks"]})


# --- the trusted path takes only what was hashed --------------------------------------------


def test_both_local_stores_batch_and_the_http_store_does_not(tmp_path: Path) -> None:
    for kind in KINDS.values():
        assert isinstance(kind(tmp_path / kind.__name__), BatchingBlockSink)
    # Uploads go through the verifying put: the provider hashes them again on its side anyway.
    assert not isinstance(HttpBlockStore("http://127.0.0.1:9"), BatchingBlockSink)


class Impostor:
    """Looks like a HashedBlock, but its CID was not computed from its bytes."""

    def __init__(self, cid: str, data: bytes) -> None:
        self.cid = cid
        self.data = data


def test_a_batch_refuses_anything_but_a_hashed_block(local_store: LocalStore) -> None:
    cid, _ = make_block("named elsewhere")
    batch = local_store.batch()
    with pytest.raises(TypeError, match="HashedBlock"):
        batch.add(Impostor(cid, b"other bytes"))  # type: ignore[arg-type]
    batch.commit()
    assert visible_blocks(local_store) == []
    assert temp_files(local_store.root) == []


def test_no_server_code_reaches_the_trusted_path() -> None:
    """The provider's routes take a CID from the URL and bytes from the body: they must use the
    verifying ``put``. The batch path (and HashedBlock, its key) is for ``publish`` alone."""
    server = Path(__file__).resolve().parents[2] / "src" / "hearth" / "server"
    offenders = [
        str(path.relative_to(server))
        for path in sorted(server.rglob("*.py"))
        if re.search(r"\.batch\(|HashedBlock|LocalBatch", path.read_text(encoding="utf-8"))
    ]
    assert offenders == []


# --- visibility and durability --------------------------------------------------------------


def test_blocks_are_invisible_until_commit(local_store: LocalStore) -> None:
    blocks = [hashed(n, 1000 + n) for n in range(5)]
    batch = local_store.batch()
    for block in blocks:
        batch.add(block)
    for block in blocks:
        assert not local_store.has(block.cid)
        with pytest.raises(BlockNotFound):
            local_store.get(block.cid)
    assert len(temp_files(local_store.root)) == 5
    batch.commit()
    assert visible_blocks(local_store) == sorted(b.cid for b in blocks)
    for block in blocks:
        assert local_store.get(block.cid) == block.data
    assert temp_files(local_store.root) == []


def test_abort_leaves_nothing(local_store: LocalStore) -> None:
    batch = local_store.batch()
    for n in range(4):
        batch.add(hashed(n))
    batch.abort()
    assert visible_blocks(local_store) == []
    assert temp_files(local_store.root) == []
    with pytest.raises(BlockStoreError, match="aborted"):
        batch.add(hashed("late"))
    batch.abort()  # again: harmless


def test_a_committed_batch_takes_no_more(local_store: LocalStore) -> None:
    batch = local_store.batch()
    batch.add(hashed(1))
    batch.commit()
    with pytest.raises(BlockStoreError, match="committed"):
        batch.add(hashed(2))
    with pytest.raises(BlockStoreError, match="committed"):
        batch.commit()
    batch.abort()  # after a commit: changes nothing
    assert visible_blocks(local_store) == [hashed(1).cid]


def test_a_closed_store_makes_no_batch(local_store: LocalStore) -> None:
    batch = local_store.batch()
    local_store.close()
    with pytest.raises(BlockStoreError, match="closed"):
        local_store.batch()
    with pytest.raises(BlockStoreError, match="closed"):
        batch.add(hashed(1))


def test_a_held_block_is_not_written_again(local_store: LocalStore) -> None:
    block = hashed("held")
    local_store.put(block.cid, block.data)
    before = os.stat(next(local_store.root.rglob(block.cid))).st_ino
    with local_store.batch() as batch:
        batch.add(block)
        assert temp_files(local_store.root) == []
    assert os.stat(next(local_store.root.rglob(block.cid))).st_ino == before


def _recording(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """Record every data sync (by temp file), rename and directory fsync, in order."""
    events: list[tuple[str, str]] = []
    names: dict[int, str] = {}
    lock = threading.Lock()
    real_open, real_datasync = fs_module.os.open, fs_module._datasync
    real_replace, real_fsync_directory = fs_module.os.replace, fs_module.fsync_directory

    def opening(path: Any, flags: int, *args: Any) -> int:
        fd = real_open(path, flags, *args)
        names[fd] = Path(path).name
        return fd

    def datasync(fd: int) -> None:
        real_datasync(fd)
        with lock:
            events.append(("datasync", names[fd]))

    def replace(source: Any, target: Any) -> None:
        real_replace(source, target)
        with lock:
            events.append(("rename", Path(source).name))

    def fsync_directory(path: Path) -> None:
        real_fsync_directory(path)
        with lock:
            events.append(("dirsync", str(path)))

    monkeypatch.setattr(fs_module.os, "open", opening)
    monkeypatch.setattr(fs_module, "_datasync", datasync)
    monkeypatch.setattr(fs_module.os, "replace", replace)
    monkeypatch.setattr(fs_module, "fsync_directory", fsync_directory)
    return events


@pytest.mark.parametrize("max_files", [3, 1000])
def test_a_flush_syncs_every_file_before_any_rename_and_each_directory_once(
    local_store: LocalStore, monkeypatch: pytest.MonkeyPatch, max_files: int
) -> None:
    blocks = [hashed(n, 500) for n in range(10)]
    recorded = _recording(monkeypatch)
    real_mkdir, recording_replace = Path.mkdir, fs_module.os.replace

    def mkdir(path: Path, *args: Any, **kwargs: Any) -> None:
        real_mkdir(path, *args, **kwargs)
        recorded.append(("mkdir", path.name))

    def replace(source: Any, target: Any) -> None:
        recorded.append(("into", Path(target).parent.name))
        recording_replace(source, target)

    monkeypatch.setattr(Path, "mkdir", mkdir)
    monkeypatch.setattr(fs_module.os, "replace", replace)
    batch = local_store.batch()
    assert isinstance(batch, LocalBatch)
    batch._max_files = max_files  # the default was bound when the batch was made
    for block in blocks:
        batch.add(block)
    batch.commit()
    # A FileBlockStore makes a shard directory on first use; a flush makes the entries of those
    # made since the last one durable (one fsync of blocks/) beside its datasyncs. So a block
    # is renamed into its shard only after blocks/ was fsynced, after the shard was made.
    shards_made = ("dirsync", str(local_store.root / "blocks"))
    made: set[str] = set()
    durable: set[str] = set()
    for kind, name in recorded:
        if kind == "mkdir":
            made.add(name)
        elif (kind, name) == shards_made:
            durable |= made
        elif kind == "into" and isinstance(local_store, FileBlockStore):
            assert name in durable
    if isinstance(local_store, FileBlockStore):
        assert made == {block.cid[8:10] for block in blocks}
    events = [event for event in recorded if event[0] not in ("mkdir", "into")]

    def before_renames(event: tuple[str, str]) -> bool:
        return event[0] == "datasync" or event == shards_made

    # Split the events into flushes: each is datasyncs (and that fsync of blocks/), then
    # renames, then directory fsyncs.
    flushes: list[list[tuple[str, str]]] = []
    for event in events:
        if before_renames(event) and (not flushes or not before_renames(flushes[-1][-1])):
            flushes.append([])
        flushes[-1].append(event)
    expected = -(-len(blocks) // max_files)
    assert len(flushes) == expected
    for flush in flushes:
        kinds = [kind for kind, _ in flush]
        count = kinds.count("datasync")
        first = sum(1 for event in flush if before_renames(event))
        assert all(before_renames(event) for event in flush[:first])
        assert kinds[first : first + count] == ["rename"] * count
        assert {name for kind, name in flush if kind == "datasync"} == {
            name for kind, name in flush if kind == "rename"
        }
        directories = [name for _, name in flush[first + count :]]
        assert kinds[first + count :] == ["dirsync"] * len(directories)
        assert len(directories) == len(set(directories)) >= 1  # each directory once
        assert flush[:first].count(shards_made) <= 1  # once per flush at most
        assert shards_made not in flush[first:]
    assert visible_blocks(local_store) == sorted(b.cid for b in blocks)


def test_without_fsync_a_batch_only_renames(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = FileBlockStore(tmp_path / "store", fsync=False)
    events = _recording(monkeypatch)
    with store.batch() as batch:
        for n in range(4):
            batch.add(hashed(n))
    assert [kind for kind, _ in events] == ["rename"] * 4


def test_a_failed_rename_in_a_flush_leaves_no_temp_file(
    local_store: LocalStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_replace = fs_module.os.replace
    calls = 0

    def second_fails(source: Any, target: Any) -> None:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise OSError(errno.EIO, "Input/output error")
        real_replace(source, target)

    monkeypatch.setattr(fs_module.os, "replace", second_fails)
    blocks = [hashed(n) for n in range(4)]
    batch = local_store.batch()
    for block in blocks:
        batch.add(block)
    with pytest.raises(BlockStoreError, match="Input/output error"):
        batch.commit()
    batch.abort()
    monkeypatch.undo()
    # The block renamed before the failure was already durable; nothing else is visible.
    assert visible_blocks(local_store) == [blocks[0].cid]
    assert local_store.get(blocks[0].cid) == blocks[0].data
    assert temp_files(local_store.root) == []


def test_a_write_failing_in_add_leaves_nothing(
    local_store: LocalStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    def half_then_full_disk(fd: int, payload: bytes) -> None:
        os.write(fd, payload[: len(payload) // 2])
        raise OSError(errno.ENOSPC, "No space left on device")

    batch = local_store.batch()
    batch.add(hashed("first"))
    monkeypatch.setattr(direct_io, "write_all", half_then_full_disk)
    with pytest.raises(BlockStoreError, match="No space left"):
        batch.add(hashed("second"))
    batch.abort()
    assert visible_blocks(local_store) == []
    assert temp_files(local_store.root) == []


def test_sweep_spares_a_batch_waiting_for_its_commit(local_store: LocalStore) -> None:
    batch = local_store.batch()
    for n in range(3):
        batch.add(hashed(n))
    assert local_store.sweep(older_than=0) == 0
    assert len(temp_files(local_store.root)) == 3
    batch.commit()
    assert len(visible_blocks(local_store)) == 3


def test_many_threads_adding_to_one_batch(
    local_store: LocalStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocks = [hashed(n, 300 + n) for n in range(200)]
    batch = local_store.batch()
    assert isinstance(batch, LocalBatch)
    batch._max_files = 7  # groups are handed to the flusher by whichever thread fills them
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(batch.add, blocks))
    batch.commit()
    assert visible_blocks(local_store) == sorted(b.cid for b in blocks)
    for block in blocks:
        assert local_store.get(block.cid) == block.data
    assert temp_files(local_store.root) == []


def test_a_full_group_is_flushed_in_the_background_while_adds_go_on(
    local_store: LocalStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The first group's fdatasyncs wait until the test lets them go: the adds of the next
    # group must not wait with them, and none of the first group is visible until they end.
    release, syncing = threading.Event(), threading.Event()
    syncing_threads: set[str] = set()
    real_datasync = fs_module._datasync

    def held(fd: int) -> None:
        syncing_threads.add(threading.current_thread().name)
        syncing.set()
        assert release.wait(10)
        real_datasync(fd)

    monkeypatch.setattr(fs_module, "_datasync", held)
    blocks = [hashed(n) for n in range(6)]
    batch = local_store.batch()
    assert isinstance(batch, LocalBatch)
    batch._max_files = 3
    for block in blocks[:3]:
        batch.add(block)  # the third fills the group and hands it over
    assert syncing.wait(10)
    batch.add(blocks[3])
    batch.add(blocks[4])  # still flushing the first group, and these went on
    assert visible_blocks(local_store) == []
    release.set()
    batch.add(blocks[5])  # fills the second group: waits for the first, hands this one over
    batch.commit()
    assert visible_blocks(local_store) == sorted(b.cid for b in blocks)
    assert threading.current_thread().name not in syncing_threads
    assert all(name.startswith("adds-flush") for name in syncing_threads)
    assert temp_files(local_store.root) == []


@pytest.mark.parametrize("raised_by", ["add", "commit"])
def test_a_background_flush_that_fails_fails_the_batch(
    local_store: LocalStore, monkeypatch: pytest.MonkeyPatch, raised_by: str
) -> None:
    real_datasync = fs_module._datasync
    calls = 0

    def second_fails(fd: int) -> None:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise OSError(errno.EIO, "Input/output error")
        real_datasync(fd)

    monkeypatch.setattr(fs_module, "_datasync", second_fails)
    blocks = [hashed(n) for n in range(7)]
    batch = local_store.batch()
    assert isinstance(batch, LocalBatch)
    batch._max_files = 3
    for block in blocks[:4]:
        batch.add(block)  # the first group (three) is being flushed, and fails
    if raised_by == "add":
        batch.add(blocks[4])
        with pytest.raises(BlockStoreError, match="Input/output error"):
            batch.add(blocks[5])  # fills the second group: its hand-over meets the failure
        with pytest.raises(BlockStoreError, match="batch that is failed"):
            batch.add(blocks[6])
        with pytest.raises(BlockStoreError, match="batch that is failed"):
            batch.commit()
    else:
        with pytest.raises(BlockStoreError, match="Input/output error"):
            batch.commit()
    batch.abort()
    monkeypatch.undo()
    assert visible_blocks(local_store) == []  # the failure came before any rename
    assert temp_files(local_store.root) == []


def test_publish_seals_straight_into_a_durable_store_s_write_buffer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With direct I/O the batch lends each sealing thread its aligned buffer, and no block is
    sealed into a buffer of its own; without (fsync off) blocks come as bytes. Either way the
    object opens."""
    real_encrypt_chunk, real_into = objects.encrypt_chunk, objects.encrypt_chunk_into
    calls: dict[str, int] = {"bytes": 0, "into": 0}

    def counted_bytes(*args: Any, **kwargs: Any) -> bytes:
        calls["bytes"] += 1
        return real_encrypt_chunk(*args, **kwargs)

    def counted_into(*args: Any, **kwargs: Any) -> int:
        calls["into"] += 1
        return real_into(*args, **kwargs)

    monkeypatch.setattr(objects, "encrypt_chunk", counted_bytes)
    monkeypatch.setattr(objects, "encrypt_chunk_into", counted_into)
    data = os.urandom(6 * 4096 + 5)
    for fsync in (True, False):
        calls.update(bytes=0, into=0)
        store = FileBlockStore(tmp_path / f"store-{fsync}", fsync=fsync)
        publish_and_open(store, data, chunk_size=4096, workers=3)
        if not fsync:
            assert calls == {"bytes": 7, "into": 0}
        elif store._files.direct.enabled:
            assert calls == {"bytes": 0, "into": 7}
        else:  # this file system refused O_DIRECT at the first write: bytes from then on
            assert calls["into"] + calls["bytes"] == 7


# --- publish and open through the file stores -----------------------------------------------


@pytest.mark.parametrize("workers", [1, 2])
def test_publish_into_a_local_store_and_open_from_it(local_store: LocalStore, workers: int) -> None:
    data = os.urandom(5 * 65536 + 17)
    cids = publish_and_open(local_store, data, chunk_size=65536, workers=workers)
    assert visible_blocks(local_store) == cids
    assert temp_files(local_store.root) == []


def test_a_publish_that_fails_leaves_no_block_and_no_temp_file(
    local_store: LocalStore,
) -> None:
    def pieces() -> Iterator[bytes]:
        yield os.urandom(4 * 4096)
        raise ConnectionError("source lost")

    pair = generate_key_pair()
    with pytest.raises(ConnectionError):
        publish(
            pieces(),
            local_store,
            key=pair.signing,
            publisher_id="p",
            object_id="o",
            created_at=1_800_000_000,
            chunk_size=4096,
            workers=2,
        )
    assert visible_blocks(local_store) == []
    assert [name for name in files_under(local_store.root) if ".tmp-" in name] == []
