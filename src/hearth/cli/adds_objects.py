"""``hearth adds`` object commands: keys, publish, grant, open, heads, a provider's documents and
block copying. ``register(app)`` adds them to ``hearth adds``.

    keygen --out PREFIX              Ed25519 and X25519 private keys (PEM, 0600); prints the public
                                     halves (base64url)
    publish FILE ...                 encrypt FILE into a block store, sign its manifest
    grant MANIFEST ...               wrap an object's content key to a reader (or re-grant)
    open MANIFEST --grant ...        verify every block and decrypt
    head new ...                     the next head of a (key, head_id) history
    head resolve FILES | --from URL  the current head of each history; forks reported
    provider-record ...              sign a provider record for a local store (or fetch a node's)
    receipt ...                      sign a storage receipt (or ask a node for one)
    blocks copy SRC DST [CID...]     between the store layout, a plain directory and a URL

Exit status: 0 done; 1 refused or failed (one line on stderr says why); 2 usage error; 3 from
``head resolve`` when a history is forked.

A block store location (``--blocks``) is a hearth block store directory (``ADDS-BLOCKSTORE``), a
plain directory of files named by their CIDs (the interchange form) or a provider node's
``http(s)://`` base URL. A URL store needs a bearer: ``--bearer-file``, else ``$HEARTH_BEARER``,
else the ``api_key`` of the hearth home (``$HEARTH_HOME``) when the home's profile is for that same
origin; a home's bearer is never sent to another origin. The bearer is never printed.

Files written with ``-o`` are never replaced unless ``--force`` is given; each appears complete
or not at all (written beside, then renamed). Secrets (content keys, private keys, decrypted
output) are created mode 0600.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn
from urllib.parse import quote, urlsplit

import typer
from rich.console import Console
from rich.markup import escape

from hearth.adds import (
    AddsError,
    Commitment,
    Endpoint,
    InventoryItem,
    OpenError,
    Right,
    Role,
    SignedDocument,
    b64url_decode,
    b64url_encode,
    build_provider_record,
    build_receipt,
    check_delegation,
    cid_for_bytes,
    content_key_id,
    issue_grant,
    next_head,
    open_object,
    publish,
    receipt_covers,
    resolve_heads,
    unwrap_grant,
    validate,
    wrap_content_key,
)
from hearth.adds.cid import cid_problem
from hearth.adds.keys import (
    generate_key_pair,
    load_ed25519_private_key,
    load_x25519_private_key,
    private_key_pem,
)
from hearth.adds.kinds import MAX_CHUNK_SIZE
from hearth.adds.objects import OpenedObject
from hearth.blockstore import (
    BlockCorrupt,
    BlockStore,
    BlockStoreError,
    DirectoryBlockStore,
    copy_blocks,
    open_block_store,
)
from hearth.blockstore.direct_io import PositionalFile

from .client_config import home_dir, load_api_key, load_profile
from .files import read_input

# Imported where they are used, not here: httpx2 (about 0.1 s) only by a command that talks to a
# provider node, rich.progress only when a bar is drawn on a terminal, the PEM parsers only for
# --audience-key-file. A local publish or open never needs them, and starts that much sooner
# (tests/cli/test_cli_start.py holds the line).
if TYPE_CHECKING:
    import httpx2
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

__all__ = ["BEARER_ENV", "parse_duration", "parse_size", "register"]

BEARER_ENV = "HEARTH_BEARER"
CONTENT_KEY_FORMAT = "hearth-adds-content-key/v1"
DEFAULT_EXPIRY = "30d"

errors = Console(stderr=True, highlight=False, soft_wrap=True)

# --- small parsers ----------------------------------------------------------------------------

_SIZE = re.compile(r"(\d+)\s*(B|KiB|MiB|GiB)?")
_SIZE_UNITS = {None: 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
_DURATION = re.compile(r"(\d+)([smhdw]?)")
_DURATION_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800}


def parse_size(text: str) -> int:
    """Bytes from ``4096``, ``64KiB``, ``1MiB``, ``1GiB`` (binary units only: KB and MB would be
    ambiguous). ValueError otherwise."""
    match = _SIZE.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"{text!r} is not a size: give bytes, or a number with KiB, MiB or GiB")
    return int(match[1]) * _SIZE_UNITS[match[2]]


def parse_duration(text: str) -> int:
    """Seconds from ``90``, ``90s``, ``15m``, ``12h``, ``30d``, ``2w``; ValueError otherwise."""
    match = _DURATION.fullmatch(text.strip())
    if match is None or int(match[1]) == 0:
        raise ValueError(f"{text!r} is not a duration: a positive number with s, m, h, d or w")
    return int(match[1]) * _DURATION_UNITS[match[2]]


def _parse_rights(text: str) -> list[Right]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    known = {str(right) for right in Right}
    unknown = [name for name in names if name not in known]
    if unknown or not names:
        _usage(f"--rights is a comma-separated list of {', '.join(sorted(known))}: {text!r}")
    if "read" not in names:
        _usage("--rights must include 'read' (ADDS requires it in every grant)")
    return [Right(name) for name in dict.fromkeys(names)]


def _is_cid(text: str) -> bool:
    return cid_problem(text) is None


def _is_url(text: str) -> bool:
    return text.startswith(("http://", "https://"))


# --- reporting --------------------------------------------------------------------------------


def _usage(message: str) -> NoReturn:
    errors.print(f"error: {escape(message)}")
    raise typer.Exit(2)


def _fail(message: str) -> NoReturn:
    errors.print(f"error: {escape(message)}")
    raise typer.Exit(1)


def _note(message: str) -> None:
    errors.print(escape(message))


def _problems_text(problems: Any) -> str:
    return "; ".join(f"{p.code} at '{p.pointer}': {p.message}" for p in problems)


def _rate(size: int, seconds: float) -> str:
    return f"{seconds:.2f} s, {size / max(seconds, 1e-9) / 1e6:.1f} MB/s"


@contextlib.contextmanager
def _byte_progress(
    description: str, total: int | None, quiet: bool
) -> Iterator[Callable[[int], None]]:
    """A progress bar with throughput on stderr (only on a terminal); yields ``done(bytes)``."""
    if quiet or not errors.is_terminal:
        yield lambda done: None
        return
    from rich.progress import (  # noqa: PLC0415 (a bar is drawn: only now)
        BarColumn,
        DownloadColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(binary_units=True),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=errors) as progress:
        task = progress.add_task(description, total=total)
        yield lambda done: progress.update(task, completed=done)


# --- files ------------------------------------------------------------------------------------


def _check_writable(path: Path, force: bool) -> None:
    """Refuse, before any work is done, an output that exists (without --force) or whose
    directory does not."""
    if (path.exists() or path.is_symlink()) and not force:
        _fail(f"{path} exists (use --force to replace it)")
    if not path.parent.is_dir():
        _fail(f"cannot write {path}: the directory {path.parent} does not exist")


def _fsync_directory(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _write_file(path: Path, data: bytes, *, force: bool, private: bool = False) -> None:
    """Write ``data`` to ``path`` atomically: a sibling temp file, fsynced, renamed over it."""
    if (path.exists() or path.is_symlink()) and not force:
        _fail(f"{path} exists (use --force to replace it)")
    temp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:12]}.tmp")
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600 if private else 0o644)
        try:
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            temp.unlink()
        _fail(f"cannot write {path}: {exc.strerror or exc}")
    _fsync_directory(path.parent)


def _emit(data: bytes, out: Path | None, *, force: bool) -> None:
    """A document to ``out``, or to stdout (with a final newline) when no file is given."""
    if out is None or str(out) == "-":
        typer.echo(data.decode("utf-8"))
    else:
        _write_file(out, data, force=force)


def _read(name: str | Path, what: str) -> bytes:
    try:
        return read_input(str(name))
    except OSError as exc:
        _fail(f"cannot read the {what} {name}: {exc.strerror or exc}")


def _ed25519_key(path: Path) -> Ed25519PrivateKey:
    try:
        return load_ed25519_private_key(_read(path, "key file"))
    except AddsError as exc:
        _fail(f"{path}: {exc.problems[0].message}")


def _x25519_key(path: Path) -> X25519PrivateKey:
    try:
        return load_x25519_private_key(_read(path, "key file"))
    except AddsError as exc:
        _fail(f"{path}: {exc.problems[0].message}")


def _x25519_public(text: str, what: str) -> bytes:
    try:
        raw = b64url_decode(text)
    except ValueError as exc:
        _usage(f"{what} is not base64url: {exc}")
    if len(raw) != 32:
        _usage(f"{what} is {len(raw)} bytes, not a 32-byte X25519 public key")
    try:  # a small-order key would only fail after the upload: refuse it now
        wrap_content_key(bytes(32), raw, cid_for_bytes(b""))
    except AddsError as exc:
        _usage(f"{what} cannot receive a key: {exc.problems[0].message}")
    return raw


def _x25519_public_from_pem(path: Path) -> bytes:
    # The PEM parsers, here only: no other command reads a public key file.
    from cryptography.hazmat.primitives import serialization  # noqa: PLC0415
    from cryptography.hazmat.primitives.asymmetric.x25519 import (  # noqa: PLC0415
        X25519PrivateKey,
        X25519PublicKey,
    )

    data = _read(path, "key file")
    try:
        public = serialization.load_pem_public_key(data)
    except (ValueError, TypeError):
        try:
            private = serialization.load_pem_private_key(data, password=None)
        except (ValueError, TypeError):
            _fail(f"{path} is neither an X25519 public key nor an unencrypted private key (PEM)")
        if not isinstance(private, X25519PrivateKey):
            _fail(f"{path} is not an X25519 key")
        return private.public_key().public_bytes_raw()
    if not isinstance(public, X25519PublicKey):
        _fail(f"{path} is not an X25519 key")
    return public.public_bytes_raw()


def _document(data: bytes, kind: str, name: str) -> dict[str, Any]:
    """The parsed document when ``data`` is a valid ``kind``; a failure saying why otherwise."""
    result = validate(data)
    if not result.valid or not isinstance(result.document, dict):
        _fail(f"{name} is not a valid {kind}: {_problems_text(result.errors)}")
    if result.kind != kind:
        _fail(f"{name} is a {result.kind}, not a {kind}")
    return result.document


# --- bearer and the provider node -------------------------------------------------------------


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    default = {"http": 80, "https": 443}.get(parts.scheme)
    return parts.scheme, (parts.hostname or "").lower(), parts.port or default


def _bearer(url: str, bearer_file: Path | None) -> str:
    """The bearer for a provider URL: --bearer-file, $HEARTH_BEARER, or the home's api_key when
    its profile is for the same origin. A usage error when there is none."""
    if bearer_file is not None:
        try:
            bearer = bearer_file.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            _usage(f"cannot read the bearer file {bearer_file}: {exc}")
        if not bearer:
            _usage(f"the bearer file {bearer_file} is empty")
        return bearer
    if os.environ.get(BEARER_ENV, "").strip():
        return os.environ[BEARER_ENV].strip()
    home = home_dir(None)
    profile = load_profile(home)
    if profile is not None and _origin(profile.base_url) == _origin(url):
        key = load_api_key(home)
        if key:
            return key
    _usage(
        f"{url} needs a bearer: pass --bearer-file FILE or set ${BEARER_ENV} (or use a hearth "
        "home registered with that service)"
    )


class ServiceError(Exception):
    """A provider node refused or could not be reached; the message never holds the bearer."""


class Service:
    """The document, head, provider-record and receipt routes of a provider node."""

    def __init__(self, base_url: str, bearer: str | None) -> None:
        self.base_url = base_url.rstrip("/")
        self._bearer = bearer
        headers = {"Authorization": f"Bearer {bearer}"} if bearer else {}
        import httpx2  # noqa: PLC0415 (a provider node is reached: only now)

        self._client = httpx2.Client(base_url=self.base_url, headers=headers, timeout=60.0)

    def __enter__(self) -> Service:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._client.close()

    def _redact(self, text: str) -> str:
        return text.replace(self._bearer, "[bearer]") if self._bearer else text

    def _request(self, method: str, path: str, **kwargs: Any) -> httpx2.Response:
        import httpx2  # noqa: PLC0415 (imported by __init__ already)

        try:
            return self._client.request(method, path, **kwargs)
        except httpx2.HTTPError as exc:
            raise ServiceError(
                self._redact(f"{method} {self.base_url}{path}: {type(exc).__name__}: {exc}")
            ) from None

    def _refusal(self, what: str, response: httpx2.Response) -> ServiceError:
        try:
            body: Any = response.json()
        except ValueError:
            body = None
        text = f"{self.base_url}: {what}: HTTP {response.status_code}"
        if isinstance(body, dict):
            if isinstance(body.get("error"), str):
                text += f" {body['error']}"
            if isinstance(body.get("message"), str):
                text += f": {body['message']}"
            details = body.get("details")
            problems = details.get("problems") if isinstance(details, dict) else None
            if isinstance(problems, list) and problems:
                text += (
                    " ("
                    + "; ".join(
                        f"{p.get('code')} at '{p.get('pointer')}'"
                        for p in problems[:10]
                        if isinstance(p, dict)
                    )
                    + ")"
                )
            missing = details.get("missing") if isinstance(details, dict) else None
            if isinstance(missing, list) and missing:
                text += f" (not held: {', '.join(str(m) for m in missing[:10])})"
        else:
            excerpt = response.content[:200].decode("utf-8", errors="replace").strip()
            if excerpt:
                text += f": {excerpt}"
        return ServiceError(self._redact(text))

    def submit(self, document: SignedDocument | bytes) -> str:
        """POST a document; its CID as the service names it (checked against ours)."""
        data = document.canonical if isinstance(document, SignedDocument) else document
        expected = validate(data).cid
        response = self._request(
            "POST",
            "/v1/adds/documents",
            content=data,
            headers={"Content-Type": "application/json"},
        )
        if response.status_code not in (200, 201):
            raise self._refusal("POST /v1/adds/documents", response)
        try:
            cid = response.json()["cid"]
        except (ValueError, KeyError, TypeError):
            raise ServiceError(f"{self.base_url}: the document answer has no cid") from None
        if cid != expected:
            raise ServiceError(f"{self.base_url} named the document {cid}, not {expected}")
        return str(cid)

    def document(self, cid: str) -> bytes:
        """A document's bytes by CID, refused unless they hash to that CID."""
        path = f"/v1/adds/documents/{cid}"
        response = self._request("GET", path)
        if response.status_code != 200:
            raise self._refusal(f"GET {path}", response)
        if cid_for_bytes(response.content) != cid:
            raise ServiceError(f"{self.base_url} answered {cid} with other bytes: refused")
        return response.content

    def head(self, head_id: str, issuer_key: str) -> dict[str, Any] | None:
        """The service's resolution of (issuer_key, head_id), or None when it holds no head."""
        path = f"/v1/adds/heads/{quote(head_id, safe='')}"
        response = self._request("GET", path, params={"issuer_key": issuer_key})
        if response.status_code == 404:
            return None
        if response.status_code != 200:
            raise self._refusal(f"GET {path}", response)
        try:
            body = response.json()
        except ValueError:
            body = None
        if not isinstance(body, dict) or not isinstance(body.get("candidates"), list):
            raise ServiceError(f"{self.base_url}: GET {path}: not a head resolution")
        body.pop("_welcomed", None)
        return body

    def provider_record(self) -> bytes:
        response = self._request("GET", "/v1/adds/provider-record")
        if response.status_code != 200:
            raise self._refusal("GET /v1/adds/provider-record", response)
        return response.content

    def receipt(self, items: list[str], commitment: str) -> bytes:
        response = self._request(
            "POST", "/v1/adds/receipts", json={"items": items, "commitment": commitment}
        )
        if response.status_code not in (200, 201):
            raise self._refusal("POST /v1/adds/receipts", response)
        return response.content


