"""``X-Tutor``: a request header that adds ``_tutor`` guidance for the route to JSON bodies."""

from __future__ import annotations

from .json_types import JsonObject

_GUIDE: dict[str, str] = {
    "/public/porch": "Nothing here is about you, and nothing is written. Next: GET /v1/pathways.",
    "/public/plans": "pow_difficulty_bits is live: solve service-pow/v1 at this difficulty.",
    "/v1/pathways": "Pin the client at first_success.tutorial.sdk_version.",
    "/v1/register/agent": "Keep the api_key: it is shown once. Your root key signs mutations.",
    "/v1/keys": "Every key has project-wide authority; names only help you revoke.",
    "/v1/identity/recover": "First 428 with next_sequence; then repeat the body with a root proof.",
    "/v1/bootstrap": "The private key is in this response only. Store it now.",
}


def tutor_for(method: str, path: str) -> JsonObject:
    text = _GUIDE.get(path)
    if text is None and path.startswith("/v1/identities/"):
        text = "Root-proof routes: read next_sequence from the authority route, sign, send."
    return {
        "route": f"{method} {path}",
        "guidance": text or "GET /v1/pathways lists every door; /v1/openapi.json is the contract.",
    }
