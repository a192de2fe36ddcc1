"""``hearth adds head new`` and ``head resolve``: the next head of a (key, head_id) history, and
the current head of each history, forks reported (exit 3)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from hearth.adds import AddsError, b64url_encode, next_head, resolve_heads
from hearth.cli.key_text import decode_key

from .files import check_writable, emit, read
from .inputs import current_time, ed25519_key, is_cid
from .node import ask, bearer_for, submit_document
from .options import (
    BEARER_OPTION,
    FORCE_OPTION,
    NOW_OPTION,
    SUBMIT_ALIAS,
    node_option,
    node_url,
    out_option,
)
from .report import fail, note, problems_text, usage

if TYPE_CHECKING:
    from hearth.client.adds import AddsClient

__all__ = ["head_new_command", "head_resolve_command"]


def head_new_command(
    *,
    key: Path = typer.Option(
        ..., "--key", "-k", help="The issuer's Ed25519 private key (PKCS#8 PEM)."
    ),
    issuer_id: str = typer.Option(..., "--issuer-id", help="The issuer's id."),
    head_id: str = typer.Option(..., "--head-id", help="The name of the head."),
    manifest: str = typer.Option(..., "--manifest", help="The CID of the manifest it points to."),
    previous: list[Path] | None = typer.Option(
        None,
        "--previous",
        help="Earlier heads of this history (files); repeat. With none and no --from: the "
        "first head, sequence 0.",
        show_default=False,
    ),
    from_url: str | None = typer.Option(
        None,
        "--from",
        help="Read the current head (or every fork candidate) from this provider node.",
        show_default=False,
    ),
    now: int | None = NOW_OPTION,
    out: Path | None = out_option("head"),
    force: bool = FORCE_OPTION,
    node: str | None = node_option("head"),
    submit_alias: str | None = SUBMIT_ALIAS,
    bearer_file: Path | None = BEARER_OPTION,
) -> None:
    """Sign the next head of the history (your key, --head-id), pointing at --manifest.

    Its sequence is one above the highest of the previous heads given, and its parents are the
    current head, or every candidate of a fork (so this head merges it). Anything given in
    --previous that is not a valid head is refused: a history read in part could reuse a
    sequence. The head's CID and sequence are printed on stderr.
    """
    submit = node_url(node, submit_alias)
    if not is_cid(manifest):
        usage(f"--manifest {manifest!r} is not an ADDS CID")
    if out is not None and str(out) != "-":
        check_writable(out, force)
    signing = ed25519_key(key)
    documents = [read(path, "head") for path in previous or []]
    if from_url is not None:
        issuer_key = b64url_encode(signing.public_key().public_bytes_raw())

        def history(node: AddsClient) -> list[bytes]:
            resolution = node.head(head_id, issuer_key)
            if resolution is None:
                return []
            return [node.document(str(candidate["cid"])) for candidate in resolution["candidates"]]

        documents += ask(
            from_url,
            bearer_for(from_url, bearer_file),
            history,
            f"cannot read the head history from {from_url}: ",
            also=(KeyError, TypeError),
        )
    try:
        head = next_head(
            key=signing,
            issuer_id=issuer_id,
            head_id=head_id,
            manifest_cid=manifest,
            previous=documents,
            updated_at=current_time(now),
        )
    except AddsError as exc:
        fail(f"cannot continue the history: {problems_text(exc.problems)}")
    emit(head.canonical, out, force=force)
    parents = head.document["parents"]
    merged = f", merging {len(parents)} fork candidates" if len(parents) > 1 else ""
    note(f"head_cid: {head.cid} (sequence {head.document['sequence']}{merged})")
    if submit is not None:
        submit_document(head, "head", submit, bearer_for(submit, bearer_file))


def head_resolve_command(
    files: list[str] | None = typer.Argument(
        None, help="Head documents (files; '-' for standard input).", show_default=False
    ),
    from_url: str | None = typer.Option(
        None,
        "--from",
        help="Ask this provider node instead (needs --head-id and --issuer-key).",
        show_default=False,
    ),
    head_id: str | None = typer.Option(
        None, "--head-id", help="Only this head_id.", show_default=False
    ),
    issuer_key: str | None = typer.Option(
        None,
        "--issuer-key",
        help="Only heads signed by this Ed25519 public key (base64url or base64).",
        show_default=False,
    ),
    bearer_file: Path | None = BEARER_OPTION,
) -> None:
    """Print, as JSON, the current head of each history (issuer key, head_id) found.

    Output: {"resolutions": [...], "rejected": [...]}: each resolution has current (null when
    forked), forked, candidates, history_forks and missing_parents; rejected lists inputs that
    are not valid heads. Exit 0 resolved; 3 when a history is forked (every candidate is
    listed, none is chosen); 1 when no valid head was found.
    """
    names = list(files or [])
    key_bytes: bytes | None = None
    if issuer_key is not None:
        try:
            key_bytes = decode_key(issuer_key, what="--issuer-key")
        except ValueError as exc:
            usage(f"{exc} (a 32-byte Ed25519 public key)")
        # A node is asked in ADDS's spelling, whichever alphabet the key was typed in.
        issuer_key = b64url_encode(key_bytes)
    if from_url is not None:
        if names:
            usage("give head files or --from URL, not both")
        if head_id is None or issuer_key is None:
            usage("--from needs --head-id and --issuer-key: the node resolves one history")
        wanted = (head_id, issuer_key)  # both narrowed to str, for the call below
        resolution = ask(from_url, bearer_for(from_url, bearer_file), lambda n: n.head(*wanted))
        report: dict[str, Any] = {
            "resolutions": [] if resolution is None else [resolution],
            "rejected": [],
        }
    else:
        if not names:
            usage("give head files to resolve, or --from URL")
        documents = [read(name, "head") for name in names]
        report = resolve_heads(documents, head_id=head_id, issuer_key=key_bytes).as_json()
        for rejected in report["rejected"]:
            codes = ", ".join(p["code"] for p in rejected["problems"])
            note(f"not a valid head: {names[rejected['index']]} ({codes})")
    typer.echo(json.dumps(report, indent=2, ensure_ascii=False))
    if not report["resolutions"]:
        fail("no valid head found")
    forked = [r for r in report["resolutions"] if r["forked"]]
    for resolution in forked:
        note(
            f"forked: {resolution['head_id']} of {resolution['issuer_id']} has "
            f"{len(resolution['candidates'])} heads at sequence {resolution['sequence']}"
        )
    if forked:
        raise typer.Exit(3)
