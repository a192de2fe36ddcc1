"""``hearth memory``: store, list, search and elevate memories, walk a memory's history, confirm
an untrusted one; witness another identity's memory."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import httpx2
import typer
from rich.markup import escape
from rich.table import Table

from hearth.adds import AddsError
from hearth.adds.keys import load_ed25519_private_key
from hearth.client import HearthError
from hearth.client.memories import Memory, attest_memory
from hearth.proofs import did_key_for_ed25519

from .client_config import (
    BASE_URL_OPTION,
    HOME_OPTION,
    PASSPHRASE_FILE_OPTION,
    ask,
    client_for,
    gather,
    home_dir,
    http_failure,
    open_root_key,
    output,
    print_table,
    require_profile,
    usage_error,
)
from .files import read_input

app = typer.Typer(
    help="Store, list, search and elevate memories; sign a witness attestation.",
    no_args_is_help=True,
)

TIERS = ("episodic", "foundational")
ELEVATED = ("foundational", "constitutive")


def _print_memory(memory: Memory, as_json: bool) -> None:
    if as_json:
        typer.echo(json.dumps(asdict(memory), indent=2))
        return
    scope = memory.agent_id or "project"
    output.print(f"memory {memory.id} ({memory.tier}, {scope})", markup=False)


def _content(text: str | None, file: str | None) -> str:
    if (text is None) == (file is None):
        usage_error("give the content as an argument or with --file (one of the two)")
    if text is not None:
        return text
    assert file is not None
    try:
        return read_input(file).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        usage_error(f"cannot read {file}: {exc}")


@app.command("add")
def add(  # noqa: PLR0917 - typer reads options from the signature
    content: str | None = typer.Argument(None, help="The memory's text."),
    file: str | None = typer.Option(
        None, "--file", "-f", help="Read the text from this file ('-': standard input)."
    ),
    tier: str = typer.Option(
        "episodic", "--tier", help="episodic, or foundational (needs the root key)."
    ),
    key: str | None = typer.Option(None, "--key", help="A label for finding it again."),
    supersedes: str | None = typer.Option(
        None,
        "--supersedes",
        help="The id of the memory this one replaces (the newest version of its chain).",
    ),
    untrusted: bool = typer.Option(
        False,
        "--untrusted",
        help="The text came from outside the project: kept out of the wake until confirmed.",
    ),
    project_level: bool = typer.Option(
        False, "--project-level", help="Do not bind it to this home's identity."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the stored memory as JSON."),
    home: Path | None = HOME_OPTION,
    base_url: str | None = BASE_URL_OPTION,
    passphrase_file: Path | None = PASSPHRASE_FILE_OPTION,
) -> None:
    """Store a memory of this home's identity (or of the project, with --project-level); with
    --supersedes, as the next version of that memory."""
    if tier not in TIERS:
        usage_error("--tier is episodic or foundational (constitutive comes by elevation)")
    text = _content(content, file)
    home_path = home_dir(home)
    client, profile = client_for(home_path, base_url)
    agent_id = None if project_level else profile.identity_id
    with client:
        try:
            # The root key signs a foundational memory of this identity, and a new version of
            # one of its elevated memories (replacing it unmakes part of the identity).
            needs_root = tier == "foundational" or (
                supersedes is not None and client.memory(supersedes).tier != "episodic"
            )
            root_key = None
            if needs_root and agent_id is not None:
                root_key = open_root_key(home_path, profile, passphrase_file)
            memory = client.memory_store(
                text,
                tier=tier,
                agent_id=agent_id,
                key=key,
                supersedes=supersedes,
                untrusted=untrusted,
                root_key=root_key,
            )
        except (HearthError, httpx2.HTTPError) as exc:
            http_failure(exc)
    _print_memory(memory, as_json)


@app.command("history")
def history(
    memory_id: str = typer.Argument(..., help="The id of any version of the memory."),
    as_json: bool = typer.Option(False, "--json", help="One JSON array instead of a table."),
    home: Path | None = HOME_OPTION,
    base_url: str | None = BASE_URL_OPTION,
) -> None:
    """Show every version of a memory's chain, oldest first (a deleted one without content)."""
    client, _profile = client_for(home_dir(home), base_url)
    with client:
        try:
            chain = client.memory_history(memory_id)
        except (HearthError, httpx2.HTTPError) as exc:
            http_failure(exc)
    if as_json:
        typer.echo(json.dumps([asdict(memory) for memory in chain], indent=2))
        return
    table = Table(title=f"History of memory {memory_id}")
    for column in ("id", "tier", "created_at", "until", "content"):
        table.add_column(column, overflow="fold")
    for memory in chain:
        until = memory.superseded_at or ""
        if memory.deleted_at is not None:
            until = f"deleted {memory.deleted_at}"
        table.add_row(
            escape(memory.id),
            memory.tier,
            memory.created_at,
            until,
            escape(_preview(memory.content)),
        )
    print_table(table)


