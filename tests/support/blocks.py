"""Blocks as the block-store tests make them, names every store must refuse, and the files a
store leaves on disk."""

from __future__ import annotations

import hashlib
from pathlib import Path

from hearth.adds.cid import cid_for_bytes

_BASE32 = "abcdefghijklmnopqrstuvwxyz234567"


def make_block(seed: int | str, size: int = 64) -> tuple[str, bytes]:
    """A deterministic block of ``size`` bytes and its CID."""
    data = hashlib.shake_256(f"block-{seed}".encode()).digest(size) if size else b""
    return cid_for_bytes(data), data


def with_tail_bits(cid: str) -> str:
    """The same digest written with the unused bits of the last character set."""
    return cid[:-1] + _BASE32[_BASE32.index(cid[-1]) + 1]


_SAMPLE, _ = make_block("sample")

# Names every store must refuse as CIDs, whatever the operation.
INVALID_CIDS: dict[str, object] = {
    "empty": "",
    "not base32": "not-a-cid",
    "path traversal": "../" + _SAMPLE,
    "upper case": _SAMPLE.upper(),
    "base58 CIDv0": "QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG",
    "dag-pb codec": "bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi",
    "unused bits set": with_tail_bits(_SAMPLE),
    "truncated": _SAMPLE[:-2],
    "trailing character": _SAMPLE + "a",
    "bytes": _SAMPLE.encode(),
}


def files_under(root: Path) -> list[str]:
    """Every regular file below ``root``, as sorted paths relative to it."""
    return sorted(str(path.relative_to(root)) for path in root.rglob("*") if path.is_file())


def temp_files(root: Path) -> list[Path]:
    """Every ``.tmp-`` file below ``root``."""
    return sorted(root.rglob(".tmp-*"))
