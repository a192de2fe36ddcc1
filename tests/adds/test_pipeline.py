"""The concurrent paths of publish and open: batching sinks, HashedBlock, and open's workers.

Blocks live in memory here (the file stores' batches are tested in tests/blockstore): a
batching sink records what reaches it and from which thread, and sources answer out of order,
slowly, or with bad bytes, to show that chunks still come out in order and that a refusal
stops the iteration at its own position.
"""

from __future__ import annotations

import gc
import random
import threading
import time
import tracemalloc
from typing import Any, ClassVar

import pytest

from hearth.adds import AddsError, OpenError, open_object, publish
from hearth.adds import objects as objects_module
from hearth.adds.cid import cid_for_bytes
from hearth.adds.objects import BatchingBlockSink, HashedBlock
from tests.support.adds_objects import (
    ALICE,
    BOB,
    BOXES,
    CHUNK,
    NOW,
    SIGNING,
    MemoryStore,
    do_publish,
    grant_for,
    pseudo_random,
    read_all,
    refusal,
)

# --- HashedBlock ----------------------------------------------------------------------------


def test_hashed_block_names_its_bytes() -> None:
    data = b"some ciphertext"
    block = HashedBlock.of(data)
    assert block.cid == cid_for_bytes(data)
    assert block.data is data


def test_hashed_block_cannot_be_made_with_a_cid_from_elsewhere() -> None:
    other = cid_for_bytes(b"other")
    with pytest.raises(TypeError, match=r"HashedBlock\.of"):
        HashedBlock(other, b"some ciphertext")
    with pytest.raises(TypeError, match=r"HashedBlock\.of"):
        HashedBlock(other, b"some ciphertext", _mint=object())


def test_hashed_block_cannot_be_changed_after_hashing() -> None:
    block = HashedBlock.of(b"abc")
    with pytest.raises(AttributeError):
        block.cid = cid_for_bytes(b"xyz")  # type: ignore[misc]
    with pytest.raises(AttributeError):
        block.data = b"xyz"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del block.data
    assert block.cid == cid_for_bytes(b"abc")


@pytest.mark.parametrize("data", [bytearray(b"abc"), memoryview(b"abc"), "abc"])
def test_hashed_block_holds_only_immutable_bytes(data: Any) -> None:
    # A bytearray could change after hashing, and the name would no longer be true.
    with pytest.raises(TypeError, match="bytes"):
        HashedBlock.of(data)


# --- publish into a batching sink -----------------------------------------------------------


class BatchingStore(MemoryStore):
    """A MemoryStore that takes blocks as a batch, visible only once committed."""

    def __init__(self, fail_at: int | None = None, delay: float = 0.0) -> None:
        super().__init__()
        self.fail_at = fail_at
        self.delay = delay
        self.added: list[str] = []
        self.threads: set[str] = set()
        self.commits = 0
        self.aborts = 0
        self.puts = 0
        self._lock = threading.Lock()

    def put(self, cid: str, data: bytes) -> None:
        self.puts += 1
        super().put(cid, data)

    def batch(self) -> Batch:
        return Batch(self)


class Batch:
    def __init__(self, store: BatchingStore) -> None:
        self.store = store
        self.pending: dict[str, bytes] = {}

    def add(self, block: HashedBlock) -> None:
        assert isinstance(block, HashedBlock)
        assert block.cid == cid_for_bytes(block.data)
        if self.store.delay:
            time.sleep(random.uniform(0, self.store.delay))
        with self.store._lock:
            if self.store.fail_at is not None and len(self.store.added) == self.store.fail_at:
                raise OSError("disk full")
            self.store.added.append(block.cid)
            self.store.threads.add(threading.current_thread().name)
            self.pending[block.cid] = block.data

    def commit(self) -> None:
        self.store.commits += 1
        self.store.blocks.update(self.pending)
        self.pending.clear()

    def abort(self) -> None:
        self.store.aborts += 1
        self.pending.clear()


def test_a_batching_store_is_recognised() -> None:
    assert isinstance(BatchingStore(), BatchingBlockSink)
    assert not isinstance(MemoryStore(), BatchingBlockSink)


