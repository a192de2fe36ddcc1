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
"""

from __future__ import annotations

import contextlib
import os
import secrets
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from hearth.adds.cid import cid_for_bytes, cid_problem

from .base import BlockCorrupt, BlockNotFound, BlockStoreError, check_block, check_cid

__all__ = [
    "BLOCKS_DIR",
    "DEFAULT_SWEEP_AGE",
    "MARKER_NAME",
    "MARKER_TEXT",
    "TEMP_PREFIX",
    "FileBlockStore",
    "shard_of",
]

MARKER_NAME = "ADDS-BLOCKSTORE"
MARKER_TEXT = "hearth-blockstore v1\n"
_MARKER_FAMILY = "hearth-blockstore "
BLOCKS_DIR = "blocks"
TEMP_PREFIX = ".tmp-"
# A temp file older than this belongs to no live writer: a 16 MiB block takes well under a second
# to write, so an hour leaves room for stalled disks and suspended machines.
DEFAULT_SWEEP_AGE = 3600.0


def shard_of(cid: str) -> str:
    """The subdirectory of ``blocks/`` that holds ``cid``."""
    return cid[8:10]


def is_block_name(name: str) -> bool:
    """Whether a directory entry's name is a canonical CID (temp files and strays are not)."""
    return cid_problem(name) is None


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


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
        try:
            with open(path, "rb") as file:
                data = file.read()
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

    def holds(self, path: Path, data: bytes) -> bool:
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

    def write(self, path: Path, data: bytes) -> None:
        """Put ``data`` at ``path`` atomically (and durably when fsync is on).

        The parent directory must exist. On any failure the temp file is removed and the final
        name is untouched; only a crash can leave a temp file behind.
        """
        directory = path.parent
        temp = directory / f"{TEMP_PREFIX}{secrets.token_hex(12)}"
        key = str(temp)
        with self._lock:
            self._writing.add(key)
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0))
            try:
                _write_all(fd, data)
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
            with self._lock:
                self._writing.discard(key)

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

    def __init__(self, root: Path | str, *, create: bool = True, fsync: bool = True) -> None:
        self.root = Path(root)
        self.blocks = self.root / BLOCKS_DIR
        self._files = LocalFiles(fsync=fsync, description=f"the block store at {self.root}")
        self._ready_shards: set[str] = set()
        self._shard_lock = threading.Lock()
        marker = self.root / MARKER_NAME
        try:
            if marker.is_file():
                self._check_marker(marker)
            elif create:
                self._initialise()
            else:
                raise BlockStoreError(
                    f"{self.root} is not a hearth block store (it has no {MARKER_NAME} file)"
                )
            if not self.blocks.is_dir():
                self.blocks.mkdir()
                if fsync:
                    fsync_directory(self.root)
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

    def _initialise(self) -> None:
        if self.root.exists():
            if not self.root.is_dir():
                raise BlockStoreError(f"{self.root} exists and is not a directory")
            if any(self.root.iterdir()):
                raise BlockStoreError(
                    f"{self.root} is not empty and has no {MARKER_NAME} file: "
                    "refusing to make a block store in it"
                )
        else:
            make_directories(self.root, fsync=self._files.fsync)
        self._files.write(self.root / MARKER_NAME, MARKER_TEXT.encode("ascii"))

    def _path(self, cid: str) -> Path:
        return self.blocks / shard_of(cid) / cid

    def _ready_shard(self, shard: str) -> None:
        # A new shard directory's own entry in blocks/ must be durable before a block inside it
        # can be; each process makes sure once per shard.
        with self._shard_lock:
            if shard in self._ready_shards:
                return
        try:
            (self.blocks / shard).mkdir(exist_ok=True)
            if self._files.fsync:
                fsync_directory(self.blocks)
        except OSError as exc:
            raise BlockStoreError(
                f"cannot make {self.blocks / shard}: {exc.strerror or exc}"
            ) from exc
        with self._shard_lock:
            self._ready_shards.add(shard)

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

    def get(self, cid: str) -> bytes:
        """The block's bytes, hashed on every read: BlockCorrupt when the file was damaged."""
        check_cid(cid)
        self._files.check_open()
        return self._files.read(self._path(cid), cid)

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
