"""``hearth adds publish``: encrypt a file into a block store, sign its manifest, keep the content
key (``--content-key-out``, a ``hearth-adds-content-key/v1`` file) or grant it to readers."""

from __future__ import annotations

import contextlib
import json
import os
import stat
import sys
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from hearth.adds import (
    AddsError,
    SignedDocument,
    b64url_decode,
    b64url_encode,
    content_key_id,
    issue_grant,
    publish,
)
from hearth.adds.kinds import MAX_CHUNK_SIZE
from hearth.blockstore import BlockStoreError

from .files import check_writable, emit, read, write_all, write_file
from .inputs import ed25519_key, expiry_time, is_url, parse_rights, parse_size, x25519_public
from .node import ask
from .options import (
    BEARER_OPTION,
    BLOCKS_HELP,
    DEFAULT_EXPIRY,
    FORCE_OPTION,
    QUIET_OPTION,
    out_option,
)
from .report import byte_progress, fail, note, problems_text, throughput, usage
from .stores import open_store, store_bearer, store_failure

if TYPE_CHECKING:
    from hearth.client.adds import AddsClient

__all__ = ["publish_command", "read_content_key"]

CONTENT_KEY_FORMAT = "hearth-adds-content-key/v1"


def _content_key_json(published_cid: str, content_key: bytes) -> bytes:
    record = {
        "format": CONTENT_KEY_FORMAT,
        "manifest_cid": published_cid,
        "key_id": content_key_id(content_key),
        "content_key": b64url_encode(content_key),
    }
    return (json.dumps(record, indent=2) + "\n").encode("utf-8")


def read_content_key(path: Path) -> tuple[bytes, str | None]:
    """(content key, the manifest CID it was written for) from a content key file."""
    data = read(path, "content key file")
    try:
        record = json.loads(data)
        if not isinstance(record, dict) or record.get("format") != CONTENT_KEY_FORMAT:
            raise ValueError(f"not a {CONTENT_KEY_FORMAT} file")
        key = b64url_decode(str(record["content_key"]))
        if len(key) != 32:
            raise ValueError("the key is not 32 bytes")
    except (ValueError, KeyError, UnicodeDecodeError) as exc:
        fail(f"{path} is not a content key file: {exc}")
    manifest_cid = record.get("manifest_cid")
    return key, manifest_cid if isinstance(manifest_cid, str) else None


def _grant_path(directory: Path, grant: SignedDocument) -> Path:
    return directory / f"{grant.cid}.grant.json"


