"""The files the ``hearth adds`` commands write: never replaced without ``--force``, each
complete or absent (written beside, fsynced, renamed); secrets mode 0600."""

from __future__ import annotations

import contextlib
import os
import uuid
from pathlib import Path

import typer

from ..files import read_input
from .report import fail

__all__ = ["check_writable", "emit", "fsync_directory", "read", "write_all", "write_file"]


def check_writable(path: Path, force: bool) -> None:
    """Refuse, before any work is done, an output that exists (without --force) or whose
    directory does not."""
    if (path.exists() or path.is_symlink()) and not force:
        fail(f"{path} exists (use --force to replace it)")
    if not path.parent.is_dir():
        fail(f"cannot write {path}: the directory {path.parent} does not exist")


def fsync_directory(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def write_file(path: Path, data: bytes, *, force: bool, private: bool = False) -> None:
    """Write ``data`` to ``path`` atomically: a sibling temp file, fsynced, renamed over it."""
    if (path.exists() or path.is_symlink()) and not force:
        fail(f"{path} exists (use --force to replace it)")
    temp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:12]}.tmp")
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600 if private else 0o644)
        try:
            write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            temp.unlink()
        fail(f"cannot write {path}: {exc.strerror or exc}")
    fsync_directory(path.parent)


def emit(data: bytes, out: Path | None, *, force: bool) -> None:
    """A document to ``out``, or to stdout (with a final newline) when no file is given."""
    if out is None or str(out) == "-":
        typer.echo(data.decode("utf-8"))
    else:
        write_file(out, data, force=force)


def read(name: str | Path, what: str) -> bytes:
    try:
        return read_input(str(name))
    except OSError as exc:
        fail(f"cannot read the {what} {name}: {exc.strerror or exc}")
