"""``hearth chronicle``: the project's chronicle, newest first: what happened, what was refused."""

from __future__ import annotations

from pathlib import Path

import httpx2
import typer
from rich.markup import escape
from rich.table import Table

from hearth.client import HearthError

from .client_config import (
    BASE_URL_OPTION,
    HOME_OPTION,
    JSON_OPTION,
    LIMIT_OPTION,
    client_for,
    gather,
    home_dir,
    http_failure,
    print_json,
    print_table,
)


def chronicle(  # noqa: PLR0917 - typer reads options from the signature
    kind: str | None = typer.Option(
        None, "--kind", help="Only entries of this kind (e.g. refusal).", show_default=False
    ),
    identity: str | None = typer.Option(
        None, "--identity", help="Only entries about this identity (id).", show_default=False
    ),
    mine: bool = typer.Option(False, "--mine", help="Only entries about this home's identity."),
    limit: int = LIMIT_OPTION,
    as_json: bool = JSON_OPTION,
    home: Path | None = HOME_OPTION,
    base_url: str | None = BASE_URL_OPTION,
) -> None:
    """List the project's chronicle, newest first: what happened and what was refused."""
    client, profile = client_for(home_dir(home), base_url)
    agent_id = profile.identity_id if mine else identity
    with client:
        try:
            found = gather(
                lambda cursor, size: client.chronicle(
                    kind=kind, agent_id=agent_id, cursor=cursor, limit=size
                ),
                limit,
            )
        except (HearthError, httpx2.HTTPError) as exc:
            http_failure(exc)
    if as_json:
        print_json(found)
        return
    table = Table(title=f"Chronicle of project {profile.project_id}")
    for column in ("created_at", "kind", "identity", "text"):
        table.add_column(column, overflow="fold")
    for entry in found:
        table.add_row(
            entry.created_at, entry.kind, escape(entry.agent_id or ""), escape(entry.text)
        )
    print_table(table)
