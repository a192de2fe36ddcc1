"""Block stores: where ADDS blocks live, named by their CIDs.

``hearth.adds`` is pure; this package does the storing, for the provider node and for the client
and CLI alike. Every store verifies on the way in and on the way out (sha2-256 against the CID).

- ``BlockStore``: the protocol (put, get, has, cids, close); ``BlockStoreError`` and its
  ``BlockNotFound`` (a KeyError), ``BlockCorrupt`` and ``InvalidCid`` (a ValueError).
- ``FileBlockStore``: hearth's sharded on-disk layout with atomic, durable writes.
- ``DirectoryBlockStore``: the interchange form, a plain directory of ``<cid>`` files.
- ``HttpBlockStore``: a provider node's ``/v1/adds/blocks`` routes.
- ``open_block_store(location)`` picks one of these; ``copy_blocks`` moves blocks between two.

See docs/blockstore.md.
"""

from typing import TYPE_CHECKING

from .base import (
    MAX_BLOCK_SIZE,
    BlockCorrupt,
    BlockNotFound,
    BlockStore,
    BlockStoreError,
    InvalidCid,
)
from .directory import DirectoryBlockStore
from .fs import DEFAULT_SWEEP_AGE, MARKER_NAME, MARKER_TEXT, FileBlockStore
from .open import CopyResult, copy_blocks, open_block_store

if TYPE_CHECKING:
    from .http import HttpBlockStore

__all__ = [
    "DEFAULT_SWEEP_AGE",
    "MARKER_NAME",
    "MARKER_TEXT",
    "MAX_BLOCK_SIZE",
    "BlockCorrupt",
    "BlockNotFound",
    "BlockStore",
    "BlockStoreError",
    "CopyResult",
    "DirectoryBlockStore",
    "FileBlockStore",
    "HttpBlockStore",
    "InvalidCid",
    "copy_blocks",
    "open_block_store",
]


def __getattr__(name: str) -> object:
    # The HTTP store brings in an HTTP client (about 0.1 s of imports): loaded when first used,
    # so that a command working on local stores does not pay for it.
    if name == "HttpBlockStore":
        from .http import HttpBlockStore  # noqa: PLC0415

        return HttpBlockStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