def _load_document(name: str, service: Service | None, what: str) -> bytes:
    """A document from a file, '-', or by CID from ``service`` when no such file exists."""
    if name != "-" and not Path(name).exists() and _is_cid(name):
        if service is None:
            _fail(f"no file {name}; to fetch the {what} by CID, give a provider URL as --blocks")
        try:
            return service.document(name)
        except ServiceError as exc:
            _fail(f"cannot fetch the {what}: {exc}")
    return _read(name, what)


def _open_store(location: str, bearer: str | None, *, create: bool) -> BlockStore:
    try:
        return open_block_store(location, bearer=bearer, create=create)
    except BlockStoreError as exc:
        _fail(str(exc))


def _store_bearer(location: str, bearer_file: Path | None) -> str | None:
    return _bearer(location, bearer_file) if _is_url(location) else None


def _store_code(exc: BlockStoreError) -> str:
    return "store.block_corrupt" if isinstance(exc, BlockCorrupt) else "store.error"


def _store_failure(exc: BlockStoreError) -> NoReturn:
    _fail(f"{_store_code(exc)}: {exc}")


def _submit(document: SignedDocument, what: str, url: str, bearer: str | None) -> None:
    """POST a signed document to a provider node, or exit 1 saying why it was refused."""
    with Service(url, bearer) as service:
        try:
            service.submit(document)
        except ServiceError as exc:
            _fail(f"the {what} was not submitted: {exc}")
    _note(f"submitted the {what} to {url}")


