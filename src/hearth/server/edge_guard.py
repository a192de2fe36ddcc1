"""The app-wide dependency that applies ``edge_text``'s rule to every request, before any
route's own dependencies run (docs/service.md, "Text the service stores").

The rule itself (what text no database can store, where it is looked for) is ``edge_text.py``,
which knows nothing of the web framework, so that a service parsing raw bytes (ADDS documents)
applies the same rule where it parses.
"""

from __future__ import annotations

from starlette.requests import HTTPConnection, Request

from .edge_text import (
    RISKY_ESCAPE,
    Unstorable,
    find_in_url,
    find_unstorable,
    is_json,
    unreadable_json,
)
from .errors import invalid_json


async def refuse_unstorable(connection: HTTPConnection) -> None:
    """The app-wide dependency: runs before every route's own dependencies (WebSocket routes
    included; a refusal there is sent as the denial response)."""
    found = find_in_url(connection.path_params, connection.query_params.multi_items())
    if found is None and isinstance(connection, Request):
        found = await _in_decoded_body(connection)
    if found is not None:
        raise found.refusal()


async def _in_decoded_body(request: Request) -> Unstorable | None:
    # A route decodes a JSON body only when it declares a body model; the decoded value is
    # cached on the request, so ``request.json()`` below costs nothing.
    if getattr(request.scope.get("route"), "body_field", None) is None:
        return None
    if not is_json(request.headers.get("content-type")):
        return None
    body = await request.body()
    if not body:
        return None
    unreadable = unreadable_json(body)
    if unreadable is not None:
        raise invalid_json(*unreadable)
    if b"\\" not in body or RISKY_ESCAPE.search(body) is None:
        return None
    return find_unstorable(await request.json())
