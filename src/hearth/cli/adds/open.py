"""``hearth adds open``: check a grant and its manifest, then fetch, verify and decrypt every
block, to a file (complete or absent) or to stdout."""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import typer

from hearth.adds import OpenError, open_object
from hearth.adds.objects import OpenedObject
from hearth.blockstore import BlockStoreError
from hearth.blockstore.direct_io import PositionalFile

from .files import check_writable, fsync_directory
from .inputs import current_time, is_url, x25519_key
from .node import connect
from .options import BEARER_OPTION, BLOCKS_HELP, FORCE_OPTION, NOW_OPTION, QUIET_OPTION
from .report import byte_progress, fail, note, throughput
from .stores import load_document, open_store, store_bearer, store_code

__all__ = ["open_command"]


def open_command(
    manifest: str = typer.Argument(
        ..., help="The manifest: a file, '-', or its CID (fetched when --blocks is a URL)."
    ),
    *,
    grant: str = typer.Option(
        ..., "--grant", "-g", help="The grant: a file or its CID (fetched like the manifest)."
    ),
    key: Path = typer.Option(
        ..., "--key", "-k", help="Your X25519 private key (PEM): the grant's audience key."
    ),
    blocks: str = typer.Option(..., "--blocks", help=BLOCKS_HELP),
    bearer_file: Path | None = BEARER_OPTION,
    parent_grant: list[str] | None = typer.Option(
        None,
        "--parent-grant",
        help="A re-grant's ancestors (files or CIDs), up to the first grant; repeat.",
        show_default=False,
    ),
    out: Path | None = typer.Option(
        None,
        "--out",
        "-o",
        help="Write the plaintext here (mode 0600), via OUT.partial renamed only when every "
        "byte verified. Default: stdout, where bytes already written cannot be taken back "
        "(exit 1 then means: discard the output).",
        show_default=False,
    ),
    now: int | None = NOW_OPTION,
    force: bool = FORCE_OPTION,
    quiet: bool = QUIET_OPTION,
    workers: int = typer.Option(
        2,
        "--workers",
        min=1,
        max=64,
        help="Threads fetching, verifying and decrypting blocks ahead of the output (with -o"
        " each also writes its chunks into the file at their offsets).",
    ),
) -> None:
    """Check the grant and manifest, then fetch, verify and decrypt every block.

    Exit 0 only when every byte verified. On a refusal (a stable open.* code, e.g.
    open.expired, open.wrong_key, open.block_missing) or a damaged block (store.block_corrupt)
    the partial output file is deleted and the code and reason are printed: exit 1.
    """
    bearer = store_bearer(blocks, bearer_file)
    to_stdout = out is None or str(out) == "-"
    if not to_stdout:
        assert out is not None
        check_writable(out, force)
    box = x25519_key(key)
    with contextlib.ExitStack() as stack:
        store = open_store(blocks, bearer, create=False)
        stack.callback(store.close)
        node = stack.enter_context(connect(blocks, bearer)) if is_url(blocks) else None
        manifest_bytes = load_document(manifest, node, "manifest")
        grant_bytes = load_document(grant, node, "grant")
        parents = [load_document(name, node, "parent grant") for name in parent_grant or []]
        try:
            chunks = open_object(
                manifest_bytes,
                grant_bytes,
                box,
                store,
                now=current_time(now),
                parents=parents,
                workers=workers,
            )
        except OpenError as exc:
            fail(f"{exc.code}: {exc.message}")
        if to_stdout:
            _open_to_stdout(chunks, chunks.size, quiet)
        else:
            assert out is not None
            _open_to_file(chunks, out, quiet)


def _open_to_stdout(chunks: Iterator[bytes], total: int, quiet: bool) -> None:
    sink = sys.stdout.buffer
    written = 0
    started = time.perf_counter()
    try:
        with byte_progress("open", total, quiet) as progress:
            for chunk in chunks:
                sink.write(chunk)
                written += len(chunk)
                progress(written)
        sink.flush()
    except (OpenError, BlockStoreError) as exc:
        with contextlib.suppress(OSError):
            sink.flush()
        reason = (
            f"{exc.code}: {exc.message}"
            if isinstance(exc, OpenError)
            else f"{store_code(exc)}: {exc}"
        )
        fail(f"{reason} (the {written} bytes already written to stdout are incomplete: discard)")
    if not quiet:
        note(f"opened {written} bytes, every one verified ({throughput(written, _since(started))})")


def _since(started: float) -> float:
    return time.perf_counter() - started


def _open_to_file(opened: OpenedObject, out: Path, quiet: bool) -> None:
    partial = out.with_name(out.name + ".partial")
    total = opened.size
    try:
        # The workers decrypt each chunk into an aligned buffer of their own and write it at
        # its offset, past the page cache where the file system allows (direct_io.py): this
        # thread copies and writes nothing, and the writes overlap like the reads do.
        target = PositionalFile(partial, opened.chunk_sizes, mode=0o600)
    except OSError as exc:
        fail(f"cannot create {partial}: {exc.strerror or exc}")
    written = 0
    started = time.perf_counter()
    failure: str | None = None
    complete = False
    try:
        with byte_progress("open", total, quiet) as progress:
            written = opened.into(target, on_progress=progress)
        target.finish()
        complete = True
    except OpenError as exc:
        failure = f"{exc.code}: {exc.message}"
    except BlockStoreError as exc:
        failure = f"{store_code(exc)}: {exc}"
    except OSError as exc:
        failure = f"cannot write {partial}: {exc.strerror or exc}"
    finally:
        target.close()
        if not complete:  # a refusal, or anything else (an interrupt): no partial is left
            with contextlib.suppress(OSError):
                partial.unlink()
    if failure is not None:
        fail(f"{failure} (nothing written to {out})")
    if written != total:  # open_object yields exactly the manifest's bytes; a guard all the same
        partial.unlink()
        fail(f"the plaintext is {written} bytes, the manifest says {total}")
    try:
        os.replace(partial, out)
    except OSError as exc:
        with contextlib.suppress(OSError):
            partial.unlink()
        fail(f"cannot move {partial} to {out}: {exc.strerror or exc}")
    fsync_directory(out.parent)
    if not quiet:
        rate = throughput(written, _since(started))
        note(f"opened {written} bytes into {out}, every one verified ({rate})")
