"""The ``hearth adds`` commands' side of a provider node: whose bearer to send, and the calls.

A URL store needs a bearer: ``--bearer-file``, else ``$HEARTH_BEARER``, else the ``api_key`` of
the hearth home (``$HEARTH_HOME``) when the home's profile is for that same origin; a home's
bearer is never sent to another origin. The bearer is never printed.

The calls are ``hearth.client.adds.AddsClient``'s, imported only here and only when a node is
reached (httpx2 costs about 0.1 s): a local publish or open never loads them
(tests/cli/test_cli_start.py holds the line). Any ``hearth.client.errors.ClientError`` a call
raises ends the command with exit 1 and one line saying why.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar
from urllib.parse import urlsplit

from hearth.adds import SignedDocument

from ..client_config import home_dir, load_api_key, load_profile
from .options import BEARER_ENV
from .report import fail, note, usage

if TYPE_CHECKING:
    from hearth.client.adds import AddsClient
    from hearth.client.errors import ClientError

__all__ = ["ask", "bearer_for", "connect", "describe", "fetch_document", "submit_document"]

T = TypeVar("T")
# As long as a command waits for a node's answer (a large document, a slow receipt).
TIMEOUT = 60.0


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    default = {"http": 80, "https": 443}.get(parts.scheme)
    return parts.scheme, (parts.hostname or "").lower(), parts.port or default


def bearer_for(url: str, bearer_file: Path | None) -> str:
    """The bearer for a provider URL: --bearer-file, $HEARTH_BEARER, or the home's api_key when
    its profile is for the same origin. A usage error when there is none."""
    if bearer_file is not None:
        try:
            bearer = bearer_file.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            usage(f"cannot read the bearer file {bearer_file}: {exc}")
        if not bearer:
            usage(f"the bearer file {bearer_file} is empty")
        return bearer
    if os.environ.get(BEARER_ENV, "").strip():
        return os.environ[BEARER_ENV].strip()
    home = home_dir(None)
    profile = load_profile(home)
    same_origin = profile is not None and _origin(profile.base_url) == _origin(url)
    key = load_api_key(home) if same_origin else None
    if not key:
        usage(
            f"{url} needs a bearer: pass --bearer-file FILE or set ${BEARER_ENV} (or use a "
            "hearth home registered with that service)"
        )
    return key


@contextlib.contextmanager
def connect(url: str, bearer: str | None) -> Iterator[AddsClient]:
    """The node at ``url``, reached with ``bearer``."""
    from hearth.client.adds import AddsClient  # noqa: PLC0415 (a node is reached: only now)

    with AddsClient(url, bearer=bearer, timeout=TIMEOUT) as node:
        yield node


def describe(exc: ClientError) -> str:
    """One line: what failed or what the node refused, and its problems or missing items."""
    from hearth.client.errors import AddsRefusal  # noqa: PLC0415 (imported by connect already)

    text = str(exc)
    if not isinstance(exc, AddsRefusal) or not isinstance(exc.details, dict):
        return text
    problems = exc.details.get("problems")
    if isinstance(problems, list) and problems:
        listed = "; ".join(
            f"{p.get('code')} at '{p.get('pointer')}'" for p in problems[:10] if isinstance(p, dict)
        )
        text += f" ({listed})"
    missing = exc.details.get("missing")
    if isinstance(missing, list) and missing:
        text += f" (not held: {', '.join(str(m) for m in missing[:10])})"
    return text


def ask(
    url: str,
    bearer: str | None,
    call: Callable[[AddsClient], T],
    prefix: str = "",
    *,
    also: tuple[type[Exception], ...] = (),
) -> T:
    """What ``call`` gets from the node at ``url``; when it fails (or raises one of ``also``),
    exit 1 with ``prefix`` and the reason."""
    from hearth.client.errors import ClientError  # noqa: PLC0415 (a node is reached: only now)

    with connect(url, bearer) as node:
        try:
            return call(node)
        except ClientError as exc:
            fail(prefix + describe(exc))
        except also as exc:
            fail(f"{prefix}{exc}")


def fetch_document(node: AddsClient, cid: str, what: str) -> bytes:
    """A document by CID from ``node``, or exit 1 saying why not."""
    from hearth.client.errors import ClientError  # noqa: PLC0415 (a node is reached: only now)

    try:
        return node.document(cid)
    except ClientError as exc:
        fail(f"cannot fetch the {what}: {describe(exc)}")


def submit_document(document: SignedDocument, what: str, url: str, bearer: str | None) -> None:
    """POST a signed document to a provider node, or exit 1 saying why it was refused."""
    ask(
        url,
        bearer,
        lambda node: node.submit(document.canonical),
        f"the {what} was not submitted: ",
    )
    note(f"submitted the {what} to {url}")
