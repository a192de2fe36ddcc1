"""The handlers that turn refusals into responses: one JSON shape for every error.

``ApiError`` (errors.py), FastAPI's validation errors, Starlette's HTTP exceptions (unknown routes,
methods, unparsable bodies) all answer ``{"error", "message"}`` here. No stack trace ever reaches a
client: a 500 carries an opaque ``request_id`` that is also in the log line with the trace
(middleware.py).
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from .allowed import allowed_methods
from .errors import DOCS, ApiError, invalid_json
from .json_types import JsonObject


def response_of(refusal: ApiError) -> JSONResponse:
    return JSONResponse(refusal.body(), status_code=refusal.status, headers=refusal.headers)


def _unparsable_body(exc: StarletteHTTPException) -> ApiError | None:
    """FastAPI answers a body its JSON parser raised on (anything but a syntax error) with a
    bare 400 "There was an error parsing the body", raised from the parser's exception. Bytes
    that are not UTF-8, nesting that exhausts the recursion, and an integer with more digits than
    Python converts are all bodies that are not JSON this service reads: 400 ``invalid_json``."""
    cause = exc.__cause__
    if exc.status_code != 400 or cause is None:
        return None
    if isinstance(cause, UnicodeDecodeError):
        return invalid_json("json_not_utf8", f"The body is not UTF-8 (byte {cause.start}).")
    if isinstance(cause, RecursionError):
        return invalid_json("json_too_deep", "The body nests too deeply to parse.")
    if isinstance(cause, ValueError):  # int() refusing a literal of thousands of digits
        return invalid_json("json_number_too_long", "The body holds a number too long to parse.")
    return None


_GUIDED_404 = {
    "hint": "Start at GET /v1/pathways: it lists every door of this service.",
    "next_actions": [
        "GET /v1/pathways",
        "GET /v1/welcome",
        "GET /public/porch",
        "GET /v1/openapi.json",
    ],
}


def install(app: FastAPI) -> None:
    async def api_error(_request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, ApiError)
        return response_of(exc)

    async def http_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        unparsable = _unparsable_body(exc)
        if unparsable is not None:
            return response_of(unparsable)
        if exc.status_code == 404:
            return JSONResponse(
                {
                    "error": "not_found",
                    "message": f"There is no route at {request.url.path}.",
                    **_GUIDED_404,
                    "docs": DOCS,
                },
                status_code=404,
            )
        if exc.status_code == 405:
            return JSONResponse(
                {
                    "error": "method_not_allowed",
                    "message": f"{request.method} is not allowed on {request.url.path}.",
                },
                status_code=405,
                # Every method of the path, not only those of the route that matched first.
                headers={"Allow": ", ".join(allowed_methods(request.app.routes, request.scope))},
            )
        detail = exc.detail if isinstance(exc.detail, str) else "Request refused."
        return JSONResponse(
            {"error": _code(exc.status_code), "message": detail},
            status_code=exc.status_code,
            headers=dict(exc.headers or {}),
        )

    async def validation_error(_request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        problems = [_problem(error) for error in exc.errors()]
        if any(p["type"] == "json_invalid" for p in problems):
            return JSONResponse(
                {
                    "error": "invalid_json",
                    "message": "The request body is not valid JSON.",
                    "details": problems,
                },
                status_code=400,
            )
        return JSONResponse(
            {
                "error": "validation_error",
                "message": "The request does not match what this route accepts.",
                "details": problems,
            },
            status_code=422,
        )

    app.add_exception_handler(ApiError, api_error)
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(RequestValidationError, validation_error)


def _problem(error: Any) -> JsonObject:
    # The input value is left out on purpose: it may be a secret the caller misplaced.
    return {
        "loc": [str(part) for part in error.get("loc", ())],
        "message": str(error.get("msg", "invalid")),
        "type": str(error.get("type", "invalid")),
    }


def _code(status: int) -> str:
    return {
        400: "bad_request",
        401: "unauthorized",
        403: "forbidden",
        409: "conflict",
        410: "gone",
        413: "payload_too_large",
        415: "unsupported_media_type",
    }.get(status, "error")
