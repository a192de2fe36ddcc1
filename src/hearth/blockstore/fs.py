"""FileBlockStore: hearth's own on-disk layout for blocks, and the atomic file writes it rests on.

Layout of a store at ``root``::

    root/ADDS-BLOCKSTORE                 marker, one line: "hearth-blockstore v1"
    root/blocks/<shard>/<cid>            one file per block, exactly its bytes
    root/blocks/<shard>/.tmp-<random>    a write in progress (or left by a crash)

``<shard>`` is characters 8 and 9 of the CID (``cid[8:10]``). Every CID starts with
``bafkrei`` and one character holding only three digest bits, so those are the first two
characters made of digest bits alone: 1,024 shards, evenly filled.

A write goes to a temp file with a unique name in the block's own directory, is fsynced, renamed
over the final name (``os.replace``, atomic on POSIX), and the directory is fsynced. A block is
therefore either absent or complete under its CID: a crash leaves at most a ``.tmp-`` file,
which ``get``, ``has`` and ``cids`` never look at and ``sweep`` removes.

A batch (``batch()``, what ``hearth.adds.publish`` uses) takes blocks already hashed by their
writer (``HashedBlock``) and pays for durability once per group of blocks, not once per block:
each block goes to its temp file at once (write-back started), and at the end (or every
``BATCH_FILES`` blocks) every temp file is fdatasynced, then renamed, then each directory
touched is fsynced once. The rule is the same: nothing is visible under a CID before its bytes
are durable. A full group is flushed by the batch's own threads while the writers fill the next
one, and its fsyncs run side by side (see ``LocalBatch``).

With fsync on, block files are written and read with direct I/O where the file system allows it
(``direct_io.py``): a durable block never passes through the page cache.

A shard directory is made the first time a block goes into it, and its entry in ``blocks/`` is
made durable before any block is renamed into it: ``put`` fsyncs ``blocks/`` at once; a batch
makes the directory when a block's temp file goes into it and fsyncs ``blocks/`` once per flush,
beside the blocks' fdatasyncs and before their renames, for every shard made since. Making all
1,024 when the store was created cost 0.07 to 0.27 s (the busier the disk, the more), paid by
every ``hearth adds publish`` into a new store, while a small object touches one shard and a
1 GiB one about 640.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import ClassVar, TypeVar

from hearth.adds.cid import cid_for_bytes, cid_problem
from hearth.adds.objects import HashedBlock

from .base import BlockCorrupt, BlockNotFound, BlockStoreError, check_block, check_cid
from .direct_io import DirectIO

__all__ = [
    "BATCH_BYTES",
    "BATCH_FILES",
    "BLOCKS_DIR",
    "DEFAULT_SWEEP_AGE",
    "MARKER_NAME",
    "MARKER_TEXT",
    "TEMP_PREFIX",
    "FileBlockStore",
    "LocalBatch",
    "shard_of",
]

MARKER_NAME = "ADDS-BLOCKSTORE"
MARKER_TEXT = "hearth-blockstore v1\n"
_MARKER_FAMILY = "hearth-blockstore "
BLOCKS_DIR = "blocks"
TEMP_PREFIX = ".tmp-"
# How long an opener of a new store waits for another opener's marker (see _initialise): a
# marker is one small file written and renamed, so this is a bound, not an expected wait.
INIT_WAIT_S = 5.0
_BEING_MADE = frozenset({MARKER_NAME, BLOCKS_DIR})  # what another opener's making leaves in root
# A temp file older than this belongs to no live writer: a 16 MiB block takes well under a second
# to write, so an hour leaves room for stalled disks and suspended machines.
DEFAULT_SWEEP_AGE = 3600.0
# A batch makes its blocks durable every this many blocks or bytes, whichever comes first: it
# keeps one descriptor open per pending block (until its fdatasync), so the count bounds those,
# and the byte bound keeps the dirty data waiting for one flush within reason.
BATCH_FILES = 128
BATCH_BYTES = 256 * 1024 * 1024
# Threads a batch flushes with: one runs the flush, the others share its fsyncs.
FLUSH_THREADS = 4
# Every shard name: two base32 characters (see shard_of).
_T = TypeVar("_T")
SHARDS = tuple(
    a + b for a in "abcdefghijklmnopqrstuvwxyz234567" for b in "abcdefghijklmnopqrstuvwxyz234567"
)


def shard_of(cid: str) -> str:
    """The subdirectory of ``blocks/`` that holds ``cid``."""
    return cid[8:10]


def is_block_name(name: str) -> bool:
    """Whether a directory entry's name is a canonical CID (temp files and strays are not)."""
    return cid_problem(name) is None


