"""What the route modules share: error responses for the OpenAPI document."""

from __future__ import annotations

from typing import Any

from fastapi import Query

from ..json_types import JsonObject
from ..models import ErrorBody

_DESCRIPTIONS = {
    400: "Malformed request (for example a body that is not JSON).",
    401: "Missing, unknown or revoked project bearer.",
    402: "Insufficient credits.",
    403: "Authenticated but not allowed.",
    404: "Not found (another project's resources do not exist for this bearer).",
    409: "Conflict: a single-use value already used, or a root proof's sequence or lease.",
    410: "Gone.",
    413: "Request body too large.",
    422: "Validation or proof failure, or text the service cannot store (NUL).",
    426: "Upgrade required: this path is a WebSocket.",
    428: "Root proof required: details carry next_sequence, the headers and the recipe.",
    429: "Rate limited; see Retry-After.",
    431: "Request header fields too large (or too many).",
    500: "Internal error with an opaque request_id.",
    501: "Not implemented in this configuration.",
    503: "A dependency is unavailable.",
}


def errors(*statuses: int) -> dict[int | str, JsonObject]:
    """Error responses of a route; 400, 413 and 500 can happen anywhere a body is read."""
    every = sorted({*statuses, 400, 413, 500})
    return {s: {"model": ErrorBody, "description": _DESCRIPTIONS[s]} for s in every}


ROOTED = (401, 404, 409, 422, 428)


def cursor_query(pattern: str, max_length: int = 200) -> Any:
    """The ``cursor`` of a listing: ``next_cursor`` of the previous page. Its format is
    ``pattern``, shown in the OpenAPI document and enforced by the service's own decoder (400
    ``invalid_cursor``, like any cursor it did not make) rather than by FastAPI's validation.
    Called once per route: FastAPI must not analyse one parameter object twice."""
    return Query(
        max_length=max_length,
        description="next_cursor of the previous page",
        json_schema_extra={"pattern": pattern},
    )
