"""The ADDS tools of ``hearth mcp``: a local file published through the service's provider node
(``/v1/adds``) as the identity, and an object opened from it into a local file.

What ``hearth adds publish`` and ``hearth adds open`` do with a URL store, for one identity: the
identity's root key signs the manifest and a grant of the content key to the identity's own box
key (the only keeper of that key, so it lasts ten years), both are submitted to the node; the
open checks the grant and the manifest, then fetches, verifies and decrypts every block. The
CLI's commands end the process on a failure, so the steps are written here against the same
library calls (``hearth.adds``, ``hearth.blockstore``), each failure a :class:`Refused`.

Paths come from the agent, so they are checked: a file to publish must be a regular file (no
directory, device, FIFO or final symlink) and none of the files that hold this server's secrets
(the sealed key file, the bearer file, the passphrase file), compared by device and inode so a
link to one is refused too; nor is an output ever written over one of those. An output is
written beside its target (mode 0600) and moved in only when every byte verified; an existing
output is replaced only when asked.

The functions block (HTTP and file I/O): the stdio backend runs them in a worker thread.
"""

from __future__ import annotations

import contextlib
import os
import stat
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from hearth.adds import AddsError, OpenError, issue_grant, open_object, publish
from hearth.blockstore import BlockCorrupt, BlockStoreError, open_block_store
from hearth.client.adds import AddsClient
from hearth.client.errors import ClientError, HearthError
from hearth.proofs.key_types import Ed25519PrivateKey, X25519PrivateKey

from .backend import Json, Refused

__all__ = ["AddsIdentity", "open_file", "publish_file"]

# The grant to the identity's own box key is what keeps the content key: it must outlive any
# plausible use of the object (the CLI's 30 days are for grants to others).
OWN_GRANT_LIFETIME: Final = 10 * 365 * 86_400
CHUNK_SIZE: Final = 1 << 20
_TIMEOUT: Final = 60.0


@dataclass(frozen=True)
class AddsIdentity:
    """Who publishes and opens, and where: the keys are left out of the repr."""

    base_url: str
    bearer: str | None = field(repr=False)
    identity: str  # the id written as publisher, issuer and audience (the DID when known)
    signing: Ed25519PrivateKey = field(repr=False)
    box: X25519PrivateKey = field(repr=False)
    secret_files: Sequence[Path] = ()


def _resolve(text: str) -> Path:
    """``text`` as an absolute path: as given when absolute, else under the working directory;
    ``~`` is not expanded (a host's argument is taken literally)."""
    path = Path(text)
    return path if path.is_absolute() else Path.cwd() / path


def _same_file(status: os.stat_result, paths: Sequence[Path]) -> bool:
    for path in paths:
        try:
            other = os.stat(path)
        except OSError:
            continue
        if (other.st_dev, other.st_ino) == (status.st_dev, status.st_ino):
            return True
    return False


def _open_source(path: Path, secret_files: Sequence[Path]) -> tuple[Any, int]:  # file, size
    """The file to publish, opened for reading without following a final symlink, and its
    size; a Refused for anything but a regular file that holds no secret of this server."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise Refused(404, "file_not_found", f"No file {str(path)!r}.") from None
    except OSError as exc:
        if path.is_symlink():
            raise Refused(
                422, "not_a_regular_file", f"{str(path)!r} is a symbolic link: give its target."
            ) from None
        raise Refused(
            422, "file_unreadable", f"Cannot read {str(path)!r}: {exc.strerror or exc}."
        ) from None
    status = os.fstat(fd)
    if not stat.S_ISREG(status.st_mode):
        os.close(fd)
        raise Refused(422, "not_a_regular_file", f"{str(path)!r} is not a regular file.")
    if _same_file(status, secret_files):
        os.close(fd)
        raise Refused(
            403, "secret_file", f"{str(path)!r} holds a secret of this server: not published."
        )
    return os.fdopen(fd, "rb", buffering=0), status.st_size


def _store_refusal(exc: BlockStoreError) -> Refused:
    code = "store.block_corrupt" if isinstance(exc, BlockCorrupt) else "store.error"
    return Refused(502, code, str(exc))


def _client_refusal(exc: ClientError) -> Refused:
    if isinstance(exc, HearthError):
        return Refused(exc.status, exc.error, exc.message, exc.hint)
    return Refused(503, "service_unreachable", f"cannot reach the ADDS node: {type(exc).__name__}")


def publish_file(who: AddsIdentity, path_text: str, *, media_type: str | None) -> Json:
    """Publish the file at ``path_text`` through the node: its blocks, the signed manifest and
    the identity's own grant. The answer names them; it holds no key."""
    path = _resolve(path_text)
    source, _size = _open_source(path, who.secret_files)
    now = int(time.time())
    try:
        with (
            contextlib.closing(source),
            contextlib.closing(open_block_store(who.base_url, bearer=who.bearer)) as store,
        ):
            published = publish(
                source,
                store,
                key=who.signing,
                publisher_id=who.identity,
                object_id=str(uuid.uuid4()),
                created_at=now,
                chunk_size=CHUNK_SIZE,
                media_type=media_type,
            )
    except AddsError as exc:
        raise Refused(422, "adds_invalid", exc.problems[0].message) from None
    except BlockStoreError as exc:
        raise _store_refusal(exc) from None
    except ClientError as exc:
        raise _client_refusal(exc) from None
    except OSError as exc:
        raise Refused(
            422, "file_unreadable", f"Cannot read {str(path)!r}: {exc.strerror or exc}."
        ) from None
    manifest = published.manifest
    grant = issue_grant(
        manifest=manifest,
        content_key=published.content_key,
        key=who.signing,
        issuer_id=who.identity,
        grant_id=str(uuid.uuid4()),
        audience=who.identity,
        audience_x25519_public_key=who.box.public_key().public_bytes_raw(),
        rights=["read"],
        issued_at=now,
        expires_at=now + OWN_GRANT_LIFETIME,
    )
    try:
        with AddsClient(who.base_url, bearer=who.bearer, timeout=_TIMEOUT) as node:
            node.submit(manifest.canonical)
            node.submit(grant.canonical)
    except ClientError as exc:
        raise _client_refusal(exc) from None
    document = manifest.document
    return {
        "path": str(path),
        "manifest_cid": manifest.cid,
        "grant_cid": grant.cid,
        "object_id": document["object_id"],
        "publisher": who.identity,
        "size": document["plaintext"]["size"],
        "chunks": len(document["chunks"]),
        "manifest_bytes": len(manifest.canonical),
        "grant_expires_at": now + OWN_GRANT_LIFETIME,
        "node": who.base_url,
    }


