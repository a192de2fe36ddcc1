"""The error model of the specification: JSON bodies with ``error`` and ``message``.

Every refusal in the service is an ``ApiError``; the handlers here turn it, FastAPI's validation
errors, unknown routes and unexpected exceptions into the one shape. No stack trace ever reaches
a client: a 500 carries an opaque ``request_id`` that is also in the log line with the trace.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from hearth.proofs import AUTHORITY_HEADERS

from .allowed import allowed_methods

DOCS = "/v1/pathways"


class ApiError(Exception):
    """A refusal with its status, machine code and human message."""

    def __init__(
        self,
        status: int,
        error: str,
        message: str,
        *,
        details: dict[str, Any] | None = None,
        hint: str | None = None,
        docs: str | None = None,
        next_actions: list[str] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.error = error
        self.message = message
        self.details = details
        self.hint = hint
        self.docs = docs
        self.next_actions = next_actions
        self.headers = headers

    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = {"error": self.error, "message": self.message}
        for name in ("details", "hint", "docs", "next_actions"):
            value = getattr(self, name)
            if value is not None:
                body[name] = value
        return body

    def response(self) -> JSONResponse:
        return JSONResponse(self.body(), status_code=self.status, headers=self.headers)


class ProblemsError(ApiError):
    """A refusal whose ``details`` is a list of problems, each ``loc``, ``message`` and
    ``type`` and never the input value: the shape of ``validation_error``."""

    def __init__(
        self,
        status: int,
        error: str,
        message: str,
        problems: list[dict[str, Any]],
        *,
        hint: str | None = None,
    ) -> None:
        super().__init__(status, error, message, hint=hint)
        self.problems = problems

    def body(self) -> dict[str, Any]:
        return {**super().body(), "details": self.problems}


def unauthorized(message: str = "A valid project bearer is required.") -> ApiError:
    return ApiError(
        401,
        "unauthorized",
        message,
        hint="Send `Authorization: Bearer <API_KEY>`; a project key comes from "
        "POST /v1/register/agent (once) or POST /v1/keys.",
        docs=DOCS,
        headers={"WWW-Authenticate": 'Bearer realm="hearth"'},
    )


def not_found(what: str) -> ApiError:
    """Resource-specific not-found: small on purpose (it must not tell projects apart)."""
    return ApiError(404, "not_found", f"{what} not found.")


AUTHORITY_RECIPE = {
    "context": "identity-authority/v1",
    "fields": [
        "identity DID",
        "uppercase HTTP method",
        "request target (absolute path and query, starting with /, no fragment)",
        "lowercase hex sha256 of the raw request body bytes",
        "sequence as decimal text",
        "timestamp (the X-Service-Authority-Timestamp value)",
    ],
    "bytes": "context, then for each field a 0x00 byte followed by the field as UTF-8",
    "signature": "ed25519 over the SHA-256 digest of those bytes, standard base64 (64 bytes)",
    "body": "the body signed must be byte-identical to the body sent",
}


def authority_required(next_sequence: int, missing: list[str], did: str) -> ApiError:
    return ApiError(
        428,
        "authority_proof_required",
        "This mutation needs the identity's root key to sign the exact request.",
        details={
            "next_sequence": next_sequence,
            "did": did,
            "missing_headers": missing,
            "headers": list(AUTHORITY_HEADERS),
            "recipe": AUTHORITY_RECIPE,
        },
        hint="Sign the exact request with the root key and repeat it with the three headers.",
        docs=DOCS,
    )


def invalid_json(problem: str, message: str) -> ApiError:
    """400 ``invalid_json``, in the shape FastAPI's own JSON syntax errors get here."""
    return ProblemsError(
        400,
        "invalid_json",
        "The request body is not valid JSON.",
        [{"loc": ["body"], "message": message, "type": problem}],
    )


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
        return exc.response()

    async def http_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        unparsable = _unparsable_body(exc)
        if unparsable is not None:
            return unparsable.response()
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


def _problem(error: Any) -> dict[str, Any]:
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
