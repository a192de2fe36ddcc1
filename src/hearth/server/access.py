"""The access log: one JSON line per request, under a request id the response carries.

A caller may name its request (``X-Request-Id``) so that its logs and ours meet. The name must be
a UUID, hyphenated or as 32 hex digits (nginx's ``$request_id``), and is used in its hyphenated
lower-case form: the specification makes a 500's ``request_id`` a uuid, and one id is carried
everywhere (header, log, body). Anything else is replaced by a new UUIDv4, so nothing a client
writes can break a log line or grow it without bound. The line holds what identifies the request
and never what it carried: the route template (not the raw path, which may hold ids), no query
string, no header, no body.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Iterable

import structlog

REQUEST_ID_HEADER = b"x-request-id"
_UUID = re.compile(
    rb"[0-9A-Fa-f]{8}-?[0-9A-Fa-f]{4}-?[0-9A-Fa-f]{4}-?[0-9A-Fa-f]{4}-?[0-9A-Fa-f]{12}"
)

log = structlog.get_logger("hearth.access")


def request_id_of(headers: Iterable[tuple[bytes, bytes]]) -> str:
    """The request's own ``X-Request-Id`` when it is a UUID (hyphenated form), else a new UUIDv4.

    Header names are compared lower-cased (uvicorn lower-cases them; raw parsers may not)."""
    for name, value in headers:
        if name.lower() == REQUEST_ID_HEADER:
            if _UUID.fullmatch(value):
                return str(uuid.UUID(value.decode("ascii")))
            break  # the first one counts; a bad one is replaced, never searched past
    return str(uuid.uuid4())


def log_request(
    request_id: str, method: str | None, route: str | None, status: int, started: float
) -> None:
    """The access line; ``started`` is a ``time.perf_counter()`` reading. ``route`` is the
    matched template, or None when no route answered (unknown URL, refused head)."""
    log.info(
        "request",
        request_id=request_id,
        method=method,
        route=route,
        status=status,
        duration_ms=round((time.perf_counter() - started) * 1000, 2),
    )
