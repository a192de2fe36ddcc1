"""FileBlockStore, and the contract both local stores keep (run against DirectoryBlockStore too).

Crash safety is shown three ways: a write that fails part-way inside the process, a child
process that dies (os._exit) half-way through writing a block, and a child killed with SIGKILL
at an arbitrary moment while it writes large blocks in a loop, one ``put`` at a time or in
batches (the path publish uses).
"""

from __future__ import annotations

import errno
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from hearth.adds.cid import cid_for_bytes
from hearth.blockstore import (
    MARKER_NAME,
    MARKER_TEXT,
    BlockCorrupt,
    BlockNotFound,
    BlockStore,
    BlockStoreError,
    DirectoryBlockStore,
    FileBlockStore,
    InvalidCid,
    direct_io,
)
from hearth.blockstore import fs as fs_module
from tests.support.blocks import INVALID_CIDS, files_under, make_block, temp_files

LocalStore = FileBlockStore | DirectoryBlockStore
KINDS: dict[str, Callable[[Path], LocalStore]] = {
    "file": FileBlockStore,
    "directory": DirectoryBlockStore,
}


def block_path(store: LocalStore, cid: str) -> Path:
    if isinstance(store, FileBlockStore):
        return store.root / "blocks" / cid[8:10] / cid
    return store.root / cid


def block_files(store: LocalStore) -> list[str]:
    """The files of a store other than its marker."""
    return [name for name in files_under(store.root) if name != MARKER_NAME]


@pytest.fixture(params=sorted(KINDS))
def local_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[LocalStore]:
    store = KINDS[request.param](tmp_path / "store")
    yield store
    store.close()


# --- the contract of both local stores ------------------------------------------------------


def test_round_trip(local_store: LocalStore) -> None:
    assert isinstance(local_store, BlockStore)
    blocks = dict(make_block(n, size) for n, size in enumerate([0, 1, 16, 1000, 70_000, 5]))
    for cid, data in blocks.items():
        assert not local_store.has(cid)
        local_store.put(cid, data)
        assert local_store.has(cid)
    for cid, data in blocks.items():
        assert local_store.get(cid) == data
        assert block_path(local_store, cid).read_bytes() == data
    assert sorted(local_store.cids()) == sorted(blocks)
    assert temp_files(local_store.root) == []


def test_put_of_a_held_block_does_not_rewrite_it(local_store: LocalStore) -> None:
    cid, data = make_block("again", 500)
    local_store.put(cid, data)
    before = block_path(local_store, cid).stat()
    local_store.put(cid, data)
    after = block_path(local_store, cid).stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert list(local_store.cids()) == [cid]


def test_put_replaces_a_damaged_copy(local_store: LocalStore) -> None:
    cid, data = make_block("repair", 300)
    local_store.put(cid, data)
    block_path(local_store, cid).write_bytes(data[:100])
    with pytest.raises(BlockCorrupt):
        local_store.get(cid)
    local_store.put(cid, data)
    assert local_store.get(cid) == data


def test_bytes_that_do_not_hash_to_the_cid_are_refused_and_nothing_is_written(
    local_store: LocalStore,
) -> None:
    cid, _ = make_block("claimed")
    _, other = make_block("actual")
    with pytest.raises(BlockCorrupt) as caught:
        local_store.put(cid, other)
    assert caught.value.cid == cid
    assert not local_store.has(cid)
    assert list(local_store.cids()) == []
    assert block_files(local_store) == []


@pytest.mark.parametrize("name", INVALID_CIDS.values(), ids=list(INVALID_CIDS))
def test_non_canonical_cids_are_refused(local_store: LocalStore, name: str) -> None:
    _, data = make_block("data")
    with pytest.raises(InvalidCid):
        local_store.put(name, data)
    with pytest.raises(ValueError, match=r"canonical ADDS CID|a CID is a string"):
        local_store.get(name)
    with pytest.raises(InvalidCid):
        local_store.has(name)
    assert block_files(local_store) == []


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[:-1],
        lambda data: data + b"\x00",
        lambda data: bytes([data[0] ^ 1]) + data[1:],
        lambda data: b"",
    ],
    ids=["truncated", "extended", "bit flip", "emptied"],
)
def test_a_damaged_file_is_refused_on_get(
    local_store: LocalStore, damage: Callable[[bytes], bytes]
) -> None:
    cid, data = make_block("damaged", 4096)
    local_store.put(cid, data)
    block_path(local_store, cid).write_bytes(damage(data))
    with pytest.raises(BlockCorrupt, match="damaged") as caught:
        local_store.get(cid)
    assert caught.value.cid == cid
    # has() only says a file is there; the bytes are judged when read.
    assert local_store.has(cid)