# --- options shared by several commands -------------------------------------------------------

BLOCKS_HELP = (
    "Block store: a hearth store directory, a plain directory of CID-named files, or a "
    "provider node's http(s) URL."
)
BEARER_OPTION = typer.Option(
    None,
    "--bearer-file",
    help=f"File holding the bearer for a URL (else ${BEARER_ENV}, else the hearth home's key "
    "for that service).",
    show_default=False,
)


# The options several commands share, each naming its own document in the help.
def out_option(what: str) -> Any:
    return typer.Option(
        None, "--out", "-o", help=f"Write the {what} here (default: stdout).", show_default=False
    )


def submit_option(what: str) -> Any:
    return typer.Option(
        None,
        "--submit",
        help=f"Also POST the {what} to this provider node URL.",
        show_default=False,
    )


QUIET_OPTION = typer.Option(False, "--quiet", "-q", help="No progress bar or summary line.")
FORCE_OPTION = typer.Option(False, "--force", help="Replace an existing output file.")
NOW_OPTION = typer.Option(
    None, "--now", help="Epoch seconds to use as the current time.", show_default=False
)


def _now(now: int | None) -> int:
    return int(time.time()) if now is None else now


def _expiry(now: int, expires_in: str | None, expires_at: int | None) -> int:
    if expires_in is not None and expires_at is not None:
        _usage("give --expires-in or --expires-at, not both")
    if expires_at is not None:
        return expires_at
    try:
        return now + parse_duration(expires_in or DEFAULT_EXPIRY)
    except ValueError as exc:
        _usage(f"--expires-in: {exc}")


# --- keygen -----------------------------------------------------------------------------------


