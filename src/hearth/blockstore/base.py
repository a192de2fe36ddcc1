"""What every block store is, and what can go wrong with one.

A block store keeps ADDS blocks (and documents) under their CIDs: CIDv1, raw codec, sha2-256.
Every store checks both directions: ``put`` refuses bytes that do not hash to the CID it is given,
and ``get`` refuses (never returns) bytes that do not hash to the CID asked for, whether the disk
or a provider damaged them.

Exceptions::

    BlockStoreError              anything a store refuses or fails to do
     +-- BlockNotFound           the store does not hold the block (also a KeyError)
     +-- BlockCorrupt            bytes do not hash to their CID (on put, or read back on get)
     +-- InvalidCid              the name is not a canonical ADDS CID (also a ValueError)
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol, runtime_checkable

from hearth.adds.cid import cid_for_bytes, decode_cid

__all__ = [
    "MAX_BLOCK_SIZE",
    "BlockCorrupt",
    "BlockNotFound",
    "BlockStore",
    "BlockStoreError",
    "InvalidCid",
    "check_block",
    "check_cid",
]

# The largest ADDS block: a chunk of chunk_size 16 MiB (the specification's maximum) plus its
# 16-byte AES-GCM tag. Stores accept any size; an HTTP download is cut off beyond this.
MAX_BLOCK_SIZE = 16 * 1024 * 1024 + 16


class BlockStoreError(Exception):
    """A store refused or failed an operation.

    ``cid`` names the block concerned, when there is one; ``code`` and ``status`` are the error
    code and HTTP status a provider answered with (HttpBlockStore only).
    """

    def __init__(
        self,
        message: str,
        *,
        cid: str | None = None,
        code: str | None = None,
        status: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.cid = cid
        self.code = code
        self.status = status

    def __str__(self) -> str:
        # KeyError.__str__ would quote the message; every store error reads the same way.
        return self.message


class BlockNotFound(BlockStoreError, KeyError):
    """The store does not hold this block. A KeyError, so mapping-style callers can catch that."""


class BlockCorrupt(BlockStoreError):
    """Bytes do not hash to their CID: refused on put, or found damaged on get."""


class InvalidCid(BlockStoreError, ValueError):
    """The name is not a canonical ADDS CID (CIDv1, raw, sha2-256, lower-case base32)."""


@runtime_checkable
class BlockStore(Protocol):
    """A place that keeps blocks under their CIDs."""

    def put(self, cid: str, data: bytes) -> None:
        """Keep ``data`` under ``cid``; a no-op when already held. BlockCorrupt on a mismatch."""
        ...

    def get(self, cid: str) -> bytes:
        """The block's bytes, verified against ``cid``. BlockNotFound when not held."""
        ...

    def has(self, cid: str) -> bool:
        """Whether the store holds ``cid`` (without reading or verifying the bytes)."""
        ...

    def cids(self) -> Iterator[str]:
        """Every CID the store holds, each once, in no promised order."""
        ...

    def close(self) -> None:
        """Release what the store holds open; later calls raise BlockStoreError."""
        ...


def check_cid(cid: object) -> str:
    """``cid`` itself when it is a canonical ADDS CID; InvalidCid otherwise."""
    if not isinstance(cid, str):
        raise InvalidCid(f"a CID is a string, not {type(cid).__name__}")
    try:
        decode_cid(cid)
    except ValueError as exc:
        raise InvalidCid(f"{cid[:80]!r} is not a canonical ADDS CID: {exc}") from None
    return cid


def check_block(cid: str, data: bytes) -> None:
    """BlockCorrupt unless ``data`` hashes (sha2-256) to ``cid``."""
    actual = cid_for_bytes(data)
    if actual != cid:
        raise BlockCorrupt(f"block {cid}: the bytes ({len(data)} bytes) hash to {actual}", cid=cid)
