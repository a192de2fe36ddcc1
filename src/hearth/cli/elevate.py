"""``hearth elevate``: raise an identity from Level 0 to Level 1 on a sponsor's statement.

The statement comes from ``hearth attestations sign`` in the sponsor's home. When it is about
this home's identity, the request carries that identity's root proof (its root key, opened
from the home with the passphrase), as the service requires of an ``agent_root`` identity.
This is the identity's elevation; ``hearth memory elevate`` raises a memory's tier.
"""

from __future__ import annotations

from pathlib import Path

import httpx2
import typer

from hearth.client import HearthError

from .attestations import read_statement
from .client_config import (
    BASE_URL_OPTION,
    HOME_OPTION,
    JSON_OPTION,
    PASSPHRASE_FILE_OPTION,
    client_for,
    home_dir,
    http_failure,
    open_root_key,
    output,
    print_json,
)


def elevate(
    statement: str = typer.Argument(
        ..., help="The sponsor's statement JSON file ('-': standard input)."
    ),
    as_json: bool = JSON_OPTION,
    home: Path | None = HOME_OPTION,
    base_url: str | None = BASE_URL_OPTION,
    passphrase_file: Path | None = PASSPHRASE_FILE_OPTION,
) -> None:
    """Elevate an identity to Level 1 on a sponsor's statement (`hearth attestations sign`)."""
    body = read_statement(statement)
    home_path = home_dir(home)
    client, profile = client_for(home_path, base_url)
    root_key = None
    if body["agent_id"] == profile.identity_id:
        root_key = open_root_key(home_path, profile, passphrase_file)
    with client:
        try:
            elevation = client.elevate(body, root_key=root_key)
        except (HearthError, httpx2.HTTPError) as exc:
            http_failure(exc)
    if as_json:
        print_json(elevation)
        return
    output.print(
        f"elevated {elevation.agent_id} to Level {elevation.level}, sponsored by "
        f"{elevation.sponsor_did}; wallet {elevation.wallet.id} holds {elevation.wallet.balance}",
        markup=False,
    )
