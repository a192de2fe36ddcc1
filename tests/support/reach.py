"""Which operations of the OpenAPI document real requests reached: an ASGI layer around the
served app lets each arriving request (HTTP or WebSocket) through, then reads the route the
app's own router dispatched it to (``scope["route"]``, set by the router as it matches) and
records its (method, path template)."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Any, Any], Awaitable[None]]
_METHODS = ("get", "post", "put", "patch", "delete")
_CONVERTER = re.compile(r"\{(\w+):\w+\}")


def openapi_operations(app: Any) -> set[tuple[str, str]]:
    """Every (METHOD, path template) the app's OpenAPI document lists."""
    paths: dict[str, dict[str, Any]] = app.openapi()["paths"]
    return {(m.upper(), path) for path, item in paths.items() for m in item if m in _METHODS}


class Recorder:
    """Wraps the served app; ``reached`` holds each operation a request was routed to, and
    ``unrouted`` each request no route took."""

    def __init__(self) -> None:
        self.reached: set[tuple[str, str]] = set()
        self.unrouted: list[tuple[str, str]] = []

    def wrap(self, app: Any) -> ASGIApp:
        async def recording(scope: Scope, receive: Any, send: Any) -> None:
            try:
                await app(scope, receive, send)
            finally:
                if scope["type"] in ("http", "websocket"):
                    self.record(scope)

        return recording

    def record(self, scope: Scope) -> None:
        # A WebSocket route is documented as GET (its upgrade request).
        method = scope.get("method", "GET") if scope["type"] == "http" else "GET"
        route = scope.get("route")
        path = getattr(route, "path", None)
        if isinstance(path, str):
            # ``{head_id:path}`` is routed with its converter and documented without it.
            self.reached.add((method, _CONVERTER.sub(r"{\1}", path)))
        else:
            self.unrouted.append((method, scope["path"]))
