"""The provider node's long-lived parts, one per app: the block store (a FileBlockStore at
``blocks_dir``, or the object store ``blockstore_url`` names), the provider key and
the provider record's keeper (started and stopped with the app, services/provider_record.py).

Both are opened on first use, not when the app is built: building an app touches no file, and a
service that never stores a block never makes a block directory.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import anyio

from hearth.blockstore import MARKER_NAME, BlockStore, FileBlockStore

from ..db.engine import Database
from ..settings import Settings
from .provider_key import ProviderKeyring
from .provider_record import ProviderRecords

if TYPE_CHECKING:
    from hearth.blockstore.s3 import S3BlockStore


class AddsNode:
    def __init__(self, settings: Settings, db: Database) -> None:
        self.settings = settings
        self.keyring = ProviderKeyring(settings, db)
        self.records = ProviderRecords(settings, db, self.keyring)
        self._blocks: BlockStore | None = None
        self._lock = asyncio.Lock()

    async def blocks(self) -> BlockStore:
        if self._blocks is not None:
            return self._blocks
        async with self._lock:
            if self._blocks is None:
                self._blocks = await anyio.to_thread.run_sync(self._open)
        return self._blocks

    async def object_store(self) -> S3BlockStore | None:
        """The block store when it is an object store (``blockstore_url``), else None. Opening
        one only makes its client; a local store is never opened here (that would make its
        directory)."""
        if not self.settings.blockstore_url:
            return None
        from hearth.blockstore.s3 import S3BlockStore  # noqa: PLC0415 - only when used

        store = await self.blocks()
        assert isinstance(store, S3BlockStore)
        return store

    def _open(self) -> BlockStore:
        url = self.settings.blockstore_url
        if url:
            from hearth.blockstore.s3 import S3BlockStore  # noqa: PLC0415 - only when used

            return S3BlockStore(url)
        # Every acknowledged block survives a crash: the store fsyncs each write.
        return FileBlockStore(self.settings.blocks_dir, create=True, fsync=True)

    async def sweep(self, older_than: float) -> int | None:
        """Remove the temp files crashed uploads left that are at least ``older_than`` seconds
        old (``FileBlockStore.sweep``); how many. None while there is no block store: a sweep
        never makes one (no ``ADDS-BLOCKSTORE`` marker at ``blocks_dir``, no store), and with an
        object store (``blockstore_url``), whose writes leave no temp files."""
        if self.settings.blockstore_url:
            return None
        if self._blocks is None:
            marker = self.settings.blocks_dir / MARKER_NAME
            if not await anyio.to_thread.run_sync(marker.is_file):
                return None
        store = await self.blocks()
        assert isinstance(store, FileBlockStore)
        return await anyio.to_thread.run_sync(store.sweep, older_than)

    def close(self) -> None:
        if self._blocks is not None:
            self._blocks.close()


__all__ = ["AddsNode"]