def keygen_command(
    out: Path = typer.Option(
        ..., "--out", "-o", help="Path prefix: writes PREFIX.ed25519.pem and PREFIX.x25519.pem."
    ),
) -> None:
    """Generate an Ed25519 signing key and an X25519 box key (PKCS#8 PEM, mode 0600).

    Never replaces an existing file. Prints the public halves (base64url): the X25519 one is what
    a publisher passes to `--grant-to` / `--audience-key`.
    """
    pair = generate_key_pair()
    signing_path = out.with_name(out.name + ".ed25519.pem")
    box_path = out.with_name(out.name + ".x25519.pem")
    for path in (signing_path, box_path):
        if path.exists() or path.is_symlink():
            _fail(f"{path} exists: keygen never replaces a key file")
    written: list[Path] = []
    try:
        for path, key in ((signing_path, pair.signing), (box_path, pair.box)):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            written.append(path)
            try:
                os.fchmod(fd, 0o600)
                os.write(fd, private_key_pem(key))
                os.fsync(fd)
            finally:
                os.close(fd)
    except OSError as exc:
        for path in written:
            with contextlib.suppress(OSError):
                path.unlink()
        _fail(f"cannot write key files: {exc.strerror or exc}")
    _note(f"wrote {signing_path} and {box_path} (mode 0600)")
    for name, value in pair.describe().items():
        typer.echo(f"{name}: {value}")


# --- publish ----------------------------------------------------------------------------------


def _content_key_json(published_cid: str, content_key: bytes) -> bytes:
    record = {
        "format": CONTENT_KEY_FORMAT,
        "manifest_cid": published_cid,
        "key_id": content_key_id(content_key),
        "content_key": b64url_encode(content_key),
    }
    return (json.dumps(record, indent=2) + "\n").encode("utf-8")