@pytest.mark.parametrize("workers", [1, 2, 4])
def test_publish_into_a_batch_round_trips_and_commits_once(workers: int) -> None:
    data = pseudo_random(23 * CHUNK + 7, seed=workers)
    store = BatchingStore(delay=0.002)
    published, _ = do_publish(data, store, workers=workers)
    cids = [c["cid"] for c in published.manifest.document["chunks"]]
    assert sorted(store.added) == sorted(cids)
    assert (store.commits, store.aborts, store.puts) == (1, 0, 0)
    if workers > 1:  # written by the threads that sealed them, not by the calling thread
        assert all(name.startswith("adds-publish") for name in store.threads)
    assert read_all(published, grant_for(published), store) == data


@pytest.mark.parametrize("workers", [1, 3])
def test_a_failing_batch_add_aborts_and_propagates(workers: int) -> None:
    store = BatchingStore(fail_at=5)
    with pytest.raises(OSError, match="disk full"):
        do_publish(pseudo_random(20 * CHUNK), store, workers=workers)
    assert (store.commits, store.aborts) == (0, 1)
    assert store.blocks == {}  # nothing was made visible


def test_a_failing_source_aborts_the_batch() -> None:
    def pieces() -> Any:
        yield pseudo_random(5 * CHUNK)
        raise ConnectionError("upload interrupted")

    store = BatchingStore()
    with pytest.raises(ConnectionError):
        do_publish(pieces(), store, workers=2)
    assert (store.commits, store.aborts) == (0, 1)
    assert store.blocks == {}


def test_a_failing_commit_aborts_and_propagates() -> None:
    class Failing(BatchingStore):
        def batch(self) -> Batch:
            batch = Batch(self)

            def commit() -> None:
                raise OSError("fsync failed")

            batch.commit = commit  # type: ignore[method-assign]
            return batch

    store = Failing()
    with pytest.raises(OSError, match="fsync failed"):
        do_publish(pseudo_random(3 * CHUNK), store)
    assert store.aborts == 1


# --- open with workers ----------------------------------------------------------------------


class Jittery(MemoryStore):
    """Answers after a random delay, so fetches complete out of order."""

    def __init__(self, blocks: dict[str, bytes], slow: set[str] | None = None) -> None:
        super().__init__()
        self.blocks = dict(blocks)
        self.slow = slow or set()
        self.threads: set[str] = set()
        self._lock = threading.Lock()

    def get(self, cid: str) -> bytes:
        time.sleep(0.05 if cid in self.slow else random.uniform(0, 0.003))
        with self._lock:
            self.threads.add(threading.current_thread().name)
        return super().get(cid)


@pytest.mark.parametrize("workers", [2, 5])
def test_open_with_workers_yields_chunks_in_order(workers: int) -> None:
    data = pseudo_random(30 * CHUNK + 3, seed=11)
    published, store = do_publish(data)
    source = Jittery(store.blocks)
    pieces = list(
        open_object(
            published.manifest, grant_for(published), BOXES[BOB], source, now=NOW, workers=workers
        )
    )
    assert b"".join(pieces) == data
    assert [len(p) for p in pieces] == [CHUNK] * 30 + [3]
    assert all(name.startswith("adds-open") for name in source.threads)


def _bad_middle_block(code: str, published: Any, store: MemoryStore, position: int) -> None:
    cid = published.manifest.document["chunks"][position]["cid"]
    if code == "open.block_missing":
        del store.blocks[cid]
    elif code == "open.block_size_mismatch":
        store.blocks[cid] = store.blocks[cid][:-1]
    else:  # open.block_cid_mismatch
        altered = bytearray(store.blocks[cid])
        altered[3] ^= 0x80
        store.blocks[cid] = bytes(altered)


