"""``hearth keys``: key material on this machine, and the project's bearer keys."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import httpx2
import typer
from rich.markup import escape
from rich.table import Table

from hearth.adds.keys import generate_key_pair, private_key_pem
from hearth.client import HearthError

from .client_config import (
    BASE_URL_OPTION,
    HOME_OPTION,
    JSON_OPTION,
    client_for,
    errors,
    home_dir,
    http_failure,
    output,
    print_json,
    print_table,
    usage_error,
)
from .files import write_private

app = typer.Typer(
    help="Generate local keys; list, create and revoke project keys.", no_args_is_help=True
)


@app.command("generate")
def generate(
    out: Path = typer.Option(
        Path("hearth"),
        "--out",
        "-o",
        help="Path prefix: writes PREFIX.ed25519.pem and PREFIX.x25519.pem.",
    ),
    force: bool = typer.Option(False, "--force", help="Overwrite existing key files."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Generate an Ed25519 signing key and an X25519 box key (PKCS#8 PEM files, mode 0600)."""
    pair = generate_key_pair()
    signing_path = out.with_name(out.name + ".ed25519.pem")
    box_path = out.with_name(out.name + ".x25519.pem")
    if not force:
        for path in (signing_path, box_path):
            if path.exists():
                typer.echo(f"error: {path} exists (use --force to replace it)", err=True)
                raise typer.Exit(1)
    try:
        # The prefix's folder is made when missing (`--out keys/alice` on a fresh checkout),
        # private like the files in it.
        out.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        write_private(signing_path, private_key_pem(pair.signing), overwrite=force)
        write_private(box_path, private_key_pem(pair.box), overwrite=force)
    except OSError as exc:
        typer.echo(f"error: cannot write key files: {exc}", err=True)
        raise typer.Exit(1) from None
    typer.echo(f"wrote {signing_path} and {box_path} (mode 0600)", err=True)
    if as_json:
        print_json(pair.describe())
        return
    for name, value in pair.describe().items():
        typer.echo(f"{name}: {value}")


@app.command("list")
def list_keys(
    home: Path | None = HOME_OPTION,
    base_url: str | None = BASE_URL_OPTION,
    as_json: bool = typer.Option(False, "--json", help="One JSON array instead of a table."),
) -> None:
    """List the project's live bearer keys (prefix and metadata; never the secret)."""
    client, profile = client_for(home_dir(home), base_url)
    with client:
        try:
            keys = client.keys_list()
        except (HearthError, httpx2.HTTPError) as exc:
            http_failure(exc)
    if as_json:
        typer.echo(json.dumps([asdict(key) for key in keys], indent=2))
        return
    table = Table(title=f"Project keys of {profile.project_id}")
    for column in ("id", "name", "prefix", "created_at"):
        table.add_column(column, overflow="fold")
    for key in keys:
        marker = " (this home)" if key.id == profile.key_id else ""
        table.add_row(escape(key.id), escape(key.name) + marker, escape(key.prefix), key.created_at)
    print_table(table)


@app.command("create")
def create_key(
    name: str = typer.Argument(..., help="A name, to tell keys apart when revoking."),
    home: Path | None = HOME_OPTION,
    base_url: str | None = BASE_URL_OPTION,
    as_json: bool = typer.Option(
        False, "--json", help="Print the key as JSON, its bearer included (shown once)."
    ),
) -> None:
    """Create a project bearer key and print it once (it has project-wide authority)."""
    client, _profile = client_for(home_dir(home), base_url)
    with client:
        try:
            created = client.keys_create(name)
        except (HearthError, httpx2.HTTPError) as exc:
            http_failure(exc)
    errors.print(
        f"Created key {created.id} ({created.name}). The bearer below is shown once and has "
        "project-wide authority: store it now.",
        markup=False,
    )
    if as_json:
        # Asked for by name: this is the one answer that holds the bearer.
        print_json({"id": created.id, "name": created.name, "api_key": created.api_key})
        return
    typer.echo(created.api_key)


@app.command("revoke")
def revoke_key(
    key_id: str = typer.Argument(..., help="The id of the key (see `hearth keys list`)."),
    force: bool = typer.Option(False, "--force", help="Also revoke the key this home uses."),
    home: Path | None = HOME_OPTION,
    base_url: str | None = BASE_URL_OPTION,
) -> None:
    """Revoke a project key, permanently and at once."""
    client, profile = client_for(home_dir(home), base_url)
    if key_id == profile.key_id and not force:
        client.close()
        usage_error(
            "that is the key this home uses; revoking it locks this home out "
            "(pass --force, then `hearth recover`)"
        )
    with client:
        try:
            client.keys_revoke(key_id)
        except (HearthError, httpx2.HTTPError) as exc:
            http_failure(exc)
    output.print(f"revoked {key_id}", markup=False)
