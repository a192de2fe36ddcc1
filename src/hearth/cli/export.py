"""``hearth export``: an identity's whole life as one signed, encrypted CAR v1 file, made on
this machine with the root key; ``hearth export verify``: check such a file offline."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx2
import typer

from hearth.client import HearthError

from .client_config import (
    BASE_URL_OPTION,
    HOME_OPTION,
    JSON_OPTION,
    PASSPHRASE_FILE_OPTION,
    client_for,
    errors,
    failure,
    home_dir,
    http_failure,
    identity_or_home,
    load_profile,
    open_home_keys,
    output,
    print_json,
    usage_error,
)

app = typer.Typer(
    help="Export an identity's life as a signed, encrypted CAR file; verify one offline.",
    no_args_is_help=False,
)


@contextlib.contextmanager
def _progress(quiet: bool) -> Iterator[Callable[[str, int], None]]:
    """A bar per export on stderr (only on a terminal): the data set being written, its bytes."""
    if quiet or not errors.is_terminal:
        yield lambda name, done: None
        return
    from rich.progress import (  # noqa: PLC0415 (a bar is drawn: only now)
        DownloadColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TransferSpeedColumn,
    )

    columns = (
        SpinnerColumn(),
        TextColumn("{task.description}"),
        DownloadColumn(binary_units=True),
        TransferSpeedColumn(),
    )
    with Progress(*columns, console=errors) as progress:
        task = progress.add_task("exporting", total=None)
        yield lambda name, done: progress.update(
            task, description=f"exporting {name}", completed=done
        )


@app.callback(invoke_without_command=True)
def export(  # noqa: PLR0917 - typer reads options from the signature
    ctx: typer.Context,
    out: Path | None = typer.Option(
        None, "-o", "--out", help="The CAR file to write (life.car).", show_default=False
    ),
    identity: str | None = typer.Option(
        None, "--identity", help="The identity (default: this home's).", show_default=False
    ),
    quiet: bool = typer.Option(False, "-q", "--quiet", help="No progress bar."),
    as_json: bool = JSON_OPTION,
    home: Path | None = HOME_OPTION,
    base_url: str | None = BASE_URL_OPTION,
    passphrase_file: Path | None = PASSPHRASE_FILE_OPTION,
) -> None:
    """Export an identity's life as a signed, encrypted CAR file; verify one offline."""
    if ctx.invoked_subcommand is not None:
        return
    if out is None:
        usage_error("give the file to write with -o life.car")
    home_path = home_dir(home)
    client, profile = client_for(home_path, base_url)
    identity_id = identity_or_home(identity, profile)
    if identity_id != profile.identity_id:
        usage_error("the root key of this home is its own identity's: export that one")
    keys = open_home_keys(home_path, profile, passphrase_file)
    partial = out.with_name(out.name + ".partial")
    try:
        with client, partial.open("wb") as stream, _progress(quiet or as_json) as progress:
            exported = client.export_life(
                stream, keys=keys, identity_id=identity_id, did=profile.did, on_progress=progress
            )
            stream.flush()
            os.fsync(stream.fileno())
    except (HearthError, httpx2.HTTPError) as exc:
        partial.unlink(missing_ok=True)
        http_failure(exc)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        failure(f"cannot write {out}: {exc.strerror}")
    except ValueError as exc:
        partial.unlink(missing_ok=True)
        failure(str(exc))
    partial.replace(out)
    if as_json:
        print_json({"file": str(out), **exported.to_json()})
        return
    records = sum(exported.records.values())
    output.print(
        f"wrote {out}: {exported.blocks} blocks, {exported.bytes} bytes, {records} records;"
        f" root {exported.root}"
    )