@pytest.mark.parametrize(
    "code", ["open.block_missing", "open.block_size_mismatch", "open.block_cid_mismatch"]
)
@pytest.mark.parametrize("workers", [2, 4])
def test_a_bad_block_in_the_middle_stops_open_at_its_position(code: str, workers: int) -> None:
    data = pseudo_random(12 * CHUNK, seed=5)
    published, store = do_publish(data)
    _bad_middle_block(code, published, store, 6)
    # The bad block answers slowly, so the blocks after it are fetched and decrypted first:
    # none of them may come out.
    bad = published.manifest.document["chunks"][6]["cid"]
    source = Jittery(store.blocks, slow={bad})
    chunks = open_object(
        published.manifest, grant_for(published), BOXES[BOB], source, now=NOW, workers=workers
    )
    delivered: list[bytes] = []
    with pytest.raises(OpenError) as excinfo:
        delivered.extend(chunks)
    assert excinfo.value.code == code
    assert excinfo.value.problems[0].pointer == "/chunks/6"
    assert b"".join(delivered) == data[: 6 * CHUNK]
    assert next(chunks, None) is None  # the iteration is over: nothing after it, ever


def test_a_failing_source_stops_open_with_workers_with_its_own_error() -> None:
    data = pseudo_random(8 * CHUNK, seed=6)
    published, store = do_publish(data)
    down = published.manifest.document["chunks"][3]["cid"]

    class Down(Jittery):
        def get(self, cid: str) -> bytes:
            if cid == down:
                raise ConnectionError("provider unreachable")
            return super().get(cid)

    delivered: list[bytes] = []
    chunks = open_object(
        published.manifest, grant_for(published), BOXES[BOB], Down(store.blocks), now=NOW, workers=3
    )
    with pytest.raises(ConnectionError):
        delivered.extend(chunks)
    assert b"".join(delivered) == data[: 3 * CHUNK]


def test_open_stopped_early_fetches_no_further() -> None:
    published, store = do_publish(pseudo_random(40 * CHUNK, seed=8))
    source = Jittery(store.blocks)
    chunks = open_object(
        published.manifest, grant_for(published), BOXES[BOB], source, now=NOW, workers=2
    )
    next(chunks)
    chunks.close()  # as a consumer that gives up does (or the garbage collector)
    fetched = len(source.fetched)
    time.sleep(0.05)
    assert len(source.fetched) == fetched <= 4  # the one taken and at most three ahead
    assert not [t for t in threading.enumerate() if t.name.startswith("adds-open")]


def test_open_refuses_zero_workers() -> None:
    published, store = do_publish(b"x")
    with pytest.raises(ValueError, match="workers"):
        open_object(published.manifest, grant_for(published), BOXES[BOB], store, now=NOW, workers=0)


def test_open_with_workers_memory_is_bounded() -> None:
    size, chunk_size = 32 << 20, 1 << 20
    published, store = do_publish(pseudo_random(size, seed=2), chunk_size=chunk_size)
    grant = grant_for(published)
    gc.collect()
    tracemalloc.start()
    try:
        total = 0
        for piece in open_object(published.manifest, grant, BOXES[BOB], store, now=NOW, workers=2):
            total += len(piece)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert total == size
    assert peak < (2 * 2 + 2) * chunk_size, f"peak {peak} bytes"


# --- who hashes a block on open -------------------------------------------------------------


class Verifying(MemoryStore):
    """A source that promises to verify (as the hearth.blockstore stores do)."""

    verifies_blocks: ClassVar[bool] = True


@pytest.fixture
def hash_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    original = objects_module.cid_for_bytes

    def counting(data: bytes) -> str:
        calls.append(len(data))
        return original(data)

    monkeypatch.setattr(objects_module, "cid_for_bytes", counting)
    return calls


@pytest.mark.parametrize("workers", [1, 2])
def test_open_hashes_blocks_itself_only_when_the_source_does_not(
    hash_calls: list[int], workers: int
) -> None:
    data = pseudo_random(5 * CHUNK, seed=4)
    published, store = do_publish(data)
    hash_calls.clear()
    assert read_all(published, grant_for(published), store, workers=workers) == data
    assert len(hash_calls) == 5
    hash_calls.clear()
    verifying = Verifying()
    verifying.blocks = store.blocks
    assert read_all(published, grant_for(published), verifying, workers=workers) == data
    assert hash_calls == []


