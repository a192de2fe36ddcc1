"""Opening the block store a ``hearth adds`` command names (``--blocks``, a copy's source and
target): a hearth store directory, a plain directory of CID-named files, a node's URL or an
``s3://`` object store; and documents read from a file or fetched by CID from that node."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from hearth.blockstore import BlockCorrupt, BlockStore, BlockStoreError, open_block_store

from .files import read
from .inputs import is_cid, is_url
from .node import bearer_for, fetch_document
from .report import fail

if TYPE_CHECKING:
    from hearth.client.adds import AddsClient

__all__ = [
    "load_document",
    "open_store",
    "store_bearer",
    "store_code",
    "store_failure",
]


def load_document(name: str, node: AddsClient | None, what: str) -> bytes:
    """A document from a file, '-', or by CID from ``node`` when no such file exists."""
    if name != "-" and not Path(name).exists() and is_cid(name):
        if node is None:
            fail(f"no file {name}; to fetch the {what} by CID, give a provider URL as --blocks")
        return fetch_document(node, name, what)
    return read(name, what)


def open_store(location: str, bearer: str | None, *, create: bool) -> BlockStore:
    try:
        return open_block_store(location, bearer=bearer, create=create)
    except BlockStoreError as exc:
        fail(str(exc))


def store_bearer(location: str, bearer_file: Path | None) -> str | None:
    return bearer_for(location, bearer_file) if is_url(location) else None


def store_code(exc: BlockStoreError) -> str:
    return "store.block_corrupt" if isinstance(exc, BlockCorrupt) else "store.error"


def store_failure(exc: BlockStoreError) -> NoReturn:
    fail(f"{store_code(exc)}: {exc}")