@app.command("confirm")
def confirm(
    memory_id: str = typer.Argument(..., help="The id of the untrusted memory."),
    as_json: bool = typer.Option(False, "--json", help="Print the confirmed memory as JSON."),
    home: Path | None = HOME_OPTION,
    base_url: str | None = BASE_URL_OPTION,
) -> None:
    """Confirm an untrusted memory: you vouch for its text, and it joins the wake."""
    client, _profile = client_for(home_dir(home), base_url)
    with client:
        try:
            memory = client.memory_confirm(memory_id)
        except (HearthError, httpx2.HTTPError) as exc:
            http_failure(exc)
    _print_memory(memory, as_json)


def _preview(text: str) -> str:
    return text if len(text) <= 60 else text[:59] + "…"


@app.command("list")
def list_memories(  # noqa: PLR0917 - typer reads options from the signature
    tier: str | None = typer.Option(None, "--tier", help="Only this tier."),
    key: str | None = typer.Option(None, "--key", help="Only this label."),
    mine: bool = typer.Option(False, "--mine", help="Only this home's identity's memories."),
    channel: str | None = typer.Option(
        None, "--channel", help="Only those written through this channel (api, runtime, ...)."
    ),
    untrusted: bool = typer.Option(
        False, "--untrusted", help="The untrusted memories waiting for a confirmation instead."
    ),
    as_of: str | None = typer.Option(
        None, "--as-of", help="As they stood at this time (RFC 3339 with a zone)."
    ),
    limit: int = typer.Option(50, "--limit", min=1, max=1000, help="How many, newest first."),
    as_json: bool = typer.Option(False, "--json", help="One JSON array instead of a table."),
    home: Path | None = HOME_OPTION,
    base_url: str | None = BASE_URL_OPTION,
) -> None:
    """List the project's memories, newest first, with their decay weight."""
    client, profile = client_for(home_dir(home), base_url)
    found: list[Memory] = []
    cursor = None
    with client:
        try:
            while len(found) < limit:
                page = client.memories(
                    tier=tier,
                    key=key,
                    agent_id=profile.identity_id if mine else None,
                    channel=channel,
                    untrusted=untrusted,
                    as_of=as_of,
                    cursor=cursor,
                    limit=min(limit - len(found), 200),
                )
                found += page.items
                cursor = page.next_cursor
                if cursor is None:
                    break
        except (HearthError, httpx2.HTTPError) as exc:
            http_failure(exc)
    if as_json:
        typer.echo(json.dumps([asdict(memory) for memory in found], indent=2))
        return
    table = Table(title=f"Memories of project {profile.project_id}")
    for column in ("id", "tier", "key", "weight", "created_at", "content"):
        table.add_column(column, overflow="fold")
    for memory in found:
        preview = _preview(memory.content)
        table.add_row(
            escape(memory.id),
            memory.tier,
            escape(memory.key or ""),
            f"{memory.weight:.2f}" + ("" if memory.in_wake else " (faded)"),
            memory.created_at,
            escape(preview),
        )
    print_table(table)


@app.command("search")
def search(  # noqa: PLR0917 - typer reads options from the signature
    query: str = typer.Argument(
        ..., help='Words, "quoted phrases" and prefixes (term*), as one argument.'
    ),
    tier: str | None = typer.Option(None, "--tier", help="Only this tier."),
    key: str | None = typer.Option(None, "--key", help="Only this label."),
    mine: bool = typer.Option(False, "--mine", help="Only this home's identity's memories."),
    since: str | None = typer.Option(None, "--since", help="Only stored at or after (RFC 3339)."),
    until: str | None = typer.Option(None, "--until", help="Only stored before (RFC 3339)."),
    as_of: str | None = typer.Option(
        None, "--as-of", help="Among the memories as they stood then (RFC 3339 with a zone)."
    ),
    limit: int = typer.Option(10, "--limit", min=1, max=200, help="How many, best first."),
    as_json: bool = typer.Option(False, "--json", help="One JSON array instead of a table."),
    home: Path | None = HOME_OPTION,
    base_url: str | None = BASE_URL_OPTION,
) -> None:
    """Search the project's memories, best first (docs/memory.md: the query and the ranking)."""
    mine_only = require_profile(home_dir(home)).identity_id if mine else None
    found, profile = ask(
        home,
        base_url,
        lambda client: gather(
            lambda cursor, size: client.memory_search(
                query,
                identity_id=mine_only,
                tier=tier,
                key=key,
                since=since,
                until=until,
                as_of=as_of,
                cursor=cursor,
                limit=min(size, 50),  # the search's page cap
            ),
            limit,
        ),
    )
    if as_json:
        typer.echo(json.dumps([asdict(hit) for hit in found], indent=2))
        return
    table = Table(title=f"Memories of project {profile.project_id} matching {query!r}")
    for column in ("id", "tier", "key", "score", "snippet"):
        table.add_column(column, overflow="fold")
    for hit in found:
        marker = "" if hit.all_terms else " (some terms)"
        if hit.similarity is not None:
            marker += f" (meaning {hit.similarity:.2f})"
        table.add_row(
            escape(hit.memory.id),
            hit.memory.tier,
            escape(hit.memory.key or ""),
            f"{hit.score:.3f}{marker}",
            escape(hit.snippet),
        )
    print_table(table)