@app.command("verify")
def verify(  # noqa: PLR0917 - typer reads options from the signature
    path: Path = typer.Argument(..., help="The exported CAR file.", show_default=False),
    open_objects: bool = typer.Option(
        False,
        "--open",
        help="Also open every object with this home's keys (asks for the passphrase).",
    ),
    reader_key: Path | None = typer.Option(
        None,
        "--key",
        help="Also open every object with this X25519 private key (PEM): a reader's.",
        show_default=False,
    ),
    as_json: bool = JSON_OPTION,
    home: Path | None = HOME_OPTION,
    passphrase_file: Path | None = PASSPHRASE_FILE_OPTION,
) -> None:
    """Check an exported life offline: every block against its CID, every document and
    signature back to the identity's root key, the index complete; with --open, that every
    object opens. Exits 0 only when everything holds."""
    from hearth.adds.car import CarError  # noqa: PLC0415 (the ADDS stack: only when used)
    from hearth.adds.keys import load_x25519_private_key  # noqa: PLC0415
    from hearth.client.export import verify_export  # noqa: PLC0415

    box_key = None
    if open_objects and reader_key is not None:
        usage_error("give --open or --key, not both")
    if open_objects:
        home_path = home_dir(home)
        profile = load_profile(home_path)
        if profile is None:
            usage_error(f"--open needs a home with keys; {home_path} has no profile")
        box_key = open_home_keys(home_path, profile, passphrase_file).box
    elif reader_key is not None:
        try:
            box_key = load_x25519_private_key(reader_key.read_bytes())
        except (OSError, ValueError) as exc:
            usage_error(f"cannot read an X25519 private key from {reader_key}: {exc}")
    try:
        with path.open("rb") as stream:
            report = verify_export(stream, box_key=box_key)
    except OSError as exc:
        failure(f"cannot read {path}: {exc.strerror}")
    except CarError as exc:
        failure(f"{path} is not a CAR v1 file: {exc}")
    if as_json:
        print_json({"file": str(path), **report.to_json()})
    else:
        checked = report.to_json()["checked"]
        summary = ", ".join(f"{name} {value}" for name, value in checked.items())
        output.print(f"{path}: identity {report.did}, root {report.root}")
        output.print(f"checked: {summary}")
        for problem in report.problems:
            output.print(f"[red]refused[/red] {problem.code}: {problem.message}")
        output.print("[green]valid[/green]" if report.ok else "[red]NOT valid[/red]")
    if not report.ok:
        raise typer.Exit(1)


@app.command("add-reader")
def add_reader(  # noqa: PLR0917 - typer reads options from the signature
    path: Path = typer.Argument(..., help="The exported CAR file.", show_default=False),
    audience: str = typer.Option(
        ..., "--audience", help="The reader's id (a DID, a service's address).", show_default=False
    ),
    audience_key: str = typer.Option(
        ...,
        "--audience-key",
        help="The reader's X25519 public key (base64 or base64url).",
        show_default=False,
    ),
    out: Path = typer.Option(..., "-o", "--out", help="The CAR file to write.", show_default=False),
    as_json: bool = JSON_OPTION,
    home: Path | None = HOME_OPTION,
    passphrase_file: Path | None = PASSPHRASE_FILE_OPTION,
) -> None:
    """Copy an export with every object also granted to another reader's X25519 key (a new
    head, signed with this home's root key); the export must verify with this home's keys."""
    from hearth.client.export import add_export_reader  # noqa: PLC0415 (the ADDS stack)

    from .key_text import decode_key  # noqa: PLC0415

    try:
        public = decode_key(audience_key, what="--audience-key")
    except ValueError as exc:
        usage_error(str(exc))
    home_path = home_dir(home)
    profile = load_profile(home_path)
    if profile is None:
        usage_error(f"add-reader needs a home with keys; {home_path} has no profile")
    keys = open_home_keys(home_path, profile, passphrase_file)
    partial = out.with_name(out.name + ".partial")
    try:
        with path.open("rb") as source, partial.open("wb") as stream:
            root = add_export_reader(
                source, stream, keys=keys, audience=audience, audience_public=public
            )
            stream.flush()
            os.fsync(stream.fileno())
    except OSError as exc:
        partial.unlink(missing_ok=True)
        failure(f"cannot copy {path} to {out}: {exc.strerror}")
    except ValueError as exc:
        partial.unlink(missing_ok=True)
        failure(str(exc))
    partial.replace(out)
    if as_json:
        print_json({"file": str(out), "root": root, "audience": audience})
        return
    output.print(f"wrote {out}: root {root}, every object also granted to {audience}")