def test_a_missing_block_is_block_not_found_and_a_key_error(local_store: LocalStore) -> None:
    cid, _ = make_block("absent")
    with pytest.raises(BlockNotFound) as caught:
        local_store.get(cid)
    assert isinstance(caught.value, KeyError)
    assert isinstance(caught.value, BlockStoreError)
    assert caught.value.cid == cid
    assert str(caught.value).startswith(f"block {cid} is not in")  # not KeyError's quoting
    with pytest.raises(KeyError):
        local_store.get(cid)
    assert not local_store.has(cid)


def test_a_closed_store_refuses_everything(local_store: LocalStore) -> None:
    cid, data = make_block("closed")
    local_store.put(cid, data)
    local_store.close()
    for call in (
        lambda: local_store.put(cid, data),
        lambda: local_store.get(cid),
        lambda: local_store.has(cid),
        lambda: list(local_store.cids()),
        local_store.sweep,
    ):
        with pytest.raises(BlockStoreError, match="closed"):
            call()


def test_a_write_failing_part_way_leaves_nothing_visible(
    local_store: LocalStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    cid, data = make_block("disk full", 10_000)

    def half_then_full_disk(fd: int, payload: bytes) -> None:
        os.write(fd, payload[: len(payload) // 2])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(direct_io, "write_all", half_then_full_disk)
    with pytest.raises(BlockStoreError, match="No space left") as caught:
        local_store.put(cid, data)
    assert isinstance(caught.value.__cause__, OSError)
    assert not local_store.has(cid)
    assert list(local_store.cids()) == []
    assert block_files(local_store) == []  # the temp file was removed too
    monkeypatch.undo()
    local_store.put(cid, data)
    assert local_store.get(cid) == data


def test_a_failed_rename_leaves_nothing_visible(
    local_store: LocalStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    cid, data = make_block("rename", 1000)

    def refuse(source: object, target: object) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(fs_module.os, "replace", refuse)
    with pytest.raises(BlockStoreError, match="Input/output error"):
        local_store.put(cid, data)
    monkeypatch.undo()
    assert not local_store.has(cid)
    assert block_files(local_store) == []


CRASH_MID_WRITE = """
import os, sys
from pathlib import Path
from hearth.adds.cid import cid_for_bytes
from hearth.blockstore import DirectoryBlockStore, FileBlockStore
from hearth.blockstore import direct_io

def crash(fd, data):
    os.write(fd, data[: len(data) // 2])
    os._exit(17)  # no cleanup, no finally blocks: as a power cut would leave it

direct_io.write_all = crash
kind, root = sys.argv[1], Path(sys.argv[2])
store = FileBlockStore(root, create=False) if kind == "file" else DirectoryBlockStore(root)
data = bytes(range(256)) * 1024
store.put(cid_for_bytes(data), data)
"""


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_process_dying_mid_write_leaves_only_a_temp_file(kind: str, tmp_path: Path) -> None:
    root = tmp_path / "store"
    KINDS[kind](root).close()
    data = bytes(range(256)) * 1024
    cid = cid_for_bytes(data)
    child = subprocess.run(
        [sys.executable, "-c", CRASH_MID_WRITE, kind, str(root)],
        capture_output=True,
        check=False,
        timeout=60,
    )
    assert child.returncode == 17, child.stderr.decode()

    leftovers = temp_files(root)
    assert len(leftovers) == 1
    assert leftovers[0].stat().st_size == len(data) // 2
    store = KINDS[kind](root)
    assert not store.has(cid)
    assert list(store.cids()) == []
    with pytest.raises(BlockNotFound):
        store.get(cid)

    assert store.sweep() == 0  # fresh: it could belong to a live writer
    old = time.time() - 2 * 3600
    os.utime(leftovers[0], (old, old))
    assert store.sweep() == 1
    assert temp_files(root) == []
    store.put(cid, data)
    assert store.get(cid) == data


def test_sweep_all_spares_writes_in_progress_in_this_process(
    local_store: LocalStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    cid, data = make_block("in flight", 2000)
    crashed_leftover = local_store.root / ".tmp-leftover"
    crashed_leftover.write_bytes(b"partial")
    writing = threading.Event()
    release = threading.Event()
    original = direct_io.write_all

    def slow_write(fd: int, payload: bytes) -> None:
        writing.set()
        assert release.wait(10)
        original(fd, payload)

    monkeypatch.setattr(direct_io, "write_all", slow_write)
    writer = threading.Thread(target=local_store.put, args=(cid, data))
    writer.start()
    try:
        assert writing.wait(10)
        in_flight = [path for path in temp_files(local_store.root) if path != crashed_leftover]
        assert len(in_flight) == 1
        assert local_store.sweep(older_than=0) == 1
        assert temp_files(local_store.root) == in_flight
    finally:
        release.set()
        writer.join(10)
    assert local_store.get(cid) == data
    assert temp_files(local_store.root) == []


def test_sweep_refuses_a_negative_age(local_store: LocalStore) -> None:
    with pytest.raises(ValueError, match="older_than"):
        local_store.sweep(older_than=-1)


def test_many_threads_putting_the_same_and_different_blocks(local_store: LocalStore) -> None:
    shared = dict(make_block(f"shared-{n}", 3000 + n) for n in range(12))
    own = {t: dict(make_block(f"own-{t}-{n}", 500 + n) for n in range(8)) for t in range(16)}

    def work(thread: int) -> None:
        order = list(shared.items()) + list(own[thread].items())
        random.Random(thread).shuffle(order)
        for cid, data in order:
            local_store.put(cid, data)
            assert local_store.get(cid) == data

    with ThreadPoolExecutor(max_workers=16) as pool:
        list(pool.map(work, range(16)))

    expected = dict(shared)
    for blocks in own.values():
        expected.update(blocks)
    assert sorted(local_store.cids()) == sorted(expected)
    for cid, data in expected.items():
        assert local_store.get(cid) == data
    assert temp_files(local_store.root) == []


# --- FileBlockStore's own layout ------------------------------------------------------------


def test_layout_marker_and_even_shards(tmp_path: Path) -> None:
    store = FileBlockStore(tmp_path / "store", fsync=False)
    assert (store.root / MARKER_NAME).read_text() == MARKER_TEXT == "hearth-blockstore v1\n"
    blocks = dict(make_block(n, 8) for n in range(500))
    for cid, data in blocks.items():
        store.put(cid, data)
    # The first seven characters never vary; the shard comes from the digest.
    assert {cid[:7] for cid in blocks} == {"bafkrei"}
    for cid in blocks:
        assert (store.root / "blocks" / cid[8:10] / cid).is_file()
    # A shard directory is made on first use, so those present are the ones holding blocks;
    # the blocks spread evenly over the 1,024 possible.
    shards = {path.name for path in (store.root / "blocks").iterdir()}
    used = {path.parent.name for path in (store.root / "blocks").rglob("bafkrei*")}
    assert shards == used == {cid[8:10] for cid in blocks}
    assert shards <= set(fs_module.SHARDS)
    assert len(used) > 300  # 500 blocks over 1,024 shards: about 395 expected


def test_a_new_store_has_no_shards_and_put_makes_one_durable_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = FileBlockStore(tmp_path / "store")
    assert list((store.root / "blocks").iterdir()) == []
    synced: list[str] = []
    real_fsync_directory, real_replace = fs_module.fsync_directory, fs_module.os.replace

    def fsync_directory(path: Path) -> None:
        real_fsync_directory(path)
        synced.append(str(path))

    def replace(source: Any, target: Any) -> None:
        real_replace(source, target)
        synced.append(f"rename {Path(target).name}")

    monkeypatch.setattr(fs_module, "fsync_directory", fsync_directory)
    monkeypatch.setattr(fs_module.os, "replace", replace)
    cid, data = make_block("first")
    store.put(cid, data)
    blocks, shard = store.root / "blocks", store.root / "blocks" / cid[8:10]
    # The shard's entry in blocks/ is durable before the block is renamed into the shard.
    assert synced == [str(blocks), f"rename {cid}", str(shard)]
    synced.clear()
    other = next(make_block(n) for n in range(20_000) if make_block(n)[0][8:10] == cid[8:10])
    store.put(*other)
    assert synced == [f"rename {other[0]}", str(shard)]  # a shard already there: no fsync
    assert sorted(store.cids()) == sorted([cid, other[0]])


def test_reopening_a_store_sees_its_blocks(tmp_path: Path) -> None:
    cid, data = make_block("persist")
    with FileBlockStore(tmp_path / "store") as store:
        store.put(cid, data)
    reopened = FileBlockStore(tmp_path / "store", create=False)
    assert reopened.get(cid) == data
    assert list(reopened.cids()) == [cid]


def test_an_empty_existing_directory_becomes_a_store(tmp_path: Path) -> None:
    FileBlockStore(tmp_path)
    assert (tmp_path / MARKER_NAME).is_file()
    assert (tmp_path / "blocks").is_dir()


def test_opening_without_the_marker_is_refused(tmp_path: Path) -> None:
    with pytest.raises(BlockStoreError, match="not a hearth block store"):
        FileBlockStore(tmp_path, create=False)
    with pytest.raises(BlockStoreError, match="not a hearth block store"):
        FileBlockStore(tmp_path / "missing", create=False)
    assert not (tmp_path / "missing").exists()


def test_a_non_empty_directory_without_the_marker_is_never_taken_over(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(BlockStoreError, match="not empty"):
        FileBlockStore(tmp_path)
    assert files_under(tmp_path) == ["notes.txt"]


def test_a_file_is_not_a_store(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(BlockStoreError, match="not a directory"):
        FileBlockStore(tmp_path / "file")


@pytest.mark.parametrize(
    ("marker", "message"),
    [("hearth-blockstore v2\n", "another version"), ("something else\n", "not a hearth")],
)
def test_a_foreign_marker_is_refused(tmp_path: Path, marker: str, message: str) -> None:
    (tmp_path / MARKER_NAME).write_text(marker)
    with pytest.raises(BlockStoreError, match=message):
        FileBlockStore(tmp_path)


def test_stray_entries_are_not_listed(tmp_path: Path) -> None:
    store = FileBlockStore(tmp_path / "store")
    cid, data = make_block("kept")
    store.put(cid, data)
    stray_cid, stray_data = make_block("stray")
    shard = store.root / "blocks" / cid[8:10]
    (shard / "README").write_text("not a block")
    (shard / cid.upper()).write_bytes(data)
    (shard / ".tmp-0123").write_bytes(data[:3])
    wrong_shard = store.root / "blocks" / ("aa" if stray_cid[8:10] != "aa" else "bb")
    wrong_shard.mkdir(exist_ok=True)
    (wrong_shard / stray_cid).write_bytes(stray_data)
    (store.root / "blocks" / "loose-file").write_text("x")
    assert list(store.cids()) == [cid]
    assert not store.has(stray_cid)


KILL_WHILE_WRITING = """
import os, sys
from pathlib import Path
from hearth.adds.cid import cid_for_bytes
from hearth.blockstore import FileBlockStore

store = FileBlockStore(Path(sys.argv[1]), create=False)
payload = os.urandom(4 * 1024 * 1024)
n = int(sys.argv[2])
while True:
    data = n.to_bytes(8, "big") + payload
    cid = cid_for_bytes(data)
    store.put(cid, data)
    print(cid, flush=True)
    n += 1
"""

# The batch path publish uses: three 4 MiB blocks per batch, flushed in groups of two, so a
# kill can land in a write, between groups, or inside a flush (syncs, renames, directory syncs).
KILL_WHILE_BATCHING = """
import os, sys
from pathlib import Path
from hearth.adds.objects import HashedBlock
from hearth.blockstore import FileBlockStore

store = FileBlockStore(Path(sys.argv[1]), create=False)
payload = os.urandom(4 * 1024 * 1024)
n = int(sys.argv[2])
while True:
    batch = store.batch()
    batch._max_files = 2
    blocks = []
    for _ in range(3):
        blocks.append(HashedBlock.of(n.to_bytes(8, "big") + payload))
        batch.add(blocks[-1])
        n += 1
    batch.commit()
    for block in blocks:
        print(block.cid, flush=True)
"""


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")
@pytest.mark.parametrize("writer", ["put", "batch"])
def test_sigkill_while_writing_never_exposes_a_partial_block(writer: str, tmp_path: Path) -> None:
    root = tmp_path / "store"
    FileBlockStore(root).close()
    script = KILL_WHILE_WRITING if writer == "put" else KILL_WHILE_BATCHING
    acknowledged: list[str] = []
    rng = random.Random(7)
    for round_ in range(2 if writer == "put" else 4):
        before = {path.name for path in (root / "blocks").rglob("*")}
        child = subprocess.Popen(
            [sys.executable, "-c", script, str(root), str(round_ * 1000)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert child.stdout is not None
        for _ in range(3):
            line = child.stdout.readline().strip()
            assert line, "the writer stopped early"
            acknowledged.append(line)
        # Kill as soon as a file beyond the acknowledged blocks shows up (the next write's temp
        # file, or a partial block if writes were not atomic), so the signal lands mid-write;
        # for a batch, sometimes later, inside its flush.
        known = before | set(acknowledged)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            names = {path.name for path in (root / "blocks").rglob("*") if path.is_file()}
            if names - known:
                break
            time.sleep(0.0002)
        time.sleep(rng.uniform(0, 0.002 if writer == "put" or round_ < 2 else 0.05))
        child.send_signal(signal.SIGKILL)
        child.wait(30)
        child.stdout.close()
        assert child.returncode == -signal.SIGKILL

    store = FileBlockStore(root, create=False)
    held = list(store.cids())
    assert set(acknowledged) <= set(held)  # every completed put survived
    for cid in held:
        store.get(cid)  # verifies: raises BlockCorrupt on a partial block
    leftovers = temp_files(root)
    assert store.sweep(older_than=0) == len(leftovers)
    assert temp_files(root) == []
    assert sorted(store.cids()) == sorted(held)


def test_openers_of_one_new_store_at_once_all_get_it(tmp_path: Path) -> None:
    """Several workers of one service open the same empty blocks directory on their first
    upload: one that comes second sees the other's marker being written (its temp file, then
    the marker, then blocks/) and must take the store, not refuse it as a foreign non-empty
    directory. Threads stand in for the processes: the file system sees the same calls."""
    openers = 6
    for round_ in range(20):
        root = tmp_path / f"store-{round_}"
        barrier = threading.Barrier(openers)

        def open_store(root: Path = root, barrier: threading.Barrier = barrier) -> None:
            barrier.wait()
            FileBlockStore(root, create=True, fsync=True).close()

        with ThreadPoolExecutor(openers) as pool:
            outcomes = [pool.submit(open_store) for _ in range(openers)]
        assert [f.exception() for f in outcomes] == [None] * openers
        cid, data = make_block(round_)
        with FileBlockStore(root, create=False, fsync=False) as store:
            store.put(cid, data)
            assert store.get(cid) == data


# --- get_lent: the same verified bytes, without a copy of their own -----------------------


@pytest.mark.parametrize("size", [0, 1, 4096, (1 << 20) + 16])
def test_get_lent_gives_what_get_gives(local_store: LocalStore, size: int) -> None:
    cid, data = make_block(f"lent-{size}", size)
    local_store.put(cid, data)
    other_cid, other = make_block(f"lent-other-{size}", size + 1)
    local_store.put(other_cid, other)
    lent = local_store.get_lent(cid)
    assert bytes(lent) == data == local_store.get(cid)
    assert bytes(local_store.get_lent(other_cid)) == other


@pytest.mark.parametrize("damage", [lambda data: data[:-1], lambda data: b"x" + data[1:]])
def test_get_lent_refuses_a_damaged_or_missing_block_as_get_does(
    local_store: LocalStore, damage: Callable[[bytes], bytes]
) -> None:
    cid, data = make_block("lent-damaged", 4096)
    local_store.put(cid, data)
    block_path(local_store, cid).write_bytes(damage(data))
    with pytest.raises(BlockCorrupt, match="damaged"):
        local_store.get_lent(cid)
    absent, _ = make_block("lent-absent")
    with pytest.raises(BlockNotFound):
        local_store.get_lent(absent)
