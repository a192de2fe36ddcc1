"""File handling shared by commands: private files written 0600, never over an existing one."""

from __future__ import annotations

import os
import sys
from pathlib import Path


def write_private(path: Path, content: bytes, *, overwrite: bool = False) -> None:
    """Write a secret file readable by its owner only; the mode is set at creation, so the
    secret is never briefly world-readable."""
    flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if overwrite else os.O_EXCL)
    descriptor = os.open(path, flags, 0o600)
    try:
        os.fchmod(descriptor, 0o600)
        os.write(descriptor, content)
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def read_input(name: str) -> bytes:
    """The bytes of a file, or of standard input for ``-``."""
    if name == "-":
        return sys.stdin.buffer.read()
    return Path(name).read_bytes()
