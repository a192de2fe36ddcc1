"""``hearth strands``: an identity's strands of thought: create, list, show; write and read
thoughts.

Thoughts are sealed on this machine under the identity's strand master key and signed with its
root key, both opened from the home's sealed key file (the passphrase); the service keeps only
the sealed bytes. ``thoughts`` opens them here and prints them: they are the identity's own,
and the user asked for them.
"""

from __future__ import annotations

from pathlib import Path

import httpx2
import typer
from rich.markup import escape
from rich.table import Table

from hearth.client import HearthError, ThoughtOpenError
from hearth.client.runtimes import MAX_THOUGHT_PAGE, Strand, Thought

from .client_config import (
    BASE_URL_OPTION,
    HOME_OPTION,
    IDENTITY_OPTION,
    JSON_OPTION,
    LIMIT_OPTION,
    PASSPHRASE_FILE_OPTION,
    ask,
    client_for,
    failure,
    gather,
    home_dir,
    http_failure,
    identity_or_home,
    open_home_keys,
    output,
    print_json,
    print_table,
    require_profile,
)

app = typer.Typer(
    help="Create, list and show an identity's strands of thought; write and read thoughts.",
    no_args_is_help=True,
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
    owner = identity_or_home(identity, require_profile(home_dir(home)))
    strand, _ = ask(
        home, base_url, lambda client: client.strand_create(owner, name, runtime_id=runtime)
    )
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
    strand, _profile = ask(home, base_url, lambda client: client.strand(strand_id))
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
    found, profile = ask(
        home,
        base_url,
        lambda client: gather(
            lambda cursor, size: client.strands(
                identity_id=identity, runtime_id=runtime, cursor=cursor, limit=size
            ),
            limit,
        ),
    )
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


@app.command("write")
def write(  # noqa: PLR0917 - typer reads options from the signature
    strand_id: str = typer.Argument(..., help="The strand's id (of this home's identity)."),
    text: str = typer.Argument(..., help="The thought."),
    as_json: bool = JSON_OPTION,
    home: Path | None = HOME_OPTION,
    base_url: str | None = BASE_URL_OPTION,
    passphrase_file: Path | None = PASSPHRASE_FILE_OPTION,
) -> None:
    """Seal a thought here and write it to the strand, signed with the root key."""
    home_path = home_dir(home)
    client, profile = client_for(home_path, base_url)
    keys = open_home_keys(home_path, profile, passphrase_file)
    with client:
        try:
            written = client.thought_write(
                strand_id,
                text.encode("utf-8"),
                k_master=keys.strand_master,
                signing_key=keys.signing,
            )
        except (HearthError, httpx2.HTTPError) as exc:
            http_failure(exc)
    if as_json:
        print_json(written)
        return
    output.print(f"thought {written.id} at seq {written.seq} of {written.strand_id}", markup=False)


def _thought(thought: Thought) -> dict[str, object]:
    """A thought as printed: opened, never its sealed bytes."""
    plaintext = thought.plaintext or b""
    return {
        "id": thought.id,
        "seq": thought.seq,
        "runtime_id": thought.runtime_id,
        "signing_key_id": thought.signing_key_id,
        "created_at": thought.created_at,
        "text": plaintext.decode("utf-8", errors="replace"),
    }


@app.command("thoughts")
def thoughts(  # noqa: PLR0917 - typer reads options from the signature
    strand_id: str = typer.Argument(..., help="The strand's id (of this home's identity)."),
    after_seq: int = typer.Option(0, "--after-seq", min=0, help="Only thoughts after this seq."),
    limit: int = typer.Option(50, "--limit", min=1, max=1000, help="How many at most."),
    as_json: bool = JSON_OPTION,
    home: Path | None = HOME_OPTION,
    base_url: str | None = BASE_URL_OPTION,
    passphrase_file: Path | None = PASSPHRASE_FILE_OPTION,
) -> None:
    """Read a strand's thoughts in seq order, opened on this machine."""
    home_path = home_dir(home)
    client, profile = client_for(home_path, base_url)
    keys = open_home_keys(home_path, profile, passphrase_file)
    found: list[Thought] = []
    after: int | None = after_seq
    with client:
        try:
            while after is not None and len(found) < limit:
                page = client.thoughts(
                    strand_id,
                    k_master=keys.strand_master,
                    after_seq=after,
                    limit=min(limit - len(found), MAX_THOUGHT_PAGE),
                )
                found += page.items
                after = page.next_after_seq
        except ThoughtOpenError:
            failure("a thought of this strand does not open with this home's keys")
        except (HearthError, httpx2.HTTPError) as exc:
            http_failure(exc)
    if as_json:
        print_json([_thought(thought) for thought in found])
        return
    table = Table(title=f"Thoughts of strand {strand_id}")
    for column in ("seq", "created_at", "text"):
        table.add_column(column, overflow="fold")
    for thought in found:
        shown = _thought(thought)
        table.add_row(str(thought.seq), thought.created_at, escape(str(shown["text"])))
    print_table(table)