def _check_output(path: Path, overwrite: bool, secret_files: Sequence[Path]) -> None:
    if path.is_symlink() or path.exists():
        with contextlib.suppress(OSError):
            if _same_file(os.stat(path), secret_files):
                raise Refused(
                    403,
                    "secret_file",
                    f"{str(path)!r} holds a secret of this server: not replaced.",
                )
        if not overwrite:
            raise Refused(409, "file_exists", f"{str(path)!r} exists: set overwrite to replace it.")
        if path.is_symlink() or not path.is_file():
            raise Refused(
                422, "not_a_regular_file", f"{str(path)!r} is not a regular file: not replaced."
            )
    if not path.parent.is_dir():
        raise Refused(
            404, "directory_not_found", f"The directory {str(path.parent)!r} does not exist."
        )


def _write_verified(chunks: Iterator[bytes], path: Path, overwrite: bool) -> int:
    """Every chunk into a new file beside ``path``, moved into place only when the last one
    verified (``os.link`` refuses to clobber when ``overwrite`` is not set)."""
    temp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:12]}.partial")
    written = 0
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as sink:
            for chunk in chunks:
                sink.write(chunk)
                written += len(chunk)
            sink.flush()
            os.fsync(sink.fileno())
        if overwrite:
            os.replace(temp, path)
        else:
            os.link(temp, path)
    except FileExistsError:
        raise Refused(
            409, "file_exists", f"{str(path)!r} exists: set overwrite to replace it."
        ) from None
    except OSError as exc:
        raise Refused(
            422, "file_unwritable", f"Cannot write {str(path)!r}: {exc.strerror or exc}."
        ) from None
    finally:
        with contextlib.suppress(OSError):
            temp.unlink()
    return written


def open_file(
    who: AddsIdentity, manifest_cid: str, grant_cid: str, out_text: str, *, overwrite: bool
) -> Json:
    """Fetch the manifest and grant from the node, check them, then fetch, verify and decrypt
    every block into ``out_text``: complete, or not written at all."""
    path = _resolve(out_text)
    _check_output(path, overwrite, who.secret_files)
    try:
        with (
            AddsClient(who.base_url, bearer=who.bearer, timeout=_TIMEOUT) as node,
            contextlib.closing(open_block_store(who.base_url, bearer=who.bearer)) as store,
        ):
            manifest = node.document(manifest_cid)
            grant = node.document(grant_cid)
            opened = open_object(manifest, grant, who.box, store, now=int(time.time()))
            written = _write_verified(opened, path, overwrite)
    except OpenError as exc:
        raise Refused(422, exc.code, exc.message) from None
    except BlockStoreError as exc:
        raise _store_refusal(exc) from None
    except ClientError as exc:
        raise _client_refusal(exc) from None
    return {
        "path": str(path),
        "size": written,
        "manifest_cid": manifest_cid,
        "grant_cid": grant_cid,
        "chunks": len(opened.chunk_sizes),
        "verified": [
            "the manifest's signature and CID",
            "the grant's signature, lifetime and audience (this identity's box key)",
            "every block's CID, size and authenticated decryption, in order",
        ],
    }