def _read_content_key(path: Path) -> tuple[bytes, str | None]:
    """(content key, the manifest CID it was written for) from a content key file."""
    data = _read(path, "content key file")
    try:
        record = json.loads(data)
        if not isinstance(record, dict) or record.get("format") != CONTENT_KEY_FORMAT:
            raise ValueError(f"not a {CONTENT_KEY_FORMAT} file")
        key = b64url_decode(str(record["content_key"]))
        if len(key) != 32:
            raise ValueError("the key is not 32 bytes")
    except (ValueError, KeyError, UnicodeDecodeError) as exc:
        _fail(f"{path} is not a content key file: {exc}")
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
        help="A reader's X25519 public key (base64url); repeat, each with its --audience.",
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
        _usage(f"--chunk-size: {exc}")
    if not 1 <= size <= MAX_CHUNK_SIZE:
        _usage(f"--chunk-size is 1 byte to 16MiB ({MAX_CHUNK_SIZE} bytes)")
    readers, audiences = list(grant_to or []), list(audience or [])
    if len(readers) != len(audiences):
        _usage("give one --audience for each --grant-to, in the same order")
    if content_key_out is None and not readers:
        _usage(
            "the content key would be lost: keep it with --content-key-out FILE or grant it to a "
            "reader with --grant-to KEY --audience ID (or both)"
        )
    reader_keys = [_x25519_public(text, f"--grant-to {text!r}") for text in readers]
    grant_rights = _parse_rights(rights)
    lifetime = _expiry(0, expires_in, None)
    if readers:
        grant_dir = grant_dir or (out.parent if out is not None and str(out) != "-" else None)
        if grant_dir is None:
            _usage("--grant-to writes grant files: give --grant-dir DIR (or -o FILE)")
        if not grant_dir.is_dir():
            _fail(f"the grant directory {grant_dir} does not exist")
    if out is not None and str(out) != "-":
        _check_writable(out, force)
    if content_key_out is not None:
        _check_writable(content_key_out, False)
    signing = _ed25519_key(key)
    bearer = _store_bearer(blocks, bearer_file)

    total: int | None = None
    try:
        if file == "-":
            source: Any = sys.stdin.buffer
        else:
            source = open(file, "rb", buffering=0)  # noqa: SIM115 - closed below
            status = os.fstat(source.fileno())
            total = status.st_size if stat.S_ISREG(status.st_mode) else None
    except OSError as exc:
        _fail(f"cannot read {file}: {exc.strerror or exc}")
    store = _open_store(blocks, bearer, create=True)
    key_fd: int | None = None
    try:
        if content_key_out is not None:
            # Reserved now, so that a key is never made that has nowhere to go.
            try:
                key_fd = os.open(content_key_out, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except OSError as exc:
                _fail(f"cannot create {content_key_out}: {exc.strerror or exc}")
        started = time.perf_counter()
        try:
            with _byte_progress("publish", total, quiet) as progress:
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
            _fail(f"cannot publish: {_problems_text(exc.problems)}")
        except BlockStoreError as exc:
            _store_failure(exc)
        except OSError as exc:
            _fail(f"cannot read {file}: {exc.strerror or exc}")
        elapsed = time.perf_counter() - started
        if key_fd is not None:
            try:
                _write_all(key_fd, _content_key_json(published.cid, published.content_key))
                os.fsync(key_fd)
            except OSError as exc:
                _fail(
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
            _fail(f"cannot grant to {reader_id}: {_problems_text(exc.problems)}")
        assert grant_dir is not None
        _write_file(_grant_path(grant_dir, grant), grant.canonical, force=False)
        grants.append(grant)
    _emit(manifest.canonical, out, force=force)
    if not quiet:
        rate = _rate(plaintext_size, elapsed)
        _note(f"published {plaintext_size} bytes in {chunks} chunks ({rate})")
    _note(f"manifest_cid: {manifest.cid}")
    if content_key_out is not None:
        _note(f"content key: {content_key_out} (mode 0600)")
    for grant, reader_id in zip(grants, audiences, strict=True):
        assert grant_dir is not None
        _note(f"grant_cid: {grant.cid} for {reader_id} in {_grant_path(grant_dir, grant)}")
    if _is_url(blocks):
        with Service(blocks, bearer) as service:
            try:
                for document in (manifest, *grants):
                    service.submit(document)
            except ServiceError as exc:
                _fail(f"the blocks are stored but a document was not submitted: {exc}")
        _note(f"submitted the manifest and {len(grants)} grant(s) to {blocks}")


# --- grant ------------------------------------------------------------------------------------


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
        help="The reader's X25519 public key, base64url.",
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
    submit: str | None = submit_option("grant"),
    bearer_file: Path | None = BEARER_OPTION,
) -> None:
    """Give a reader an object's content key, wrapped to their X25519 key, in a signed grant.

    The key comes from --content-key, or from a grant you received (--from-grant with --box-key):
    that re-grant names it as parent_grant, and is refused unless it lists 'delegate', you are
    its audience, the rights are among its rights and it expires no later. A reader opens a
    re-grant with `open --parent-grant` and the grant it came from. The grant's CID is printed
    on stderr.
    """
    if (content_key is None) == (from_grant is None):
        _usage("give the content key: either --content-key FILE or --from-grant GRANT")
    if from_grant is not None and box_key is None:
        _usage("--from-grant needs --box-key: the X25519 private key that grant was made for")
    if from_grant is None and (box_key is not None or parent_grant):
        _usage("--box-key and --parent-grant go with --from-grant")
    if (audience_key is None) == (audience_key_file is None):
        _usage("give the reader's key: either --audience-key B64 or --audience-key-file PEM")
    if issuer_id is None and from_grant is None:
        _usage("--issuer-id is required (it defaults to the parent's audience with --from-grant)")
    grant_rights = _parse_rights(rights)
    moment = _now(now)
    explicit_expiry = expires_in is not None or expires_at is not None
    expiry = _expiry(moment, expires_in, expires_at)
    if out is not None and str(out) != "-":
        _check_writable(out, force)
    if audience_key is not None:
        reader = _x25519_public(audience_key, "--audience-key")
    else:
        assert audience_key_file is not None
        reader = _x25519_public_from_pem(audience_key_file)
    signing = _ed25519_key(key)
    bearer = _bearer(submit, bearer_file) if submit is not None else None
    manifest_bytes = _read(manifest, "manifest")
    _document(manifest_bytes, "manifest", manifest)
    manifest_cid = validate(manifest_bytes).cid

    parent_cid: str | None = None
    if content_key is not None:
        secret, written_for = _read_content_key(content_key)
        if written_for is not None and written_for != manifest_cid:
            _fail(f"{content_key} holds the key of manifest {written_for}, not {manifest_cid}")
    else:
        assert from_grant is not None
        assert box_key is not None
        parent_bytes = _read(from_grant, "grant")
        parent = _document(parent_bytes, "grant", str(from_grant))
        parent_cid = validate(parent_bytes).cid
        if "delegate" not in parent["rights"]:
            _fail(f"{from_grant} does not list 'delegate': its audience may not grant it onward")
        if issuer_id is None:
            issuer_id = str(parent["audience"])
        elif issuer_id != parent["audience"]:
            _fail(
                f"--issuer-id {issuer_id!r} is not the audience of {from_grant} "
                f"({parent['audience']!r}): only its audience may re-grant it"
            )
        extra = sorted({str(r) for r in grant_rights} - set(parent["rights"]))
        if extra:
            _fail(f"{from_grant} does not hold these rights to pass on: {', '.join(extra)}")
        if expiry > parent["expires_at"]:
            if explicit_expiry:
                _fail(f"a re-grant expires no later than {from_grant} ({parent['expires_at']})")
            expiry = parent["expires_at"]
            _note(f"the grant expires with {from_grant}, at {expiry}")
        ancestors = [_read(path, "parent grant") for path in parent_grant or []]
        try:
            secret = unwrap_grant(
                parent_bytes, manifest_bytes, _x25519_key(box_key), now=moment, parents=ancestors
            )
        except OpenError as exc:
            _fail(f"cannot unwrap the key from {from_grant}: {exc.code}: {exc.message}")
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
        _fail(f"cannot grant: {_problems_text(exc.problems)}")
    if from_grant is not None:
        problems = check_delegation(grant, _read(from_grant, "grant"))
        if problems:
            _fail(f"the re-grant would not hold: {_problems_text(problems)}")
    _emit(grant.canonical, out, force=force)
    _note(f"grant_cid: {grant.cid}")
    if submit is not None:
        _submit(grant, "grant", submit, bearer)


# --- open -------------------------------------------------------------------------------------


def open_command(
    manifest: str = typer.Argument(
        ..., help="The manifest: a file, '-', or its CID (fetched when --blocks is a URL)."
    ),
    *,
    grant: str = typer.Option(
        ..., "--grant", "-g", help="The grant: a file or its CID (fetched like the manifest)."
    ),
    key: Path = typer.Option(
        ..., "--key", "-k", help="Your X25519 private key (PEM): the grant's audience key."
    ),
    blocks: str = typer.Option(..., "--blocks", help=BLOCKS_HELP),
    bearer_file: Path | None = BEARER_OPTION,
    parent_grant: list[str] | None = typer.Option(
        None,
        "--parent-grant",
        help="A re-grant's ancestors (files or CIDs), up to the first grant; repeat.",
        show_default=False,
    ),
    out: Path | None = typer.Option(
        None,
        "--out",
        "-o",
        help="Write the plaintext here (mode 0600), via OUT.partial renamed only when every "
        "byte verified. Default: stdout, where bytes already written cannot be taken back "
        "(exit 1 then means: discard the output).",
        show_default=False,
    ),
    now: int | None = NOW_OPTION,
    force: bool = FORCE_OPTION,
    quiet: bool = QUIET_OPTION,
    workers: int = typer.Option(
        2,
        "--workers",
        min=1,
        max=64,
        help="Threads fetching, verifying and decrypting blocks ahead of the output (with -o"
        " each also writes its chunks into the file at their offsets).",
    ),
) -> None:
    """Check the grant and manifest, then fetch, verify and decrypt every block.

    Exit 0 only when every byte verified. On a refusal (a stable open.* code, e.g.
    open.expired, open.wrong_key, open.block_missing) or a damaged block (store.block_corrupt)
    the partial output file is deleted and the code and reason are printed: exit 1.
    """
    bearer = _store_bearer(blocks, bearer_file)
    to_stdout = out is None or str(out) == "-"
    if not to_stdout:
        assert out is not None
        _check_writable(out, force)
    box = _x25519_key(key)
    with contextlib.ExitStack() as stack:
        store = _open_store(blocks, bearer, create=False)
        stack.callback(store.close)
        service = stack.enter_context(Service(blocks, bearer)) if _is_url(blocks) else None
        manifest_bytes = _load_document(manifest, service, "manifest")
        grant_bytes = _load_document(grant, service, "grant")
        parents = [_load_document(name, service, "parent grant") for name in parent_grant or []]
        try:
            chunks = open_object(
                manifest_bytes,
                grant_bytes,
                box,
                store,
                now=_now(now),
                parents=parents,
                workers=workers,
            )
        except OpenError as exc:
            _fail(f"{exc.code}: {exc.message}")
        if to_stdout:
            _open_to_stdout(chunks, chunks.size, quiet)
        else:
            assert out is not None
            _open_to_file(chunks, out, quiet)


def _open_to_stdout(chunks: Iterator[bytes], total: int, quiet: bool) -> None:
    sink = sys.stdout.buffer
    written = 0
    started = time.perf_counter()
    try:
        with _byte_progress("open", total, quiet) as progress:
            for chunk in chunks:
                sink.write(chunk)
                written += len(chunk)
                progress(written)
        sink.flush()
    except (OpenError, BlockStoreError) as exc:
        with contextlib.suppress(OSError):
            sink.flush()
        reason = (
            f"{exc.code}: {exc.message}"
            if isinstance(exc, OpenError)
            else f"{_store_code(exc)}: {exc}"
        )
        _fail(f"{reason} (the {written} bytes already written to stdout are incomplete: discard)")
    if not quiet:
        _note(f"opened {written} bytes, every one verified ({_rate(written, _since(started))})")


def _since(started: float) -> float:
    return time.perf_counter() - started


def _open_to_file(opened: OpenedObject, out: Path, quiet: bool) -> None:
    partial = out.with_name(out.name + ".partial")
    total = opened.size
    try:
        # The workers decrypt each chunk into an aligned buffer of their own and write it at
        # its offset, past the page cache where the file system allows (direct_io.py): this
        # thread copies and writes nothing, and the writes overlap like the reads do.
        target = PositionalFile(partial, opened.chunk_sizes, mode=0o600)
    except OSError as exc:
        _fail(f"cannot create {partial}: {exc.strerror or exc}")
    written = 0
    started = time.perf_counter()
    failure: str | None = None
    complete = False
    try:
        with _byte_progress("open", total, quiet) as progress:
            written = opened.into(target, on_progress=progress)
        target.finish()
        complete = True
    except OpenError as exc:
        failure = f"{exc.code}: {exc.message}"
    except BlockStoreError as exc:
        failure = f"{_store_code(exc)}: {exc}"
    except OSError as exc:
        failure = f"cannot write {partial}: {exc.strerror or exc}"
    finally:
        target.close()
        if not complete:  # a refusal, or anything else (an interrupt): no partial is left
            with contextlib.suppress(OSError):
                partial.unlink()
    if failure is not None:
        _fail(f"{failure} (nothing written to {out})")
    if written != total:  # open_object yields exactly the manifest's bytes; a guard all the same
        partial.unlink()
        _fail(f"the plaintext is {written} bytes, the manifest says {total}")
    try:
        os.replace(partial, out)
    except OSError as exc:
        with contextlib.suppress(OSError):
            partial.unlink()
        _fail(f"cannot move {partial} to {out}: {exc.strerror or exc}")
    _fsync_directory(out.parent)
    if not quiet:
        rate = _rate(written, _since(started))
        _note(f"opened {written} bytes into {out}, every one verified ({rate})")


# --- heads ------------------------------------------------------------------------------------


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
    submit: str | None = submit_option("head"),
    bearer_file: Path | None = BEARER_OPTION,
) -> None:
    """Sign the next head of the history (your key, --head-id), pointing at --manifest.

    Its sequence is one above the highest of the previous heads given, and its parents are the
    current head, or every candidate of a fork (so this head merges it). Anything given in
    --previous that is not a valid head is refused: a history read in part could reuse a
    sequence. The head's CID and sequence are printed on stderr.
    """
    if not _is_cid(manifest):
        _usage(f"--manifest {manifest!r} is not an ADDS CID")
    if out is not None and str(out) != "-":
        _check_writable(out, force)
    signing = _ed25519_key(key)
    documents = [_read(path, "head") for path in previous or []]
    if from_url is not None:
        issuer_key = b64url_encode(signing.public_key().public_bytes_raw())
        with Service(from_url, _bearer(from_url, bearer_file)) as service:
            try:
                resolution = service.head(head_id, issuer_key)
                if resolution is not None:
                    for candidate in resolution["candidates"]:
                        documents.append(service.document(str(candidate["cid"])))
            except (ServiceError, KeyError, TypeError) as exc:
                _fail(f"cannot read the head history from {from_url}: {exc}")
    try:
        head = next_head(
            key=signing,
            issuer_id=issuer_id,
            head_id=head_id,
            manifest_cid=manifest,
            previous=documents,
            updated_at=_now(now),
        )
    except AddsError as exc:
        _fail(f"cannot continue the history: {_problems_text(exc.problems)}")
    _emit(head.canonical, out, force=force)
    parents = head.document["parents"]
    merged = f", merging {len(parents)} fork candidates" if len(parents) > 1 else ""
    _note(f"head_cid: {head.cid} (sequence {head.document['sequence']}{merged})")
    if submit is not None:
        _submit(head, "head", submit, _bearer(submit, bearer_file))


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
        help="Only heads signed by this Ed25519 public key (base64url).",
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
            key_bytes = b64url_decode(issuer_key)
        except ValueError as exc:
            _usage(f"--issuer-key is not base64url: {exc}")
        if len(key_bytes) != 32:
            _usage("--issuer-key is a 32-byte Ed25519 public key")
    if from_url is not None:
        if names:
            _usage("give head files or --from URL, not both")
        if head_id is None or issuer_key is None:
            _usage("--from needs --head-id and --issuer-key: the node resolves one history")
        with Service(from_url, _bearer(from_url, bearer_file)) as service:
            try:
                resolution = service.head(head_id, issuer_key)
            except ServiceError as exc:
                _fail(str(exc))
        report: dict[str, Any] = {
            "resolutions": [] if resolution is None else [resolution],
            "rejected": [],
        }
    else:
        if not names:
            _usage("give head files to resolve, or --from URL")
        documents = [_read(name, "head") for name in names]
        report = resolve_heads(documents, head_id=head_id, issuer_key=key_bytes).as_json()
        for rejected in report["rejected"]:
            codes = ", ".join(p["code"] for p in rejected["problems"])
            _note(f"not a valid head: {names[rejected['index']]} ({codes})")
    typer.echo(json.dumps(report, indent=2, ensure_ascii=False))
    if not report["resolutions"]:
        _fail("no valid head found")
    forked = [r for r in report["resolutions"] if r["forked"]]
    for resolution in forked:
        _note(
            f"forked: {resolution['head_id']} of {resolution['issuer_id']} has "
            f"{len(resolution['candidates'])} heads at sequence {resolution['sequence']}"
        )
    if forked:
        raise typer.Exit(3)


