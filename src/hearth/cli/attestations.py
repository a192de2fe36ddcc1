"""``hearth attestations``: sponsors' statements about identities (bootstrap-elevate/v1).

A sponsor signs a statement about another identity with its root key (``sign``, run in the
sponsor's home); the statement either elevates its subject (``hearth elevate``, run in the
subject's home) or is kept without elevating (``add``). ``list`` shows the kept ones.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from hearth.client.life import DEFAULT_INITIAL_CREDITS, sponsor_statement

from .client_config import (
    BASE_URL_OPTION,
    HOME_OPTION,
    JSON_OPTION,
    LIMIT_OPTION,
    PASSPHRASE_FILE_OPTION,
    ask,
    gather,
    home_dir,
    open_root_key,
    output,
    print_json,
    print_table,
    require_profile,
    usage_error,
)
from .files import read_input

app = typer.Typer(
    help="Sign, keep and list sponsors' statements about identities.", no_args_is_help=True
)


def read_statement(path: str) -> dict[str, Any]:
    """A statement from a file (``-``: standard input), as ``hearth attestations sign`` wrote."""
    try:
        data = json.loads(read_input(path).decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        usage_error(f"cannot read the statement {path}: {exc}")
    if not isinstance(data, dict) or not isinstance(data.get("agent_id"), str):
        usage_error(f"{path} holds no statement (a JSON object with an agent_id)")
    return data


@app.command("sign")
def sign(  # noqa: PLR0917 - typer reads options from the signature
    agent_id: str = typer.Argument(..., help="The subject's id (its lower-case UUID)."),
    claim: str = typer.Option("sponsorship", "--claim", help="What the sponsor vouches for."),
    credits: int = typer.Option(
        DEFAULT_INITIAL_CREDITS,
        "--credits",
        min=0,
        max=1_000_000,
        help="Credits the elevation grants the subject.",
    ),
    evidence: Path | None = typer.Option(
        None, "--evidence", help="A JSON object file kept with it (not signed).", show_default=False
    ),
    home: Path | None = HOME_OPTION,
    passphrase_file: Path | None = PASSPHRASE_FILE_OPTION,
) -> None:
    """Sign a statement about another identity as this home's identity (its sponsor).

    Prints the statement's JSON, for `hearth elevate` or `hearth attestations add`. Nothing is
    sent: the signature is made here, with the root key opened from this home."""
    extra: dict[str, Any] | None = None
    if evidence is not None:
        try:
            extra = json.loads(evidence.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            usage_error(f"cannot read {evidence}: {exc}")
        if not isinstance(extra, dict):
            usage_error(f"{evidence} holds no JSON object")
    home_path = home_dir(home)
    profile = require_profile(home_path)
    key = open_root_key(home_path, profile, passphrase_file)
    statement = sponsor_statement(
        key,
        agent_id.lower(),
        profile.did,
        claim=claim,
        initial_credits=credits,
        sponsor_identity_id=profile.identity_id,
        evidence=extra,
    )
    typer.echo(json.dumps(statement, indent=2))


@app.command("add")
def add(
    statement: str = typer.Argument(..., help="The statement's JSON file ('-': standard input)."),
    as_json: bool = JSON_OPTION,
    home: Path | None = HOME_OPTION,
    base_url: str | None = BASE_URL_OPTION,
) -> None:
    """Keep a sponsor's statement about an identity of this project without elevating it."""
    body = read_statement(statement)
    kept, _profile = ask(home, base_url, lambda client: client.attest(body))
    if as_json:
        print_json(kept)
        return
    again = " (already kept)" if kept.replayed else ""
    output.print(
        f"kept attestation {kept.id} by {kept.attester_did} about {kept.agent_id}{again}",
        markup=False,
    )


@app.command("list")
def list_attestations(
    identity: str | None = typer.Option(
        None, "--identity", help="Only those about this identity (id or DID).", show_default=False
    ),
    limit: int = LIMIT_OPTION,
    as_json: bool = JSON_OPTION,
    home: Path | None = HOME_OPTION,
    base_url: str | None = BASE_URL_OPTION,
) -> None:
    """List the project's kept attestations, newest first."""
    found, profile = ask(
        home,
        base_url,
        lambda client: gather(
            lambda cursor, size: client.attestations(
                identity_id=identity, cursor=cursor, limit=size
            ),
            limit,
        ),
    )
    if as_json:
        print_json(found)
        return
    table = Table(title=f"Attestations of project {profile.project_id}")
    for column in ("id", "about", "by", "claim", "credits", "created_at"):
        table.add_column(column, overflow="fold")
    for item in found:
        table.add_row(
            escape(item.id),
            escape(item.agent_id),
            escape(item.attester_did),
            escape(item.claim),
            str(item.initial_credits),
            item.created_at,
        )
    print_table(table)