def test_a_source_that_claims_to_verify_and_lies_is_still_refused() -> None:
    """Trusting the store's hash never lets altered bytes through: AES-GCM authenticates each
    chunk in its place, so a lie surfaces as open.decrypt_failed instead."""
    published, store = do_publish(pseudo_random(4 * CHUNK, seed=9))
    grant = grant_for(published)
    liar = Verifying()
    liar.blocks = dict(store.blocks)
    cids = [c["cid"] for c in published.manifest.document["chunks"]]
    altered = bytearray(liar.blocks[cids[2]])
    altered[0] ^= 0x01
    liar.blocks[cids[2]] = bytes(altered)
    error = refusal(read_all, published, grant, liar)
    assert error.code == "open.decrypt_failed"
    assert error.problems[0].pointer == "/chunks/2"
    liar.blocks[cids[1]], liar.blocks[cids[2]] = store.blocks[cids[2]], store.blocks[cids[1]]
    error = refusal(read_all, published, grant, liar, workers=2)
    assert error.code == "open.decrypt_failed"
    assert error.problems[0].pointer == "/chunks/1"


def test_publish_hashes_each_block_once(hash_calls: list[int]) -> None:
    store = BatchingStore()
    publish(
        pseudo_random(6 * CHUNK),
        store,
        key=SIGNING[ALICE],
        publisher_id=ALICE,
        object_id="once",
        created_at=NOW,
        chunk_size=CHUNK,
        workers=2,
    )
    assert len(hash_calls) == 6  # and the batch adds HashedBlocks without hashing them again


def test_publish_workers_are_still_checked_for_a_batching_sink() -> None:
    with pytest.raises(AddsError) as excinfo:
        do_publish(b"x", BatchingStore(), workers=0)
    assert excinfo.value.problems[0].code == "publish.workers"


# --- open into a positional target ------------------------------------------------------------


class RecordingTarget:
    """A PlaintextTarget in memory: every write_at by offset, the thread it came from, and
    (optionally) a buffer of its own lent to each thread to decrypt into."""

    def __init__(self, *, lend: bool) -> None:
        self.lend = lend
        self.writes: dict[int, bytes] = {}
        self.threads: set[str] = set()
        self.lent_written = 0
        self._local = threading.local()
        self._lock = threading.Lock()

    def chunk_buffer(self, size: int) -> memoryview | None:
        if not self.lend:
            return None
        self._local.lent = memoryview(bytearray(size))
        return self._local.lent  # type: ignore[no-any-return]

    def write_at(self, offset: int, data: bytes | memoryview) -> None:
        with self._lock:
            assert offset not in self.writes  # each chunk written once
            self.writes[offset] = bytes(data)
            self.threads.add(threading.current_thread().name)
            if data is getattr(self._local, "lent", None):
                self.lent_written += 1

    def assembled(self) -> bytes:
        out = bytearray()
        for offset in sorted(self.writes):
            assert offset == len(out)  # no gap, no overlap
            out += self.writes[offset]
        return bytes(out)


@pytest.mark.parametrize("workers", [1, 2, 5])
@pytest.mark.parametrize("lend", [True, False])
def test_open_into_a_target_writes_every_chunk_at_its_offset(workers: int, lend: bool) -> None:
    data = pseudo_random(30 * CHUNK + 3, seed=21)
    published, store = do_publish(data)
    opened = open_object(
        published.manifest,
        grant_for(published),
        BOXES[BOB],
        Jittery(store.blocks),
        now=NOW,
        workers=workers,
    )
    assert opened.size == len(data)
    assert opened.chunk_sizes == [CHUNK] * 30 + [3]
    target = RecordingTarget(lend=lend)
    progress: list[int] = []
    assert opened.into(target, on_progress=progress.append) == len(data)
    assert target.assembled() == data
    assert progress == [CHUNK * n for n in range(1, 31)] + [len(data)]
    assert target.lent_written == (31 if lend else 0)  # decrypted straight into the buffer
    if workers > 1:
        assert all(name.startswith("adds-open") for name in target.threads)