# --- a provider's documents -------------------------------------------------------------------


def _endpoint(text: str) -> Endpoint:
    """``TEMPLATE`` or ``TEMPLATE,PRIORITY``; the transport is the template's URI scheme."""
    template, priority = text, None
    head, comma, tail = text.rpartition(",")
    if comma and tail.strip().isdigit():
        template, priority = head, int(tail)
    scheme, separator, _ = template.partition("://")
    if not separator or not re.fullmatch(r"[A-Za-z][A-Za-z0-9+.-]*", scheme):
        _usage(f"--endpoint {text!r}: a URI template with a scheme, e.g. https://host/b/{{cid}}")
    return Endpoint(transport=scheme.lower(), uri_template=template, priority=priority)


def _held_item(store: BlockStore, cid: str) -> InventoryItem:
    """What a local store holds under ``cid``: its size, and its role (the kind of an ADDS
    document, else a block). Reading it verifies it."""
    data = store.get(cid)
    role = Role.BLOCK
    if data[:1] == b"{":
        result = validate(data)
        if result.valid and result.kind is not None:
            role = Role(result.kind)
    return InventoryItem(cid, len(data), role)


def _local_store(location: str) -> BlockStore:
    if _is_url(location):
        _usage("--blocks is the local store these documents describe: a directory, not a URL")
    return _open_store(location, None, create=False)


