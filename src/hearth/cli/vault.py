"""``hearth vault``: the project's secrets by name: store, list, describe, delete.

A value goes in and never comes back out: the service seals it at rest and no route answers
it, so nothing here can print one. ``put`` reads the value from ``--file`` (``-``: standard
input) or a hidden prompt, never from an argument, because arguments stay in shell history and
in ``ps``.
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from hearth.client.life import VaultSecret

from .client_config import (
    BASE_URL_OPTION,
    HOME_OPTION,
    JSON_OPTION,
    LIMIT_OPTION,
    ask,
    gather,
    hidden_prompt,
    output,
    print_json,
    print_table,
    usage_error,
)
from .files import read_input

app = typer.Typer(
    help="Store, list, describe and delete the project's secrets (values never shown).",
    no_args_is_help=True,
)


def _line(secret: VaultSecret) -> str:
    owner = secret.identity_id or "project"
    return f"{secret.name} v{secret.version} ({owner}, {secret.sealing}) {secret.updated_at}"


def _value(file: str | None) -> str:
    if file is None:
        return hidden_prompt("Secret value", confirm=False, instead="--file")
    try:
        # One trailing newline is the file's or the pipe's, not the secret's.
        text = read_input(file).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        usage_error(f"cannot read {file}: {exc}")
    return text.removesuffix("\n").removesuffix("\r")


@app.command("put")
def put(  # noqa: PLR0917 - typer reads options from the signature
    name: str = typer.Argument(..., help="The secret's name (<identity id>:<key> for its own)."),
    file: str | None = typer.Option(
        None,
        "--file",
        "-f",
        help="Read the value from this file ('-': standard input; default: a hidden prompt).",
        show_default=False,
    ),
    description: str | None = typer.Option(
        None, "--description", help="What the secret is for.", show_default=False
    ),
    as_json: bool = JSON_OPTION,
    home: Path | None = HOME_OPTION,
    base_url: str | None = BASE_URL_OPTION,
) -> None:
    """Store or replace a secret; prints its metadata, never its value."""
    value = _value(file)
    if not value:
        usage_error("the value must not be empty")
    secret, _profile = ask(
        home, base_url, lambda client: client.vault_put(name, value, description=description)
    )
    if as_json:
        print_json(secret)
        return
    output.print(f"stored {_line(secret)}", markup=False)


@app.command("show")
def show(
    name: str = typer.Argument(..., help="The secret's name."),
    as_json: bool = JSON_OPTION,
    home: Path | None = HOME_OPTION,
    base_url: str | None = BASE_URL_OPTION,
) -> None:
    """A secret's metadata: version, owner, sealing, times (the value is never answered)."""
    secret, _profile = ask(home, base_url, lambda client: client.vault_secret(name))
    if as_json:
        print_json(secret)
        return
    output.print(_line(secret), markup=False)
    if secret.description:
        output.print(secret.description, markup=False)


@app.command("list")
def list_secrets(
    identity: str | None = typer.Option(
        None, "--identity", help="Only this identity's namespace.", show_default=False
    ),
    limit: int = LIMIT_OPTION,
    as_json: bool = JSON_OPTION,
    home: Path | None = HOME_OPTION,
    base_url: str | None = BASE_URL_OPTION,
) -> None:
    """List the project's secrets by name (metadata only)."""
    found, profile = ask(
        home,
        base_url,
        lambda client: gather(
            lambda cursor, size: client.vault_list(identity_id=identity, cursor=cursor, limit=size),
            limit,
        ),
    )
    if as_json:
        print_json(found)
        return
    table = Table(title=f"Secrets of project {profile.project_id}")
    for column in ("name", "identity", "version", "description", "updated_at"):
        table.add_column(column, overflow="fold")
    for secret in found:
        table.add_row(
            escape(secret.name),
            escape(secret.identity_id or ""),
            str(secret.version),
            escape(secret.description or ""),
            secret.updated_at,
        )
    print_table(table)


@app.command("delete")
def delete(
    name: str = typer.Argument(..., help="The secret's name."),
    home: Path | None = HOME_OPTION,
    base_url: str | None = BASE_URL_OPTION,
) -> None:
    """Delete a secret."""
    _, _profile = ask(home, base_url, lambda client: client.vault_delete(name))
    output.print(f"deleted {name}", markup=False)
