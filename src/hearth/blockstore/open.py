"""Choosing a store from a location string, and copying blocks between any two stores."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from .base import BlockStore, BlockStoreError, check_cid
from .directory import DirectoryBlockStore
from .fs import MARKER_NAME, FileBlockStore

__all__ = ["CopyResult", "copy_blocks", "open_block_store"]

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")


def open_block_store(
    location: str | os.PathLike[str], *, bearer: str | None = None, create: bool = False
) -> BlockStore:
    """The store at ``location``:

    - ``http://`` or ``https://`` URL: an HttpBlockStore (a provider node), with ``bearer``;
    - ``s3://bucket/prefix``: an S3BlockStore, configured by the standard AWS variables;
    - a directory holding ``ADDS-BLOCKSTORE``: a FileBlockStore;
    - any other existing directory: a DirectoryBlockStore (the plain interchange form);
    - a missing path, when ``create`` is true: a new FileBlockStore.

    Anything else (a missing path without ``create``, a file, another URL scheme) is a
    BlockStoreError saying why. ``bearer`` is not used by local stores.
    """
    text = os.fspath(location)
    if text.startswith(("http://", "https://")):
        from .http import HttpBlockStore  # noqa: PLC0415 - its HTTP client only when needed

        return HttpBlockStore(text, bearer=bearer)
    if text.startswith("s3://"):
        from .s3 import S3BlockStore  # noqa: PLC0415 - its client only when needed

        return S3BlockStore(text)
    if _SCHEME.match(text):
        raise BlockStoreError(
            f"unsupported block store URL {text!r}: use http://, https://, s3:// or a "
            "directory path"
        )
    if not text:
        raise BlockStoreError("no block store location given")
    path = Path(text).expanduser()
    if (path / MARKER_NAME).is_file():
        return FileBlockStore(path, create=False)
    if path.is_dir():
        return DirectoryBlockStore(path, create=False)
    if path.exists() or path.is_symlink():
        raise BlockStoreError(f"{path} is not a directory, so it cannot be a block store")
    if create:
        return FileBlockStore(path, create=True)
    raise BlockStoreError(
        f"there is no block store at {path}: give an existing directory, an http(s) URL, "
        "or ask for a new store to be created"
    )


@dataclass(frozen=True)
class CopyResult:
    """What ``copy_blocks`` did: blocks written to the target, and ones it already held."""

    copied: int
    present: int


def copy_blocks(
    source: BlockStore,
    target: BlockStore,
    cids: Iterable[str] | None = None,
    *,
    progress: Callable[[str, bool], None] | None = None,
) -> CopyResult:
    """Copy blocks from ``source`` to ``target`` (default: every block ``source`` lists).

    Works between any two stores, so it converts a FileBlockStore to the plain directory form
    and back, or uploads to and downloads from a provider. Each block is verified when read and
    again when written; one the target already has (``has``) is not read at all. ``progress``
    is called after each block with its CID and whether it was copied. Stops at the first
    error (BlockNotFound when ``source`` lacks a requested block, BlockCorrupt when its copy is
    damaged); blocks copied before then stay copied.
    """
    copied = present = 0
    for cid in source.cids() if cids is None else cids:
        check_cid(cid)
        if target.has(cid):
            present += 1
            wrote = False
        else:
            target.put(cid, source.get(cid))
            copied += 1
            wrote = True
        if progress is not None:
            progress(cid, wrote)
    return CopyResult(copied=copied, present=present)
