"""``hearth inbox``: send a message to an identity (its idle runtimes wake) and list its inbox."""

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
    IDENTITY_OPTION,
    JSON_OPTION,
    LIMIT_OPTION,
    ask,
    client_for,
    gather,
    home_dir,
    http_failure,
    identity_or_home,
    output,
    print_json,
    print_table,
    require_profile,
)

app = typer.Typer(
    help="Send a message to an identity; list an identity's inbox.", no_args_is_help=True
)


@app.command("send")
def send(  # noqa: PLR0917 - typer reads options from the signature
    body: str = typer.Argument(..., help="The message."),
    identity: str | None = typer.Option(
        None,
        "--identity",
        help="The identity to send it to (id or DID; default: this home's identity).",
        show_default=False,
    ),
    sender: str = typer.Option("cli", "--sender", help="Who the message says it is from."),
    as_json: bool = JSON_OPTION,
    home: Path | None = HOME_OPTION,
    base_url: str | None = BASE_URL_OPTION,
) -> None:
    """Send a message to an identity; its idle runtimes wake to read it."""
    target = identity_or_home(identity, require_profile(home_dir(home)))
    message, _ = ask(home, base_url, lambda client: client.inbox_send(target, body, sender=sender))
    if as_json:
        print_json(message)
        return
    woke = f", woke {', '.join(message.woke_runtimes)}" if message.woke_runtimes else ""
    output.print(f"sent {message.id} to {message.identity_id}{woke}", markup=False)


@app.command("list")
def list_messages(  # noqa: PLR0917 - typer reads options from the signature
    identity: str | None = IDENTITY_OPTION,
    status: str | None = typer.Option(
        None, "--status", help="Only messages in this status (e.g. pending).", show_default=False
    ),
    limit: int = LIMIT_OPTION,
    as_json: bool = JSON_OPTION,
    home: Path | None = HOME_OPTION,
    base_url: str | None = BASE_URL_OPTION,
) -> None:
    """List an identity's messages, newest first."""
    client, profile = client_for(home_dir(home), base_url)
    target = identity_or_home(identity, profile)
    with client:
        try:
            found = gather(
                lambda cursor, size: client.inbox(target, status=status, cursor=cursor, limit=size),
                limit,
            )
        except (HearthError, httpx2.HTTPError) as exc:
            http_failure(exc)
    if as_json:
        print_json(found)
        return
    table = Table(title=f"Inbox of {target}")
    for column in ("id", "status", "sender", "created_at", "body"):
        table.add_column(column, overflow="fold")
    for message in found:
        table.add_row(
            escape(message.id),
            message.status,
            escape(message.sender),
            message.created_at,
            escape(message.body),
        )
    print_table(table)