def publish_command(
    file: str = typer.Argument(..., help="The file to publish ('-' for standard input)."),
    *,
    key: Path = typer.Option(
        ..., "--key", "-k", help="The publisher's Ed25519 private key (PKCS#8 PEM)."
    ),
    publisher_id: str = typer.Option(..., "--publisher-id", help="The publisher's id."),
    blocks: str = typer.Option(..., "--blocks", help=BLOCKS_HELP + " Created when missing."),
    bearer_file: Path | None = BEARER_OPTION,
    chunk_size: str = typer.Option(
        "1MiB", "--chunk-size", help="Plaintext bytes per chunk: bytes, KiB or MiB (max 16MiB)."
    ),
    object_id: str | None = typer.Option(
        None, "--object-id", help="The object's id (default: a random UUID).", show_default=False
    ),
    media_type: str | None = typer.Option(None, "--media-type", show_default=False),
    out: Path | None = out_option("manifest"),
    content_key_out: Path | None = typer.Option(
        None,
        "--content-key-out",
        help="Keep the content key in this new file (mode 0600), for later grants.",
        show_default=False,
    ),
    grant_to: list[str] | None = typer.Option(
        None,
        "--grant-to",
        help="A reader's X25519 public key (base64url or base64); repeat, each with --audience.",
        show_default=False,
    ),
    audience: list[str] | None = typer.Option(
        None, "--audience", help="The id of each --grant-to reader, in order.", show_default=False
    ),
    rights: str = typer.Option("read", "--rights", help="Rights of those grants, comma-separated."),
    expires_in: str = typer.Option(DEFAULT_EXPIRY, "--expires-in", help="Those grants' lifetime."),
    grant_dir: Path | None = typer.Option(
        None,
        "--grant-dir",
        help="Where to write the grants as CID.grant.json (default: the manifest's directory).",
        show_default=False,
    ),
    workers: int = typer.Option(
        4,
        "--workers",
        min=1,
        max=64,
        help="Threads sealing and writing chunks (more than the cores pays: each waits on its"
        " writes).",
    ),
    force: bool = FORCE_OPTION,
    quiet: bool = QUIET_OPTION,
) -> None:
    """Encrypt FILE chunk by chunk into a block store and write its signed manifest.

    A fresh content key seals the object. It must not be lost, so keep it (--content-key-out)
    or wrap it to at least one reader (--grant-to with --audience); with neither, nothing is
    done (exit 2). With a URL store the manifest and the grants are also submitted to the
    node's /v1/adds/documents. The manifest CID is printed on stderr.
    """
    try:
        size = parse_size(chunk_size)
    except ValueError as exc:
        usage(f"--chunk-size: {exc}")
    if not 1 <= size <= MAX_CHUNK_SIZE:
        usage(f"--chunk-size is 1 byte to 16MiB ({MAX_CHUNK_SIZE} bytes)")
    readers, audiences = list(grant_to or []), list(audience or [])
    if len(readers) != len(audiences):
        usage("give one --audience for each --grant-to, in the same order")
    if content_key_out is None and not readers:
        usage(
            "the content key would be lost: keep it with --content-key-out FILE or grant it to a "
            "reader with --grant-to KEY --audience ID (or both)"
        )
    reader_keys = [x25519_public(text, f"--grant-to {text!r}") for text in readers]
    grant_rights = parse_rights(rights)
    lifetime = expiry_time(0, expires_in, None)
    if readers:
        grant_dir = grant_dir or (out.parent if out is not None and str(out) != "-" else None)
        if grant_dir is None:
            usage("--grant-to writes grant files: give --grant-dir DIR (or -o FILE)")
        if not grant_dir.is_dir():
            fail(f"the grant directory {grant_dir} does not exist")
    if out is not None and str(out) != "-":
        check_writable(out, force)
    if content_key_out is not None:
        check_writable(content_key_out, False)
    signing = ed25519_key(key)
    bearer = store_bearer(blocks, bearer_file)

    total: int | None = None
    try:
        if file == "-":
            source: Any = sys.stdin.buffer
        else:
            source = open(file, "rb", buffering=0)  # noqa: SIM115 - closed below
            status = os.fstat(source.fileno())
            total = status.st_size if stat.S_ISREG(status.st_mode) else None
    except OSError as exc:
        fail(f"cannot read {file}: {exc.strerror or exc}")
    store = open_store(blocks, bearer, create=True)
    key_fd: int | None = None
    try:
        if content_key_out is not None:
            # Reserved now, so that a key is never made that has nowhere to go.
            try:
                key_fd = os.open(content_key_out, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except OSError as exc:
                fail(f"cannot create {content_key_out}: {exc.strerror or exc}")
        started = time.perf_counter()
        try:
            with byte_progress("publish", total, quiet) as progress:
                published = publish(
                    source,
                    store,
                    key=signing,
                    publisher_id=publisher_id,
                    object_id=object_id or str(uuid.uuid4()),
                    created_at=int(time.time()),
                    chunk_size=size,
                    media_type=media_type,
                    on_progress=progress,
                    workers=workers,
                )
        except AddsError as exc:
            fail(f"cannot publish: {problems_text(exc.problems)}")
        except BlockStoreError as exc:
            store_failure(exc)
        except OSError as exc:
            fail(f"cannot read {file}: {exc.strerror or exc}")
        elapsed = time.perf_counter() - started
        if key_fd is not None:
            try:
                write_all(key_fd, _content_key_json(published.cid, published.content_key))
                os.fsync(key_fd)
            except OSError as exc:
                fail(
                    f"the blocks are stored but the content key could not be kept in "
                    f"{content_key_out} ({exc.strerror or exc}): nothing can open them; publish "
                    "again"
                )
            os.close(key_fd)
            key_fd = None
    finally:
        if key_fd is not None:  # publishing failed: no key was made, drop the reservation
            os.close(key_fd)
            if content_key_out is not None:
                with contextlib.suppress(OSError):
                    content_key_out.unlink()
        if file != "-":
            source.close()
        store.close()

    manifest = published.manifest
    plaintext_size = manifest.document["plaintext"]["size"]
    chunks = len(manifest.document["chunks"])
    now = int(time.time())
    grants: list[SignedDocument] = []
    for reader, reader_id in zip(reader_keys, audiences, strict=True):
        try:
            grant = issue_grant(
                manifest=manifest,
                content_key=published.content_key,
                key=signing,
                issuer_id=publisher_id,
                grant_id=str(uuid.uuid4()),
                audience=reader_id,
                audience_x25519_public_key=reader,
                rights=grant_rights,
                issued_at=now,
                expires_at=now + lifetime,
            )
        except AddsError as exc:
            fail(f"cannot grant to {reader_id}: {problems_text(exc.problems)}")
        assert grant_dir is not None
        write_file(_grant_path(grant_dir, grant), grant.canonical, force=False)
        grants.append(grant)
    emit(manifest.canonical, out, force=force)
    if not quiet:
        rate = throughput(plaintext_size, elapsed)
        note(f"published {plaintext_size} bytes in {chunks} chunks ({rate})")
    note(f"manifest_cid: {manifest.cid}")
    if content_key_out is not None:
        note(f"content key: {content_key_out} (mode 0600)")
    for grant, reader_id in zip(grants, audiences, strict=True):
        assert grant_dir is not None
        note(f"grant_cid: {grant.cid} for {reader_id} in {_grant_path(grant_dir, grant)}")
    if is_url(blocks):

        def submit_all(node: AddsClient) -> None:
            for document in (manifest, *grants):
                node.submit(document.canonical)

        ask(blocks, bearer, submit_all, "the blocks are stored but a document was not submitted: ")
        note(f"submitted the manifest and {len(grants)} grant(s) to {blocks}")
