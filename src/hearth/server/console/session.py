"""Who is signed in, and whether a form may act (docs/console.md, "Sessions" and "Forms").

The cookie holds a random session id, nothing else; the database maps its hash to the project
key (services/console_sessions.py). Every POST carries the session's form token (a synchronizer
token, compared in constant time) and, when the browser sends one, an Origin that is this
service's own; a cross-site fetch (``Sec-Fetch-Site: cross-site``) is refused whatever it
carries. A refusal is the service's JSON error shape, 403 ``console_form_refused``, and changes
nothing.
"""

from __future__ import annotations

import hmac
from typing import Annotated
from urllib.parse import parse_qsl, urlsplit

from fastapi import Depends, Request

from ..auth import HearthDep
from ..edge_text import find_unstorable
from ..errors import ApiError
from ..services import console_sessions
from ..services.console_sessions import ConsoleSession

COOKIE = "hearth_console"
PATH = "/console"
FORM_TYPE = "application/x-www-form-urlencoded"


class SignInNeeded(Exception):
    """A page asked for without a live session: answered with a redirect to the sign-in page."""


def form_refused(message: str) -> ApiError:
    return ApiError(
        403,
        "console_form_refused",
        message,
        hint="Reload the console page and submit its form again.",
        docs="docs/console.md#forms",
    )


async def optional_session(request: Request, hearth: HearthDep) -> ConsoleSession | None:
    session_id = request.cookies.get(COOKIE)
    if not session_id:
        return None
    return await hearth.db.snapshot(console_sessions.find, session_id)


async def require_session(
    session: Annotated[ConsoleSession | None, Depends(optional_session)],
) -> ConsoleSession:
    if session is None:
        raise SignInNeeded
    return session


SessionDep = Annotated[ConsoleSession, Depends(require_session)]


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def own_origin(request: Request, public_base_url: str | None) -> str:
    """Where the console's pages come from as the browser sees them: the configured public
    address (behind a TLS proxy the socket's is not what the browser uses), else the request's."""
    return _origin(public_base_url) if public_base_url else _origin(str(request.url))


def over_tls(request: Request, public_base_url: str | None) -> bool:
    """Whether the browser reaches the console over TLS: TLS on this socket, or a public
    address that is https (TLS ends at a proxy in front)."""
    return request.url.scheme == "https" or (public_base_url or "").startswith("https://")


def check_origin(request: Request, public_base_url: str | None) -> None:
    """Refuse a POST another site's page sent, by the browser's own verdict (``Sec-Fetch-Site``)
    or by its Origin. Under ``Referrer-Policy: no-referrer`` Chromium sends ``Origin: null`` with
    the console's own forms, so ``null`` is taken only when the browser also says the request is
    same-origin."""
    site = request.headers.get("sec-fetch-site")
    if site is not None and site not in {"same-origin", "none"}:
        raise form_refused("The form was sent from another site.")
    origin = request.headers.get("origin")
    if origin is None or origin == own_origin(request, public_base_url):
        return
    if origin == "null" and site == "same-origin":
        return
    raise form_refused("The form was sent from another origin than this console.")


async def read_form(request: Request) -> dict[str, str]:
    """The POSTed form's fields (URL-encoded; the last value of a repeated name)."""
    ctype = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if ctype != FORM_TYPE:
        raise form_refused(f"A console form is sent as {FORM_TYPE}.")
    raw = (await request.body()).decode("utf-8", errors="replace")
    fields = dict(parse_qsl(raw, keep_blank_values=True))
    unstorable = find_unstorable(fields, ("form",))
    if unstorable is not None:
        raise unstorable.refusal()
    return fields


async def checked_form(
    request: Request, session: ConsoleSession, public_base_url: str | None
) -> dict[str, str]:
    """A POST's fields once its origin and form token are checked (before anything is done)."""
    check_origin(request, public_base_url)
    fields = await read_form(request)
    token = fields.pop("csrf", "")
    if not hmac.compare_digest(token.encode(), session.csrf_token.encode()):
        raise form_refused("The form's token is missing or is not this session's.")
    return fields