def _check_signed(document: bytes, kind: str, source: str) -> dict[str, Any]:
    """The parsed document a node sent, when it is a valid, correctly signed ``kind``."""
    result = validate(document)
    if not result.valid or not isinstance(result.document, dict):
        _fail(f"{source} sent an invalid {kind}: {_problems_text(result.errors)}")
    if result.kind != kind:
        _fail(f"{source} sent a {result.kind}, not a {kind}")
    return result.document


def provider_record_command(
    *,
    key: Path | None = typer.Option(
        None, "--key", "-k", help="The provider's Ed25519 private key (PEM).", show_default=False
    ),
    provider_id: str | None = typer.Option(None, "--provider-id", show_default=False),
    record_id: str | None = typer.Option(None, "--record-id", show_default=False),
    sequence: int | None = typer.Option(
        None, "--sequence", min=0, help="Higher than any earlier record's.", show_default=False
    ),
    endpoint: list[str] | None = typer.Option(
        None,
        "--endpoint",
        help="TEMPLATE[,PRIORITY], e.g. 'https://p.example/v1/adds/blocks/{cid},10'; repeat.",
        show_default=False,
    ),
    blocks: str | None = typer.Option(
        None,
        "--blocks",
        help="The local store whose blocks the inventory lists (each read and verified).",
        show_default=False,
    ),
    expires_in: str = typer.Option(DEFAULT_EXPIRY, "--expires-in", help="The record's lifetime."),
    supersedes: str | None = typer.Option(
        None, "--supersedes", help="The CID of the record this one replaces.", show_default=False
    ),
    now: int | None = NOW_OPTION,
    from_url: str | None = typer.Option(
        None,
        "--from",
        help="Instead: fetch and check the current provider record of this node (public).",
        show_default=False,
    ),
    out: Path | None = out_option("record"),
    force: bool = FORCE_OPTION,
) -> None:
    """Sign a provider record listing every block of a local store, or fetch a node's (--from).

    For operators running their own node. The record is validated before it is written; its
    CID is printed on stderr.
    """
    building = {
        "--key": key,
        "--provider-id": provider_id,
        "--record-id": record_id,
        "--sequence": sequence,
        "--endpoint": endpoint or None,
        "--blocks": blocks,
    }
    if out is not None and str(out) != "-":
        _check_writable(out, force)
    if from_url is not None:
        given = [name for name, value in building.items() if value is not None]
        if given or supersedes is not None:
            extra = ", ".join(given) or "--supersedes"
            _usage(f"--from fetches a record; it does not take {extra}")
        with Service(from_url, None) as service:
            try:
                data = service.provider_record()
                _check_signed(data, "provider_record", from_url)
            except ServiceError as exc:
                _fail(str(exc))
        _emit(data, out, force=force)
        _note(f"provider_record_cid: {cid_for_bytes(data)}")
        return
    missing = [name for name, value in building.items() if value is None]
    if missing:
        _usage(f"missing {', '.join(missing)} (or --from URL to fetch a node's record)")
    assert key is not None
    assert provider_id is not None
    assert record_id is not None
    assert sequence is not None
    assert endpoint
    assert blocks is not None
    if supersedes is not None and not _is_cid(supersedes):
        _usage(f"--supersedes {supersedes!r} is not an ADDS CID")
    endpoints = [_endpoint(text) for text in endpoint]
    moment = _now(now)
    expires_at = _expiry(moment, expires_in, None)
    signing = _ed25519_key(key)
    store = _local_store(blocks)
    try:
        inventory = [_held_item(store, cid) for cid in store.cids()]
    except BlockStoreError as exc:
        _store_failure(exc)
    finally:
        store.close()
    if not inventory:
        _fail(f"{blocks} holds no block: a provider record lists at least one item")
    try:
        record = build_provider_record(
            key=signing,
            provider_id=provider_id,
            record_id=record_id,
            sequence=sequence,
            issued_at=moment,
            expires_at=expires_at,
            inventory=inventory,
            endpoints=endpoints,
            supersedes=supersedes,
        )
    except AddsError as exc:
        _fail(f"the record would not be valid: {_problems_text(exc.problems)}")
    _emit(record.canonical, out, force=force)
    _note(f"provider_record_cid: {record.cid} ({len(inventory)} items)")


