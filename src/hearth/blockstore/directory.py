"""DirectoryBlockStore: the interchange form, a plain directory of files named by their CIDs.

No marker, no subdirectories: ``<root>/<cid>`` holds exactly the block's bytes. Any tool can
write or read it (``cp``, ``rsync``, an archive), so it is the form blocks travel in between
machines and programs. Files whose names are not canonical CIDs are ignored; writes are atomic
and verified exactly as in FileBlockStore (temp file ``.tmp-<random>``, fsync, rename, fsync),
and ``batch`` works as FileBlockStore's does.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

from .base import BlockStoreError, check_block, check_cid
from .fs import (
    DEFAULT_SWEEP_AGE,
    MARKER_NAME,
    LocalBatch,
    LocalFiles,
    list_blocks,
    make_directories,
)

__all__ = ["DirectoryBlockStore"]


class DirectoryBlockStore:
    """Blocks as plain files ``<root>/<cid>``.

    ``create``: make ``root`` (and its parents) when it is missing. A directory carrying the
    ``ADDS-BLOCKSTORE`` marker is a FileBlockStore and is refused here. Thread-safe.
    """

    # ``get`` never returns bytes that do not hash to the CID asked for (hearth.adds.BlockSource).
    verifies_blocks: ClassVar[bool] = True

    def __init__(self, root: Path | str, *, create: bool = True, fsync: bool = True) -> None:
        self.root = Path(root)
        self._files = LocalFiles(fsync=fsync, description=f"the block directory {self.root}")
        try:
            if (self.root / MARKER_NAME).exists():
                raise BlockStoreError(
                    f"{self.root} is a hearth block store ({MARKER_NAME}), not a plain block "
                    "directory: open it as a FileBlockStore"
                )
            if self.root.exists():
                if not self.root.is_dir():
                    raise BlockStoreError(f"{self.root} exists and is not a directory")
            elif create:
                make_directories(self.root, fsync=fsync)
            else:
                raise BlockStoreError(f"there is no directory {self.root}")
        except OSError as exc:
            raise BlockStoreError(
                f"cannot open the block directory {self.root}: {exc.strerror or exc}"
            ) from exc

    def __repr__(self) -> str:
        return f"DirectoryBlockStore({str(self.root)!r})"

    def __enter__(self) -> DirectoryBlockStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def put(self, cid: str, data: bytes) -> None:
        """Keep ``data`` as ``<root>/<cid>``; verified first, a no-op when an intact copy exists."""
        check_cid(cid)
        check_block(cid, data)
        self._files.check_open()
        path = self.root / cid
        if not self._files.holds(path, data):
            self._files.write(path, data)

    def batch(self) -> LocalBatch:
        """Blocks hashed by their writer, made durable together (as FileBlockStore.batch)."""
        self._files.check_open()
        return LocalBatch(self._files, lambda cid: self.root / cid, lambda directory: None)

    def get(self, cid: str) -> bytes:
        """The file's bytes, hashed on every read: BlockCorrupt when they do not match."""
        check_cid(cid)
        self._files.check_open()
        return self._files.read(self.root / cid, cid)

    def get_lent(self, cid: str) -> bytes | memoryview:
        """As ``get``, but possibly a view of this thread's read buffer, valid until this
        thread's next read from this store (``hearth.adds.LendingBlockSource``)."""
        check_cid(cid)
        self._files.check_open()
        return self._files.read_lent(self.root / cid, cid)

    def has(self, cid: str) -> bool:
        """Whether a file named ``cid`` is held (verified by ``get``, not here)."""
        check_cid(cid)
        self._files.check_open()
        return (self.root / cid).is_file()

    def cids(self) -> Iterator[str]:
        """The canonical CIDs among the directory's file names, sorted."""
        self._files.check_open()
        yield from list_blocks(self.root)

    def sweep(self, older_than: float = DEFAULT_SWEEP_AGE) -> int:
        """Remove ``.tmp-`` files left by crashed writers, as FileBlockStore.sweep does."""
        self._files.check_open()
        return self._files.sweep([self.root], older_than)

    def close(self) -> None:
        self._files.close()
