"""``hearth adds grant``: wrap an object's content key to a reader in a signed grant, from a
content key file or (a re-grant) from a grant received with 'delegate'."""

from __future__ import annotations

import uuid
from pathlib import Path

import typer

from hearth.adds import AddsError, OpenError, check_delegation, issue_grant, unwrap_grant, validate

from .files import check_writable, emit, read
from .inputs import (
    current_time,
    ed25519_key,
    expiry_time,
    parse_document,
    parse_rights,
    x25519_key,
    x25519_public,
    x25519_public_from_pem,
)
from .node import bearer_for, submit_document
from .options import (
    BEARER_OPTION,
    DEFAULT_EXPIRY,
    FORCE_OPTION,
    NOW_OPTION,
    SUBMIT_ALIAS,
    node_option,
    node_url,
    out_option,
)
from .publish import read_content_key
from .report import fail, note, problems_text, usage

__all__ = ["grant_command"]


def grant_command(
    manifest: str = typer.Argument(..., help="The manifest file ('-' for standard input)."),
    *,
    key: Path = typer.Option(
        ..., "--key", "-k", help="The issuer's Ed25519 private key (PKCS#8 PEM)."
    ),
    issuer_id: str | None = typer.Option(
        None,
        "--issuer-id",
        help="The issuer's id (with --from-grant: default that grant's audience).",
        show_default=False,
    ),
    audience: str = typer.Option(..., "--audience", help="The reader's id."),
    audience_key: str | None = typer.Option(
        None,
        "--audience-key",
        help="The reader's X25519 public key (base64url or base64).",
        show_default=False,
    ),
    audience_key_file: Path | None = typer.Option(
        None,
        "--audience-key-file",
        help="The reader's X25519 key as PEM (public, or private: its public half is used).",
        show_default=False,
    ),
    rights: str = typer.Option(
        "read", "--rights", help="Comma-separated: read, derive, replicate, delegate."
    ),
    expires_in: str | None = typer.Option(
        None,
        "--expires-in",
        help=f"Lifetime, e.g. 12h, 30d (default {DEFAULT_EXPIRY}).",
        show_default=False,
    ),
    expires_at: int | None = typer.Option(
        None, "--expires-at", help="Expiry, epoch seconds.", show_default=False
    ),
    not_before: int | None = typer.Option(
        None, "--not-before", help="Usable from, epoch seconds.", show_default=False
    ),
    purpose: str | None = typer.Option(None, "--purpose", show_default=False),
    task_id: str | None = typer.Option(None, "--task-id", show_default=False),
    grant_id: str | None = typer.Option(
        None, "--grant-id", help="Default: a random UUID.", show_default=False
    ),
    content_key: Path | None = typer.Option(
        None,
        "--content-key",
        help="The content key file `publish --content-key-out` wrote.",
        show_default=False,
    ),
    from_grant: Path | None = typer.Option(
        None,
        "--from-grant",
        help="Re-grant: unwrap the key from this grant (it must list 'delegate').",
        show_default=False,
    ),
    box_key: Path | None = typer.Option(
        None,
        "--box-key",
        help="With --from-grant: your X25519 private key (PEM), that grant's audience key.",
        show_default=False,
    ),
    parent_grant: list[Path] | None = typer.Option(
        None,
        "--parent-grant",
        help="With --from-grant: the ancestors of that grant, when it is itself delegated.",
        show_default=False,
    ),
    now: int | None = NOW_OPTION,
    out: Path | None = out_option("grant"),
    force: bool = FORCE_OPTION,
    node: str | None = node_option("grant"),
    submit_alias: str | None = SUBMIT_ALIAS,
    bearer_file: Path | None = BEARER_OPTION,
) -> None:
    """Give a reader an object's content key, wrapped to their X25519 key, in a signed grant.

    The key comes from --content-key, or from a grant you received (--from-grant with --box-key):
    that re-grant names it as parent_grant, and is refused unless it lists 'delegate', you are
    its audience, the rights are among its rights and it expires no later. A reader opens a
    re-grant with `open --parent-grant` and the grant it came from. The grant's CID is printed
    on stderr.
    """
    submit = node_url(node, submit_alias)
    if (content_key is None) == (from_grant is None):
        usage("give the content key: either --content-key FILE or --from-grant GRANT")
    if from_grant is not None and box_key is None:
        usage("--from-grant needs --box-key: the X25519 private key that grant was made for")
    if from_grant is None and (box_key is not None or parent_grant):
        usage("--box-key and --parent-grant go with --from-grant")
    if (audience_key is None) == (audience_key_file is None):
        usage("give the reader's key: either --audience-key B64 or --audience-key-file PEM")
    if issuer_id is None and from_grant is None:
        usage("--issuer-id is required (it defaults to the parent's audience with --from-grant)")
    grant_rights = parse_rights(rights)
    moment = current_time(now)
    explicit_expiry = expires_in is not None or expires_at is not None
    expiry = expiry_time(moment, expires_in, expires_at)
    if out is not None and str(out) != "-":
        check_writable(out, force)
    if audience_key is not None:
        reader = x25519_public(audience_key, "--audience-key")
    else:
        assert audience_key_file is not None
        reader = x25519_public_from_pem(audience_key_file)
    signing = ed25519_key(key)
    bearer = bearer_for(submit, bearer_file) if submit is not None else None
    manifest_bytes = read(manifest, "manifest")
    parse_document(manifest_bytes, "manifest", manifest)
    manifest_cid = validate(manifest_bytes).cid

    parent_cid: str | None = None
    if content_key is not None:
        secret, written_for = read_content_key(content_key)
        if written_for is not None and written_for != manifest_cid:
            fail(f"{content_key} holds the key of manifest {written_for}, not {manifest_cid}")
    else:
        assert from_grant is not None
        assert box_key is not None
        parent_bytes = read(from_grant, "grant")
        parent = parse_document(parent_bytes, "grant", str(from_grant))
        parent_cid = validate(parent_bytes).cid
        if "delegate" not in parent["rights"]:
            fail(f"{from_grant} does not list 'delegate': its audience may not grant it onward")
        if issuer_id is None:
            issuer_id = str(parent["audience"])
        elif issuer_id != parent["audience"]:
            fail(
                f"--issuer-id {issuer_id!r} is not the audience of {from_grant} "
                f"({parent['audience']!r}): only its audience may re-grant it"
            )
        extra = sorted({str(r) for r in grant_rights} - set(parent["rights"]))
        if extra:
            fail(f"{from_grant} does not hold these rights to pass on: {', '.join(extra)}")
        if expiry > parent["expires_at"]:
            if explicit_expiry:
                fail(f"a re-grant expires no later than {from_grant} ({parent['expires_at']})")
            expiry = parent["expires_at"]
            note(f"the grant expires with {from_grant}, at {expiry}")
        ancestors = [read(path, "parent grant") for path in parent_grant or []]
        try:
            secret = unwrap_grant(
                parent_bytes, manifest_bytes, x25519_key(box_key), now=moment, parents=ancestors
            )
        except OpenError as exc:
            fail(f"cannot unwrap the key from {from_grant}: {exc.code}: {exc.message}")
    assert issuer_id is not None
    try:
        grant = issue_grant(
            manifest=manifest_bytes,
            content_key=secret,
            key=signing,
            issuer_id=issuer_id,
            grant_id=grant_id or str(uuid.uuid4()),
            audience=audience,
            audience_x25519_public_key=reader,
            rights=grant_rights,
            issued_at=moment,
            expires_at=expiry,
            not_before=not_before,
            parent_grant=parent_cid,
            task_id=task_id,
            purpose=purpose,
        )
    except AddsError as exc:
        fail(f"cannot grant: {problems_text(exc.problems)}")
    if from_grant is not None:
        problems = check_delegation(grant, read(from_grant, "grant"))
        if problems:
            fail(f"the re-grant would not hold: {problems_text(problems)}")
    emit(grant.canonical, out, force=force)
    note(f"grant_cid: {grant.cid}")
    if submit is not None:
        submit_document(grant, "grant", submit, bearer)
