"""``hearth adds blocks copy``: blocks between the store layout, a plain directory and a node,
each verified when read and again when written."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path

import typer

from hearth.blockstore import BlockStore, BlockStoreError, DirectoryBlockStore, copy_blocks

from .inputs import is_cid, is_url
from .options import BEARER_OPTION, QUIET_OPTION
from .report import errors, fail, note, usage
from .stores import open_store, store_bearer, store_code

__all__ = ["blocks_copy_command"]


def blocks_copy_command(
    source: str = typer.Argument(..., help="From: a store directory, plain directory or URL."),
    target: str = typer.Argument(
        ...,
        help="To: a store directory, plain directory or URL. A missing directory is created as "
        "a hearth store, or as a plain directory with --plain.",
    ),
    cids: list[str] | None = typer.Argument(
        None, help="Only these blocks (default: every block of SOURCE).", show_default=False
    ),
    *,
    plain: bool = typer.Option(
        False, "--plain", help="Create a missing TARGET as a plain directory of CID-named files."
    ),
    bearer_file: Path | None = BEARER_OPTION,
    quiet: bool = QUIET_OPTION,
) -> None:
    """Copy blocks between stores, verifying each when read and again when written.

    Converts hearth's store layout to the plain interchange form (a directory of files named by
    their CIDs) and back, uploads to a provider node and downloads from one. Blocks the target
    already holds are skipped.
    """
    wanted = list(cids or [])
    bad = [cid for cid in wanted if not is_cid(cid)]
    if bad:
        usage(f"not ADDS CIDs: {', '.join(bad)}")
    if plain and is_url(target):
        usage("--plain makes a local directory; the target is a URL")
    source_store = open_store(source, store_bearer(source, bearer_file), create=False)
    try:
        if plain and not Path(target).exists():
            try:
                target_store: BlockStore = DirectoryBlockStore(target, create=True)
            except BlockStoreError as exc:
                fail(str(exc))
        else:
            target_store = open_store(target, store_bearer(target, bearer_file), create=True)
        try:
            listing = wanted or list(source_store.cids())
            done = 0

            with contextlib.ExitStack() as stack:
                if quiet or not errors.is_terminal:
                    advance: Callable[[], None] = lambda: None  # noqa: E731
                else:
                    from rich.progress import (  # noqa: PLC0415 (a bar is drawn: only now)
                        BarColumn,
                        MofNCompleteColumn,
                        Progress,
                        TextColumn,
                        TimeRemainingColumn,
                    )

                    progress = stack.enter_context(
                        Progress(
                            TextColumn("copy"),
                            BarColumn(),
                            MofNCompleteColumn(),
                            TimeRemainingColumn(),
                            console=errors,
                        )
                    )
                    task = progress.add_task("copy", total=len(listing))
                    advance = lambda: progress.advance(task)  # noqa: E731

                def step(_cid: str, _copied: bool) -> None:
                    nonlocal done
                    done += 1
                    advance()

                result = copy_blocks(source_store, target_store, listing, progress=step)
        except BlockStoreError as exc:
            fail(f"{store_code(exc)}: {exc} (after {done} of {len(listing)} blocks)")
        finally:
            target_store.close()
    finally:
        source_store.close()
    if not quiet:
        note(f"copied {result.copied} blocks, {result.present} already present")
