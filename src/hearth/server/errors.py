"""The refusals of the specification: an ``ApiError`` is a status, a machine code, a message.

Every refusal in the service is an ``ApiError`` (or the ``ProblemsError`` kind), raised by
services and the edge alike. This module knows nothing of the web framework, so services raise
refusals without depending on it; ``error_handlers.py`` turns them, FastAPI's validation errors,
unknown routes and unexpected exceptions into the one JSON shape.
"""

from __future__ import annotations

from hearth.proofs import AUTHORITY_HEADERS

from .json_types import JsonObject

DOCS = "/v1/pathways"


class ApiError(Exception):
    """A refusal with its status, machine code and human message."""

    def __init__(
        self,
        status: int,
        error: str,
        message: str,
        *,
        details: JsonObject | None = None,
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

    def body(self) -> JsonObject:
        body: JsonObject = {"error": self.error, "message": self.message}
        for name in ("details", "hint", "docs", "next_actions"):
            value = getattr(self, name)
            if value is not None:
                body[name] = value
        return body


class ProblemsError(ApiError):
    """A refusal whose ``details`` is a list of problems, each ``loc``, ``message`` and
    ``type`` and never the input value: the shape of ``validation_error``."""

    def __init__(
        self,
        status: int,
        error: str,
        message: str,
        problems: list[JsonObject],
        *,
        hint: str | None = None,
    ) -> None:
        super().__init__(status, error, message, hint=hint)
        self.problems = problems

    def body(self) -> JsonObject:
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