def _datasync(fd: int) -> None:
    # fdatasync suffices for a new file: it writes the data and the size needed to read it back.
    getattr(os, "fdatasync", os.fsync)(fd)


def _start_writeback(fd: int) -> None:
    """Ask the kernel to start writing the file's dirty pages now, without waiting: the
    fdatasync at the end of a batch then finds most of them written. On Linux, DONTNEED starts
    write-back of dirty pages and drops only pages already clean; elsewhere it is a hint."""
    advise = getattr(os, "posix_fadvise", None)
    if advise is not None:
        with contextlib.suppress(OSError):
            advise(fd, 0, 0, os.POSIX_FADV_DONTNEED)


def fsync_directory(path: Path) -> None:
    """Make the directory's entries (a rename, a new file or subdirectory) durable."""
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)
    fd = os.open(path, flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def make_directories(path: Path, *, fsync: bool) -> None:
    """Create ``path`` and any missing parents, each new entry made durable when fsync is on."""
    missing: list[Path] = []
    while not path.exists():
        missing.append(path)
        path = path.parent
    for directory in reversed(missing):
        directory.mkdir(exist_ok=True)
        if fsync:
            fsync_directory(directory.parent)


class LocalFiles:
    """Atomic writes, verified reads and temp-file sweeping, shared by the two local stores.

    Thread-safe: each write has its own temp file, and the set of temp files being written is
    kept under a lock so that ``sweep`` never removes one in use by this process.
    """

    def __init__(self, *, fsync: bool, description: str) -> None:
        self.fsync = fsync
        self.description = description
        # Durable writes go past the page cache where the file system allows (direct_io.py);
        # without fsync the page cache is the point, and writes stay buffered.
        self.direct = DirectIO(enabled=fsync)
        # Blocks are read past the page cache too: a block is read once per open, and a durable
        # store's blocks were written past it, so the cache holds none of them anyway.
        self.reader = DirectIO()
        self._lock = threading.Lock()
        self._writing: set[str] = set()
        self._closed = False

    def check_open(self) -> None:
        if self._closed:
            raise BlockStoreError(f"{self.description} is closed")

    def close(self) -> None:
        self._closed = True

    def read(self, path: Path, cid: str) -> bytes:
        """The file's bytes, verified against ``cid``."""
        return bytes(self.read_lent(path, cid, lend=False))

    def read_lent(self, path: Path, cid: str, *, lend: bool = True) -> bytes | memoryview:
        """As ``read``; with ``lend``, where the file is read directly, a view of the reading
        thread's buffer (``DirectIO.read_lent``), valid until that thread's next read."""
        try:
            data = self.reader.read_lent(path) if lend else self.reader.read(path)
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            # Only a regular file under the CID's name is a block (as for has and cids).
            raise BlockNotFound(f"block {cid} is not in {self.description}", cid=cid) from None
        except OSError as exc:
            raise BlockStoreError(
                f"block {cid}: cannot read {path}: {exc.strerror or exc}", cid=cid
            ) from exc
        actual = cid_for_bytes(data)
        if actual != cid:
            raise BlockCorrupt(
                f"block {cid} in {self.description} is damaged: the file {path} "
                f"({len(data)} bytes) hashes to {actual}",
                cid=cid,
            )
        return data

    def holds(self, path: Path, data: bytes | memoryview) -> bool:
        """Whether ``path`` already holds exactly ``data`` (a damaged copy does not count)."""
        try:
            if path.stat().st_size != len(data):
                return False
            with open(path, "rb") as file:
                return file.read() == data
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise BlockStoreError(f"cannot read {path}: {exc.strerror or exc}") from exc

    def claim_temp(self, directory: Path) -> Path:
        """A fresh temp file name in ``directory``, which ``sweep`` leaves alone until
        ``release_temp``."""
        temp = directory / f"{TEMP_PREFIX}{secrets.token_hex(12)}"
        with self._lock:
            self._writing.add(str(temp))
        return temp

    def release_temp(self, temp: Path) -> None:
        with self._lock:
            self._writing.discard(str(temp))

    def write(self, path: Path, data: bytes) -> None:
        """Put ``data`` at ``path`` atomically (and durably when fsync is on).

        The parent directory must exist. On any failure the temp file is removed and the final
        name is untouched; only a crash can leave a temp file behind.
        """
        directory = path.parent
        temp = self.claim_temp(directory)
        try:
            fd = self.direct.create(temp, data)
            try:
                if self.fsync:
                    os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(temp, path)
            if self.fsync:
                fsync_directory(directory)
        except BaseException as exc:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            if isinstance(exc, OSError):
                raise BlockStoreError(
                    f"cannot write {path.name} in {self.description}: {exc.strerror or exc}"
                ) from exc
            raise
        finally:
            self.release_temp(temp)

    def sweep(self, directories: Iterable[Path], older_than: float) -> int:
        """Remove temp files (not ones this process is writing) older than ``older_than``."""
        if older_than < 0:
            raise ValueError("older_than is a number of seconds, 0 or more")
        now = time.time()
        removed = 0
        for directory in directories:
            try:
                with os.scandir(directory) as entries:
                    temps = [entry for entry in entries if entry.name.startswith(TEMP_PREFIX)]
            except FileNotFoundError:
                continue
            for entry in temps:
                with self._lock:
                    if entry.path in self._writing:
                        continue
                try:
                    if older_than and now - entry.stat().st_mtime < older_than:
                        continue
                    os.unlink(entry.path)
                except FileNotFoundError:
                    continue
                removed += 1
        return removed


@dataclass
class _Pending:
    temp: Path
    path: Path
    fd: int
    size: int


class LocalBatch:
    """Blocks written at once, made durable and visible together (``hearth.adds.BlockBatch``).

    ``add`` takes only a ``HashedBlock`` (whose CID was computed from its bytes), writes it to a
    temp file in its final directory and starts write-back; ``place`` gives that final path
    and ``prepare`` makes sure its directory exists. Every ``BATCH_FILES`` blocks or
    ``BATCH_BYTES`` bytes, and at ``commit``, the pending blocks are fdatasynced, renamed into
    place, and each directory touched is fsynced once (with fsync off: renamed only). ``abort``
    removes the temp files of blocks not yet renamed. Thread-safe: ``add`` may run in several
    threads at once.

    ``before_rename`` (FileBlockStore: make the shard directories made since durable) runs in
    each flush beside the fdatasyncs, and like them before any rename.

    A full group is flushed by the batch's own flusher thread while the writers go on with the
    next group: a flush is mostly waiting for the device (fdatasyncs, directory fsyncs), and a
    writer that waited for it held up the whole pipeline behind it. At most one group is being
    flushed at a time; an ``add`` that fills a group while the previous one is still being
    flushed waits for it, which bounds the descriptors held to two groups. A flush's failure
    is raised by the next ``add`` that hands over a group, or by ``commit``.
    """

    def __init__(
        self,
        files: LocalFiles,
        place: Callable[[str], Path],
        prepare: Callable[[Path], None],
        *,
        before_rename: Callable[[], None] | None = None,
        max_files: int = BATCH_FILES,
        max_bytes: int = BATCH_BYTES,
    ) -> None:
        self._files = files
        self._place = place
        self._prepare = prepare
        self._before_rename = before_rename
        self._max_files = max_files
        self._max_bytes = max_bytes
        self._lock = threading.Lock()
        self._handover = threading.Lock()  # held while a group is handed to the flusher
        self._pending: list[_Pending] = []
        self._pending_bytes = 0
        self._state = "open"
        # Made on the first full group, shut down by commit and abort.
        self._flusher: ThreadPoolExecutor | None = None
        self._flushing: Future[None] | None = None

    def __enter__(self) -> LocalBatch:
        return self

    def __exit__(self, kind: type[BaseException] | None, *rest: object) -> None:
        if kind is None:
            self.commit()
        else:
            self.abort()

    def block_buffer(self, size: int) -> memoryview | None:
        """This thread's aligned write buffer, for ``publish`` to seal a block straight into
        (``hearth.adds.BufferingBlockBatch``); None where blocks are not written directly."""
        return self._files.direct.lend(size)

    def add(self, block: HashedBlock) -> None:
        """Write ``block`` to a temp file; visible once its group is flushed or committed."""
        if not isinstance(block, HashedBlock):
            # The trusted path: bytes named by anyone else go through the verifying ``put``.
            raise TypeError(f"a batch takes HashedBlock, not {type(block).__name__}")
        self._check("add to")
        self._files.check_open()
        path = self._place(block.cid)
        if self._files.holds(path, block.data):
            return
        self._prepare(path.parent)
        temp = self._files.claim_temp(path.parent)
        try:
            fd = self._files.direct.create(temp, block.data)
        except BaseException as exc:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            self._files.release_temp(temp)
            if isinstance(exc, OSError):
                raise self._failure(path, exc) from exc
            raise
        if self._files.fsync and not self._files.direct.enabled:
            _start_writeback(fd)  # a direct write has nothing left to write back
        group: list[_Pending] = []
        with self._lock:
            self._pending.append(_Pending(temp, path, fd, len(block.data)))
            self._pending_bytes += len(block.data)
            if len(self._pending) >= self._max_files or self._pending_bytes >= self._max_bytes:
                group, self._pending, self._pending_bytes = self._pending, [], 0
        if group:
            self._hand_over(group)

    def _hand_over(self, group: list[_Pending]) -> None:
        """Give a full group to the flusher, once the one before it is done."""
        with self._handover:
            try:
                self._wait_for_flush()
            except BaseException:
                self._discard(group)
                raise
            self._flushing = self._pool().submit(self._flush, group)

    def _wait_for_flush(self) -> None:
        """Wait for the group being flushed, if any; raises its failure."""
        flushing, self._flushing = self._flushing, None
        if flushing is None:
            return
        try:
            flushing.result()
        except BaseException:
            self._state = "failed"  # a group was lost: nothing more may be added or committed
            raise

    def _pool(self) -> ThreadPoolExecutor:
        if self._flusher is None:
            self._flusher = ThreadPoolExecutor(FLUSH_THREADS, thread_name_prefix="adds-flush")
        return self._flusher

    def _each(self, action: Callable[[_T], object], items: list[_T]) -> None:
        """``action`` on every item, spread over the flusher's threads, which are free: at most
        one flush runs at a time, on one of them. Concurrent fsyncs share the device's cache
        flushes; one after another, each paid for its own."""
        if len(items) < 2:
            for item in items:
                action(item)
            return
        for _ in self._pool().map(action, items):
            pass

    def _stop_flusher(self) -> None:
        if self._flusher is not None:
            self._flusher.shutdown(wait=True)
            self._flusher = None

    def commit(self) -> None:
        """Make every block added durable and visible; the batch is then closed."""
        self._check("commit")
        with self._lock:
            group, self._pending, self._pending_bytes = self._pending, [], 0
            self._state = "committing"
        try:
            with self._handover:
                self._wait_for_flush()
        except BaseException:
            self._stop_flusher()
            self._discard(group)
            raise
        try:
            self._flush(group)
        except BaseException:
            self._state = "failed"
            raise
        finally:
            self._stop_flusher()
        self._state = "committed"

    def abort(self) -> None:
        """Drop the blocks not yet made visible (their temp files); never raises for that."""
        with self._lock:
            group, self._pending, self._pending_bytes = self._pending, [], 0
            if self._state != "committed":
                self._state = "aborted"
        with self._handover:
            with contextlib.suppress(Exception):
                self._wait_for_flush()  # a failed flush has discarded its own group
            self._stop_flusher()
        self._discard(group)

    def _check(self, action: str) -> None:
        if self._state != "open":
            raise BlockStoreError(f"cannot {action} a batch that is {self._state}")

    def _flush(self, group: list[_Pending]) -> None:
        """fdatasync every file, then rename each into place, then fsync each directory once:
        no block becomes visible before its bytes are durable."""
        renamed = 0
        try:
            if self._files.fsync:
                syncs: list[Callable[[], None]] = [partial(_datasync, e.fd) for e in group]
                if self._before_rename is not None:
                    syncs.append(self._before_rename)
                self._each(_call, syncs)
            for entry in group:
                os.close(entry.fd)
                entry.fd = -1
            for entry in group:
                os.replace(entry.temp, entry.path)
                renamed += 1
            if self._files.fsync:
                self._each(fsync_directory, sorted({entry.path.parent for entry in group}))
        except BaseException as exc:
            self._discard(group[renamed:])
            if isinstance(exc, OSError):
                path = group[min(renamed, len(group) - 1)].path
                raise self._failure(path, exc) from exc
            raise
        finally:
            for entry in group:
                self._files.release_temp(entry.temp)

    def _discard(self, group: list[_Pending]) -> None:
        for entry in group:
            if entry.fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(entry.fd)
                entry.fd = -1
            with contextlib.suppress(OSError):
                os.unlink(entry.temp)
            self._files.release_temp(entry.temp)

    def _failure(self, path: Path, exc: OSError) -> BlockStoreError:
        return BlockStoreError(
            f"cannot write {path.name} in {self._files.description}: {exc.strerror or exc}"
        )


def _call(action: Callable[[], None]) -> None:
    action()


def list_blocks(directory: Path, *, shard: str | None = None) -> list[str]:
    """The canonical CIDs named by regular files in ``directory`` (in its shard, if given)."""
    try:
        with os.scandir(directory) as entries:
            return sorted(
                entry.name
                for entry in entries
                if is_block_name(entry.name)
                and (shard is None or shard_of(entry.name) == shard)
                and entry.is_file()
            )
    except FileNotFoundError:
        return []


def list_shards(blocks: Path) -> list[str]:
    try:
        with os.scandir(blocks) as entries:
            return sorted(
                entry.name for entry in entries if len(entry.name) == 2 and entry.is_dir()
            )
    except FileNotFoundError:
        return []


class FileBlockStore:
    """Blocks in hearth's own sharded layout under ``root`` (see the module docstring).

    ``create``: make the store when ``root`` is missing or an empty directory; otherwise ``root``
    must already carry the ``ADDS-BLOCKSTORE`` marker. A non-empty directory without the marker
    is never taken over. ``fsync=False`` skips the fsyncs (atomic still, not durable across a
    power cut): for tests and scratch stores.

    Thread-safe; several processes may share one store (every write is an atomic rename).
    """

    # ``get`` never returns bytes that do not hash to the CID asked for (hearth.adds.BlockSource).
    verifies_blocks: ClassVar[bool] = True

    def __init__(self, root: Path | str, *, create: bool = True, fsync: bool = True) -> None:
        self.root = Path(root)
        self.blocks = self.root / BLOCKS_DIR
        self._files = LocalFiles(fsync=fsync, description=f"the block store at {self.root}")
        # Shards that exist with their entry in blocks/ durable (lock-free reads: a set lookup
        # is atomic under the GIL), and those a batch made whose entry is not durable yet.
        self._ready_shards: set[str] = set()
        self._new_shards: set[str] = set()
        self._shard_lock = threading.Lock()
        marker = self.root / MARKER_NAME
        created = False
        try:
            if marker.is_file():
                self._check_marker(marker)
            elif create:
                created = self._initialise(marker)
                if not created:
                    self._check_marker(marker)
            else:
                raise BlockStoreError(
                    f"{self.root} is not a hearth block store (it has no {MARKER_NAME} file)"
                )
            if not self.blocks.is_dir():
                self.blocks.mkdir(exist_ok=True)  # another opener may make it meanwhile
                if fsync:
                    fsync_directory(self.root)
            # Shards are made on first use (see the module docstring); in an existing store,
            # those already there need no mkdir later. A new one has none yet.
            if not created:
                self._ready_shards.update(list_shards(self.blocks))
        except OSError as exc:
            raise BlockStoreError(
                f"cannot open the block store at {self.root}: {exc.strerror or exc}"
            ) from exc

    def __repr__(self) -> str:
        return f"FileBlockStore({str(self.root)!r})"

    def __enter__(self) -> FileBlockStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _check_marker(self, marker: Path) -> None:
        text = marker.read_text(encoding="utf-8", errors="replace")
        first = text.splitlines()[0].strip() if text.strip() else ""
        if first == MARKER_TEXT.strip():
            return
        if first.startswith(_MARKER_FAMILY):
            raise BlockStoreError(
                f"{self.root} is a block store of another version ({first!r}); "
                f"this hearth reads {MARKER_TEXT.strip()!r}"
            )
        raise BlockStoreError(f"{marker} is not a hearth block store marker")

    def _initialise(self, marker: Path) -> bool:
        """Make the store; False when another opener made it meanwhile (its marker is there).

        Several processes of one service may open one new store at once. The second sees the
        first's marker being written (a ``.tmp-`` file in ``root``, then the marker): that is a
        store being made, not a foreign directory, so it waits for the marker, briefly."""
        if self.root.exists():
            if not self.root.is_dir():
                raise BlockStoreError(f"{self.root} exists and is not a directory")
            if any(self.root.iterdir()):
                if self._made_by_another(marker):
                    return False
                raise BlockStoreError(
                    f"{self.root} is not empty and has no {MARKER_NAME} file: "
                    "refusing to make a block store in it"
                )
        else:
            make_directories(self.root, fsync=self._files.fsync)
        # Two openers that both found it empty both write the same marker: the last rename
        # wins, with the same bytes.
        self._files.write(marker, MARKER_TEXT.encode("ascii"))
        return True

    def _made_by_another(self, marker: Path) -> bool:
        """Whether ``root`` holds only what making a store writes (a temp file, the marker,
        ``blocks/`` and its shards) and the marker appears within ``INIT_WAIT_S``."""
        deadline = time.monotonic() + INIT_WAIT_S
        while True:
            if marker.is_file():
                return True
            names = {entry.name for entry in self.root.iterdir()}
            # The marker may land between the check above and this listing: not foreign.
            foreign = {n for n in names if not n.startswith(TEMP_PREFIX) and n not in _BEING_MADE}
            if foreign or time.monotonic() >= deadline:
                return False
            time.sleep(0.01)

    def _path(self, cid: str) -> Path:
        return self.blocks / shard_of(cid) / cid

    def _ready_shard(self, shard: str) -> None:
        """For ``put``: the shard exists and its entry in blocks/ is durable, now. A new shard
        directory's own entry must be durable before a block inside it can be; each process
        makes sure once per shard."""
        if shard in self._ready_shards:
            return
        self._make_shard(self.blocks / shard)
        self._sync_new_shards()

    def _make_shard(self, directory: Path) -> None:
        """For a batch (and ``put``): the shard directory exists. Its entry in blocks/ is made
        durable by ``_sync_new_shards``, which the batch's flush runs before its renames."""
        shard = directory.name
        if shard in self._ready_shards or shard in self._new_shards:
            return
        try:
            directory.mkdir(exist_ok=True)
        except OSError as exc:
            raise BlockStoreError(f"cannot make {directory}: {exc.strerror or exc}") from exc
        with self._shard_lock:
            (self._new_shards if self._files.fsync else self._ready_shards).add(shard)

    def _sync_new_shards(self) -> None:
        """Make the entries of the shard directories made so far durable: one fsync of blocks/
        for all of them. Those made meanwhile wait for the next call (their blocks' flush)."""
        with self._shard_lock:
            made = set(self._new_shards)
        if not made:
            return
        try:
            fsync_directory(self.blocks)
        except OSError as exc:
            raise BlockStoreError(
                f"cannot make the shards of {self.blocks} durable: {exc.strerror or exc}"
            ) from exc
        with self._shard_lock:
            self._new_shards -= made
            self._ready_shards |= made

    def put(self, cid: str, data: bytes) -> None:
        """Keep ``data`` under ``cid``. Verified first; a no-op when an intact copy is held.

        A damaged copy on disk is replaced by the good bytes.
        """
        check_cid(cid)
        check_block(cid, data)
        self._files.check_open()
        path = self._path(cid)
        if self._files.holds(path, data):
            return
        self._ready_shard(shard_of(cid))
        self._files.write(path, data)

    def batch(self) -> LocalBatch:
        """A batch of blocks hashed by their writer (``HashedBlock``), made durable together at
        ``commit``: what ``hearth.adds.publish`` uses. Not for bytes named by anyone else: those
        go through ``put``, which hashes them."""
        self._files.check_open()
        return LocalBatch(
            self._files, self._path, self._make_shard, before_rename=self._sync_new_shards
        )

    def get(self, cid: str) -> bytes:
        """The block's bytes, hashed on every read: BlockCorrupt when the file was damaged."""
        check_cid(cid)
        self._files.check_open()
        return self._files.read(self._path(cid), cid)

    def get_lent(self, cid: str) -> bytes | memoryview:
        """As ``get`` (verified just the same), but the bytes may be a view of this thread's
        read buffer, valid until this thread's next ``get`` or ``get_lent`` on this store
        (``hearth.adds.LendingBlockSource``): no copy of the block of their own."""
        check_cid(cid)
        self._files.check_open()
        return self._files.read_lent(self._path(cid), cid)

    def has(self, cid: str) -> bool:
        """Whether a file is held under ``cid`` (its bytes are verified by ``get``, not here)."""
        check_cid(cid)
        self._files.check_open()
        return self._path(cid).is_file()

    def cids(self) -> Iterator[str]:
        """Every block held, shard by shard; temp files and stray names are skipped."""
        self._files.check_open()
        for shard in list_shards(self.blocks):
            yield from list_blocks(self.blocks / shard, shard=shard)

    def sweep(self, older_than: float = DEFAULT_SWEEP_AGE) -> int:
        """Remove temp files left by crashed writers; returns how many were removed.

        Only temp files whose last change is at least ``older_than`` seconds old are removed
        (default one hour), so writers in other processes are left alone. ``older_than=0``
        removes every temp file except those this process is writing: use it only when no
        other process is writing to the store.
        """
        self._files.check_open()
        directories = [self.root, self.blocks]
        directories += [self.blocks / shard for shard in list_shards(self.blocks)]
        return self._files.sweep(directories, older_than)

    def close(self) -> None:
        self._files.close()