def test_open_into_an_empty_object_writes_nothing() -> None:
    published, store = do_publish(b"")
    opened = open_object(published.manifest, grant_for(published), BOXES[BOB], store, now=NOW)
    target = RecordingTarget(lend=True)
    assert opened.into(target) == 0
    assert target.assembled() == b""


@pytest.mark.parametrize(
    "code",
    [
        "open.block_missing",
        "open.block_size_mismatch",
        "open.block_cid_mismatch",
        "open.decrypt_failed",
    ],
)
@pytest.mark.parametrize("workers", [1, 3])
def test_open_into_stops_at_a_bad_block_and_never_writes_it(code: str, workers: int) -> None:
    data = pseudo_random(12 * CHUNK, seed=23)
    published, store = do_publish(data)
    if code == "open.decrypt_failed":
        # A block of this object, hashed right, in the wrong place: only AES-GCM can tell.
        chunks = published.manifest.document["chunks"]
        store.blocks[chunks[6]["cid"]] = store.blocks[chunks[7]["cid"]]

        class Trusting(Jittery):
            verifies_blocks = True  # so the opener does not hash: the decryption must refuse

        source: Jittery = Trusting(store.blocks)
    else:
        _bad_middle_block(code, published, store, 6)
        source = Jittery(store.blocks)
    opened = open_object(
        published.manifest, grant_for(published), BOXES[BOB], source, now=NOW, workers=workers
    )
    target = RecordingTarget(lend=True)
    with pytest.raises(OpenError) as excinfo:
        opened.into(target)
    assert excinfo.value.code == code
    assert excinfo.value.problems[0].pointer == "/chunks/6"
    assert 6 * CHUNK not in target.writes  # nothing of the refused chunk left the opener
    for offset, written in target.writes.items():  # whatever was written is authentic
        assert written == data[offset : offset + len(written)]
    assert not [t for t in threading.enumerate() if t.name.startswith("adds-open")]


def test_an_opened_object_is_read_once() -> None:
    published, store = do_publish(pseudo_random(3 * CHUNK, seed=24))
    opened = open_object(published.manifest, grant_for(published), BOXES[BOB], store, now=NOW)
    opened.into(RecordingTarget(lend=False))
    with pytest.raises(RuntimeError, match="read once"):
        next(opened)
    again = open_object(published.manifest, grant_for(published), BOXES[BOB], store, now=NOW)
    next(again)
    with pytest.raises(RuntimeError, match="read once"):
        again.into(RecordingTarget(lend=False))


class LendingStore(Jittery):
    """A source that also lends its blocks (as the local stores do): each get_lent answers
    with a view of a per-thread buffer that the thread's next call overwrites."""

    def __init__(self, blocks: dict[str, bytes]) -> None:
        super().__init__(blocks)
        self.lent = 0
        self._local = threading.local()

    def get_lent(self, cid: str) -> memoryview:
        data = self.get(cid)
        buffer = getattr(self._local, "buffer", None)
        if buffer is None or len(buffer) < len(data):
            buffer = self._local.buffer = bytearray(len(data))
        buffer[: len(data)] = data
        with self._lock:
            self.lent += 1
        return memoryview(buffer)[: len(data)]


@pytest.mark.parametrize("workers", [1, 3])
def test_open_takes_lent_blocks_from_a_source_that_lends(workers: int) -> None:
    data = pseudo_random(20 * CHUNK + 9, seed=25)
    published, store = do_publish(data)
    grant = grant_for(published)
    source = LendingStore(store.blocks)
    streamed = open_object(published.manifest, grant, BOXES[BOB], source, now=NOW, workers=workers)
    assert b"".join(streamed) == data
    target = RecordingTarget(lend=True)
    opened = open_object(published.manifest, grant, BOXES[BOB], source, now=NOW, workers=workers)
    opened.into(target)
    assert target.assembled() == data
    assert source.lent == 2 * 21  # every block of both opens, none through a copying get