def _attestations(paths: list[Path]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for path in paths:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            usage_error(f"cannot read the attestation {path}: {exc}")
        items = data if isinstance(data, list) else [data]
        if not all(isinstance(item, dict) for item in items):
            usage_error(f"{path} holds no attestation object")
        found += items
    return found


@app.command("elevate")
def elevate(  # noqa: PLR0917 - typer reads options from the signature
    memory_id: str = typer.Argument(..., help="The memory's id."),
    tier: str = typer.Option(..., "--tier", help="foundational or constitutive."),
    register_append: str | None = typer.Option(
        None, "--register-append", help="Text the memory adds to the expression's register."
    ),
    wall: list[str] = typer.Option(
        [], "--wall", help="A wall the memory adds to the expression (repeatable)."
    ),
    wake_text_append: str | None = typer.Option(
        None, "--wake-text-append", help="Text the memory adds to the wake text."
    ),
    attestation: list[Path] = typer.Option(
        [],
        "--attestation",
        help="A witness's attestation JSON file (see `hearth memory attest`); repeatable.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the elevated memory as JSON."),
    home: Path | None = HOME_OPTION,
    base_url: str | None = BASE_URL_OPTION,
    passphrase_file: Path | None = PASSPHRASE_FILE_OPTION,
) -> None:
    """Elevate a memory; a memory of this home's identity is signed with its root key."""
    if tier not in ELEVATED:
        usage_error("--tier is foundational or constitutive")
    patch: dict[str, Any] = {}
    if register_append:
        patch["register_append"] = register_append
    if wall:
        patch["walls_add"] = list(wall)
    if wake_text_append:
        patch["wake_text_append"] = wake_text_append
    attestations = _attestations(attestation) if attestation else None
    home_path = home_dir(home)
    client, profile = client_for(home_path, base_url)
    with client:
        try:
            bound = client.memory(memory_id).agent_id
            root_key = None
            if bound == profile.identity_id:
                root_key = open_root_key(home_path, profile, passphrase_file)
            memory = client.memory_elevate(
                memory_id,
                tier,
                expression_patch=patch or None,
                attestations=attestations,
                root_key=root_key,
            )
        except (HearthError, httpx2.HTTPError) as exc:
            http_failure(exc)
    _print_memory(memory, as_json)


@app.command("attest")
def attest(  # noqa: PLR0917 - typer reads options from the signature
    memory_id: str = typer.Argument(..., help="The id of the memory to witness."),
    key_file: Path = typer.Option(
        ..., "--key", help="The witness's Ed25519 private key (PKCS#8 PEM, unencrypted)."
    ),
    content: str | None = typer.Option(None, "--content", help="The memory's exact text."),
    file: str | None = typer.Option(
        None, "--file", "-f", help="Read the exact text from this file ('-': standard input)."
    ),
    did: str | None = typer.Option(
        None, "--did", help="The witness's DID (default: the did:key of the key)."
    ),
    kid: str = typer.Option("witness", "--kid", help="The witness's key label."),
) -> None:
    """Sign a witness attestation (memory-attestation/v1) over a memory's exact content.

    Run by the witness, never by the identity whose memory it is: the service refuses an
    identity witnessing itself. Prints the attestation JSON for `hearth memory elevate
    --attestation`."""
    text = _content(content, file)
    try:
        key = load_ed25519_private_key(key_file.read_bytes())
    except OSError as exc:
        usage_error(f"cannot read {key_file}: {exc}")
    except AddsError as exc:
        usage_error(f"{key_file}: {exc}")
    public = key.public_key().public_bytes_raw()
    attester = did or did_key_for_ed25519(public)
    signed = attest_memory(key, memory_id, text, attester, kid, include_public_key=True)
    typer.echo(json.dumps(signed, indent=2))
