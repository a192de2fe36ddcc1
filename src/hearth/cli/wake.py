"""``hearth wake``: the wake of this home's project, printed as the service renders it."""

from __future__ import annotations

import json
from pathlib import Path

import httpx2
import typer

from hearth.client import HearthError
from hearth.client.wake import TEXT_FORMATS, WAKE_FORMATS

from .client_config import (
    BASE_URL_OPTION,
    HOME_OPTION,
    client_for,
    home_dir,
    http_failure,
    usage_error,
)


def wake(  # noqa: PLR0917 - typer reads options from the signature
    format: str = typer.Option(
        "json", "--format", help="json (default), md, math, anthropic or openai."
    ),
    identity: str | None = typer.Option(
        None,
        "--identity",
        help="The focal identity (id or DID; default: this home's identity).",
        show_default=False,
    ),
    refresh: bool = typer.Option(
        False, "--refresh", help="Build the wake anew instead of the service's cached one."
    ),
    as_of: str | None = typer.Option(
        None,
        "--as-of",
        help="Remember as at this time (RFC 3339 with a zone); the rest of the wake is now.",
    ),
    as_json: bool = typer.Option(
        False, "--json", help="Print the JSON document (the same as --format json)."
    ),
    home: Path | None = HOME_OPTION,
    base_url: str | None = BASE_URL_OPTION,
) -> None:
    """Print the wake: Markdown and math as they are, JSON documents indented."""
    if as_json and format != "json":
        usage_error("--json prints the JSON document; it does not go with --format " + format)
    if format not in WAKE_FORMATS:
        usage_error(f"--format is one of {', '.join(WAKE_FORMATS)}")
    client, profile = client_for(home_dir(home), base_url)
    with client:
        try:
            document = client.wake(
                format,
                identity_id=identity or profile.identity_id,
                refresh=refresh,
                as_of=as_of,
            )
        except (HearthError, httpx2.HTTPError) as exc:
            http_failure(exc)
    if format in TEXT_FORMATS:
        assert isinstance(document, str)
        # As is: the Markdown already ends with its own newline.
        typer.echo(document, nl=not document.endswith("\n"))
        return
    typer.echo(json.dumps(document, indent=2, ensure_ascii=False))
