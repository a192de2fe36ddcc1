"""How the ``hearth adds`` commands speak: one line on stderr per note or failure (exit 1, or 2
for a usage error), and a progress bar with throughput when stderr is a terminal."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape

__all__ = ["byte_progress", "errors", "fail", "note", "problems_text", "throughput", "usage"]

errors = Console(stderr=True, highlight=False, soft_wrap=True)


def usage(message: str) -> NoReturn:
    errors.print(f"error: {escape(message)}")
    raise typer.Exit(2)


def fail(message: str) -> NoReturn:
    errors.print(f"error: {escape(message)}")
    raise typer.Exit(1)


def note(message: str) -> None:
    errors.print(escape(message))


def problems_text(problems: Any) -> str:
    return "; ".join(f"{p.code} at '{p.pointer}': {p.message}" for p in problems)


def throughput(size: int, seconds: float) -> str:
    return f"{seconds:.2f} s, {size / max(seconds, 1e-9) / 1e6:.1f} MB/s"


@contextlib.contextmanager
def byte_progress(
    description: str, total: int | None, quiet: bool
) -> Iterator[Callable[[int], None]]:
    """A progress bar with throughput on stderr (only on a terminal); yields ``done(bytes)``."""
    if quiet or not errors.is_terminal:
        yield lambda done: None
        return
    from rich.progress import (  # noqa: PLC0415 (a bar is drawn: only now)
        BarColumn,
        DownloadColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(binary_units=True),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=errors) as progress:
        task = progress.add_task(description, total=total)
        yield lambda done: progress.update(task, completed=done)
