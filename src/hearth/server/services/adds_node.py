"""The provider node's long-lived parts, one per app: the block store and the provider key.

Both are opened on first use, not when the app is built: building an app touches no file, and a
service that never stores a block never makes a block directory.
"""

from __future__ import annotations

import asyncio

import anyio

from hearth.blockstore import FileBlockStore

from ..db.engine import Database
from ..settings import Settings
from .provider_key import ProviderKeyring


class AddsNode:
    def __init__(self, settings: Settings, db: Database) -> None:
        self.settings = settings
        self.keyring = ProviderKeyring(settings, db)
        self._blocks: FileBlockStore | None = None
        self._lock = asyncio.Lock()

    async def blocks(self) -> FileBlockStore:
        if self._blocks is not None:
            return self._blocks
        async with self._lock:
            if self._blocks is None:
                root = self.settings.blocks_dir
                # Every acknowledged block survives a crash: the store fsyncs each write.
                self._blocks = await anyio.to_thread.run_sync(
                    lambda: FileBlockStore(root, create=True, fsync=True)
                )
        return self._blocks

    def close(self) -> None:
        if self._blocks is not None:
            self._blocks.close()


__all__ = ["AddsNode"]
