"""``hearth strands``: an identity's strands of thought: create, list, show.

Thoughts themselves are sealed under the identity's master key; a runtime writes and reads
them (``hearth runtime``), so this lists the strands and where each stands (``next_seq``).
"""

from __future__ import annotations

from pathlib import Path

import httpx2
import typer
from rich.markup import escape
from rich.table import Table

from hearth.client import HearthError
from hearth.client.runtimes import Strand

from .client_config import (
    BASE_URL_OPTION,
    HOME_OPTION,
    IDENTITY_OPTION,
    JSON_OPTION,
    LIMIT_OPTION,
    client_for,
    gather,
    home_dir,
    http_failure,
    identity_or_home,
    output,
    print_json,
    print_table,
)

app = typer.Typer(
    help="Create, list and show an identity's strands of thought.", no_args_is_help=True
)


def _line(strand: Strand) -> str:
    runtime = f", runtime {strand.runtime_id}" if strand.runtime_id else ""
    return f"strand {strand.id} {strand.name!r} (next seq {strand.next_seq}{runtime})"


@app.command("create")
def create(  # noqa: PLR0917 - typer reads options from the signature
    name: str = typer.Argument(..., help="The strand's name."),
    identity: str | None = IDENTITY_OPTION,
    runtime: str | None = typer.Option(
        None, "--runtime", help="Bind it to this runtime of the identity.", show_default=False
    ),
    as_json: bool = JSON_OPTION,
    home: Path | None = HOME_OPTION,
    base_url: str | None = BASE_URL_OPTION,
) -> None:
    """Create a strand of an identity (its thoughts count as the runtime's, with --runtime)."""
    client, profile = client_for(home_dir(home), base_url)
    with client:
        try:
            strand = client.strand_create(
                identity_or_home(identity, profile), name, runtime_id=runtime
            )
        except (HearthError, httpx2.HTTPError) as exc:
            http_failure(exc)
    if as_json:
        print_json(strand)
        return
    output.print(_line(strand), markup=False)


@app.command("show")
def show(
    strand_id: str = typer.Argument(..., help="The strand's id."),
    as_json: bool = JSON_OPTION,
    home: Path | None = HOME_OPTION,
    base_url: str | None = BASE_URL_OPTION,
) -> None:
    """A strand, with the seq its next thought must carry."""
    client, _profile = client_for(home_dir(home), base_url)
    with client:
        try:
            strand = client.strand(strand_id)
        except (HearthError, httpx2.HTTPError) as exc:
            http_failure(exc)
    if as_json:
        print_json(strand)
        return
    output.print(_line(strand), markup=False)


@app.command("list")
def list_strands(  # noqa: PLR0917 - typer reads options from the signature
    identity: str | None = typer.Option(
        None, "--identity", help="Only this identity's strands.", show_default=False
    ),
    runtime: str | None = typer.Option(
        None, "--runtime", help="Only this runtime's strands.", show_default=False
    ),
    limit: int = LIMIT_OPTION,
    as_json: bool = JSON_OPTION,
    home: Path | None = HOME_OPTION,
    base_url: str | None = BASE_URL_OPTION,
) -> None:
    """List the project's strands, newest first."""
    client, profile = client_for(home_dir(home), base_url)
    with client:
        try:
            found = gather(
                lambda cursor, size: client.strands(
                    identity_id=identity, runtime_id=runtime, cursor=cursor, limit=size
                ),
                limit,
            )
        except (HearthError, httpx2.HTTPError) as exc:
            http_failure(exc)
    if as_json:
        print_json(found)
        return
    table = Table(title=f"Strands of project {profile.project_id}")
    for column in ("id", "name", "identity", "runtime", "next_seq", "created_at"):
        table.add_column(column, overflow="fold")
    for strand in found:
        table.add_row(
            escape(strand.id),
            escape(strand.name),
            escape(strand.identity_id or ""),
            escape(strand.runtime_id or ""),
            str(strand.next_seq),
            strand.created_at,
        )
    print_table(table)