def receipt_command(
    *,
    items: list[str] = typer.Option(
        ..., "--items", "--item", help="CIDs the receipt covers; repeat, or comma-separate."
    ),
    commitment: str = typer.Option(..., "--commitment", help="store or store_and_serve."),
    request: str | None = typer.Option(
        None,
        "--request",
        help="Ask this provider node for the receipt (POST /v1/adds/receipts).",
        show_default=False,
    ),
    bearer_file: Path | None = BEARER_OPTION,
    key: Path | None = typer.Option(
        None, "--key", "-k", help="The provider's Ed25519 private key (PEM).", show_default=False
    ),
    provider_id: str | None = typer.Option(None, "--provider-id", show_default=False),
    blocks: str | None = typer.Option(
        None,
        "--blocks",
        help="The local store holding the items (each read and verified).",
        show_default=False,
    ),
    retention_days: int | None = typer.Option(
        None, "--retention-days", min=1, help="How long the items are kept.", show_default=False
    ),
    provider_record: str | None = typer.Option(
        None, "--provider-record", help="The CID of the provider's record.", show_default=False
    ),
    receipt_id: str | None = typer.Option(
        None, "--receipt-id", help="Default: a random UUID.", show_default=False
    ),
    now: int | None = NOW_OPTION,
    out: Path | None = out_option("receipt"),
    force: bool = FORCE_OPTION,
) -> None:
    """Sign a storage receipt for items of a local store, or ask a node for one (--request).

    Either way the receipt is validated, and must cover every item asked for, before it is
    written. Its CID is printed on stderr.
    """
    cids = list(dict.fromkeys(c.strip() for text in items for c in text.split(",") if c.strip()))
    bad = [cid for cid in cids if not _is_cid(cid)]
    if bad or not cids:
        _usage(f"--items takes ADDS CIDs: {', '.join(bad) or '(none given)'}")
    if commitment not in {str(c) for c in Commitment}:
        _usage("--commitment is store or store_and_serve")
    if out is not None and str(out) != "-":
        _check_writable(out, force)
    local = {
        "--key": key,
        "--provider-id": provider_id,
        "--blocks": blocks,
        "--retention-days": retention_days,
    }
    if request is not None:
        given = [name for name, value in local.items() if value is not None]
        if provider_record is not None:
            given.append("--provider-record")
        if given:
            _usage(f"--request asks the node, which sets {', '.join(given)} itself")
        with Service(request, _bearer(request, bearer_file)) as service:
            try:
                data = service.receipt(cids, commitment)
            except ServiceError as exc:
                _fail(str(exc))
        covered = receipt_covers(_check_signed(data, "receipt", request), cids)
        if set(covered) != set(cids):
            _fail(f"{request} sent a receipt that does not cover every item asked for")
        _emit(data, out, force=force)
        _note(f"receipt_cid: {cid_for_bytes(data)}")
        return
    missing = [name for name, value in local.items() if value is None]
    if missing:
        _usage(f"missing {', '.join(missing)} (or --request URL to ask a node)")
    assert key is not None
    assert provider_id is not None
    assert blocks is not None
    assert retention_days is not None
    if provider_record is not None and not _is_cid(provider_record):
        _usage(f"--provider-record {provider_record!r} is not an ADDS CID")
    signing = _ed25519_key(key)
    store = _local_store(blocks)
    try:
        held = [_held_item(store, cid) for cid in cids]
    except KeyError:  # BlockNotFound
        _fail(f"{blocks} does not hold every item: a provider commits only to what it has")
    except BlockStoreError as exc:
        _store_failure(exc)
    finally:
        store.close()
    moment = _now(now)
    try:
        receipt = build_receipt(
            key=signing,
            provider_id=provider_id,
            receipt_id=receipt_id or str(uuid.uuid4()),
            issued_at=moment,
            retention_until=moment + retention_days * 86_400,
            commitment=Commitment(commitment),
            items=held,
            provider_record=provider_record,
        )
    except AddsError as exc:
        _fail(f"the receipt would not be valid: {_problems_text(exc.problems)}")
    _emit(receipt.canonical, out, force=force)
    _note(f"receipt_cid: {receipt.cid} ({len(held)} items)")


# --- blocks -----------------------------------------------------------------------------------


def blocks_copy_command(
    source: str = typer.Argument(..., help="From: a store directory, plain directory or URL."),
    target: str = typer.Argument(
        ...,
        help="To: a store directory, plain directory or URL. A missing directory is created as "
        "a hearth store, or as a plain directory with --plain.",
    ),
    cids: list[str] | None = typer.Argument(
        None, help="Only these blocks (default: every block of SOURCE).", show_default=False
    ),
    *,
    plain: bool = typer.Option(
        False, "--plain", help="Create a missing TARGET as a plain directory of CID-named files."
    ),
    bearer_file: Path | None = BEARER_OPTION,
    quiet: bool = QUIET_OPTION,
) -> None:
    """Copy blocks between stores, verifying each when read and again when written.

    Converts hearth's store layout to the plain interchange form (a directory of files named by
    their CIDs) and back, uploads to a provider node and downloads from one. Blocks the target
    already holds are skipped.
    """
    wanted = list(cids or [])
    bad = [cid for cid in wanted if not _is_cid(cid)]
    if bad:
        _usage(f"not ADDS CIDs: {', '.join(bad)}")
    if plain and _is_url(target):
        _usage("--plain makes a local directory; the target is a URL")
    source_store = _open_store(source, _store_bearer(source, bearer_file), create=False)
    try:
        if plain and not Path(target).exists():
            try:
                target_store: BlockStore = DirectoryBlockStore(target, create=True)
            except BlockStoreError as exc:
                _fail(str(exc))
        else:
            target_store = _open_store(target, _store_bearer(target, bearer_file), create=True)
        try:
            listing = wanted or list(source_store.cids())
            done = 0

            with contextlib.ExitStack() as stack:
                if quiet or not errors.is_terminal:
                    advance: Callable[[], None] = lambda: None  # noqa: E731
                else:
                    from rich.progress import (  # noqa: PLC0415 (a bar is drawn: only now)
                        BarColumn,
                        MofNCompleteColumn,
                        Progress,
                        TextColumn,
                        TimeRemainingColumn,
                    )

                    progress = stack.enter_context(
                        Progress(
                            TextColumn("copy"),
                            BarColumn(),
                            MofNCompleteColumn(),
                            TimeRemainingColumn(),
                            console=errors,
                        )
                    )
                    task = progress.add_task("copy", total=len(listing))
                    advance = lambda: progress.advance(task)  # noqa: E731

                def step(_cid: str, _copied: bool) -> None:
                    nonlocal done
                    done += 1
                    advance()

                result = copy_blocks(source_store, target_store, listing, progress=step)
        except BlockStoreError as exc:
            _fail(f"{_store_code(exc)}: {exc} (after {done} of {len(listing)} blocks)")
        finally:
            target_store.close()
    finally:
        source_store.close()
    if not quiet:
        _note(f"copied {result.copied} blocks, {result.present} already present")


# --- registration -----------------------------------------------------------------------------


def register(app: typer.Typer) -> None:
    """Add the object commands to ``hearth adds``."""
    app.command("keygen")(keygen_command)
    app.command("publish")(publish_command)
    app.command("grant")(grant_command)
    app.command("open")(open_command)
    app.command("provider-record")(provider_record_command)
    app.command("receipt")(receipt_command)
    head = typer.Typer(
        help="Heads: sign the next head of a history; resolve current heads and forks.",
        no_args_is_help=True,
    )
    head.command("new")(head_new_command)
    head.command("resolve")(head_resolve_command)
    app.add_typer(head, name="head")
    blocks = typer.Typer(help="Block stores: copy between layouts and nodes.", no_args_is_help=True)
    blocks.command("copy")(blocks_copy_command)
    app.add_typer(blocks, name="blocks")
