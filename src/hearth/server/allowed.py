"""The methods a path allows: what a 405's ``Allow`` header lists.

Starlette answers a 405 with the methods of the first route whose path matched, but a path
served by several routes (``GET /v1/keys`` and ``POST /v1/keys`` are two) then advertises only
one of them. RFC 9110 says ``Allow`` lists the methods the target resource supports, so it is
computed here from every route whose path matches. HEAD is listed only where a route declares
it: the service does not answer HEAD for its GET routes (the OpenAPI document says the same).
"""

from __future__ import annotations

from collections.abc import Iterable

from fastapi.routing import iter_route_contexts
from starlette.routing import BaseRoute
from starlette.types import Scope

# The usual order of methods in an Allow header; any other method follows, alphabetically.
_ORDER = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def allowed_methods(routes: Iterable[BaseRoute], scope: Scope) -> list[str]:
    """Every method the HTTP routes of the scope's path serve, in a stable order.

    When templates of different shapes match (``/v1/bootstrap/elevate`` and
    ``/v1/bootstrap/{agent_id}``), the path is the resource of the one with the fewest
    parameters, as in OpenAPI, where a concrete path is matched before a templated one."""
    path = _route_path(scope)
    by_template: dict[str, set[str]] = {}
    for route in iter_route_contexts(list(routes)):
        declared, template = route.methods, route.path_format  # None for WebSocket routes
        if declared and template and route.path_regex.match(path):
            by_template.setdefault(template, set()).update(declared)
    if not by_template:
        return []
    fewest = min(template.count("{") for template in by_template)
    methods = set().union(*(m for t, m in by_template.items() if t.count("{") == fewest))
    return sorted(methods, key=lambda m: (_ORDER.index(m) if m in _ORDER else len(_ORDER), m))


def _route_path(scope: Scope) -> str:
    # Routes match the path below the application's root path, as Starlette's router does.
    path: str = scope["path"]
    root: str = scope.get("root_path", "")
    return path[len(root) :] if root and path.startswith(root) else path


__all__ = ["allowed_methods"]
