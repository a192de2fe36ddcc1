"""The bridge's WebSocket frames as JSON Schemas, for the OpenAPI document (docs/bridge.md).

OpenAPI 3.1 has no object for a WebSocket: the document describes the upgrade as an operation
(``GET /v1/runtimes/{runtime_id}/bridge``, answered 101) and lists the frames in that
operation's ``x-websocket`` extension, which refers to these schemas in
``components.schemas``. They describe what ``connection.py``, ``hub.py`` and the sidecar send and
check; the tests validate frames those produce against them.
"""

from __future__ import annotations

from typing import Final

from hearth.proofs.bridge import OPS, PROTOCOL, REPLAY_WINDOW_S

from ..json_types import JsonObject
from .connection import (
    CLOSE_AUTH_FAILED,
    CLOSE_GONE,
    CLOSE_HANDSHAKE_TIMEOUT,
    CLOSE_REPLACED,
    CLOSE_UNAVAILABLE,
    SUBPROTOCOL,
    TOKEN_SUBPROTOCOL_PREFIX,
)

_UUID: Final = {"type": "string", "format": "uuid"}
# Canonical standard base64 (padded), as hearth.proofs.encoding.b64_decode reads it.
_B64_TEXT: Final = "^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$"
_B64: Final = {"type": "string", "pattern": _B64_TEXT}
_NONCE_32: Final = {**_B64, "description": "32 random bytes, standard base64 (44 characters)"}


def _frame(kind: str, description: str, properties: JsonObject) -> JsonObject:
    return {
        "type": "object",
        "description": description,
        "properties": {"type": {"const": kind}, **properties},
        "required": ["type", *properties],
    }


SCHEMAS: Final[dict[str, JsonObject]] = {
    "BridgeChallenge": _frame(
        "challenge",
        "service -> bridge, first frame after the upgrade.",
        {
            "protocol": {"const": PROTOCOL},
            "runtime_id": _UUID,
            "server_nonce": _NONCE_32,
            "runtime_public_key": {
                **_B64,
                "description": "the per-runtime Ed25519 key that signs every request",
            },
            "replay_window_s": {"const": REPLAY_WINDOW_S},
        },
    ),
    "BridgeAuth": _frame(
        "auth",
        "bridge -> service, within 10 s of the challenge (close 4408 otherwise).",
        {
            "bridge_nonce": _NONCE_32,
            "signature": {
                **_B64,
                "description": "Ed25519 by the registered bridge key over SHA-256 of "
                "bridge-auth/v1 0x00 runtime id 0x00 server_nonce 0x00 bridge_nonce",
            },
        },
    ),
    "BridgeReady": _frame(
        "ready",
        "service -> bridge: the handshake succeeded; requests may follow.",
        {
            "runtime_id": _UUID,
            "session_id": {"type": "string"},
            "status": {"type": "string", "description": "the runtime's status"},
        },
    ),
    "BridgeError": _frame(
        "error",
        "service -> bridge, just before the service closes the connection.",
        {"error": {"type": "string"}, "message": {"type": "string"}},
    ),
    "BridgeRequest": {
        **_frame(
            "request",
            "service -> bridge: decrypt or encrypt under K_master, signed by the runtime key.",
            {
                "op": {"enum": list(OPS)},
                "request_id": _UUID,
                "nonce": {**_B64, "description": "12 bytes, standard base64"},
                "ciphertext_or_plaintext": _B64,
                "context": {
                    "type": "object",
                    "properties": {
                        "strand_id": _UUID,
                        "thought_seq": {"type": "integer", "minimum": 0},
                        "issued_at": {"type": "string", "format": "date-time"},
                    },
                    "required": ["strand_id", "thought_seq", "issued_at"],
                    "additionalProperties": False,
                },
                "signature": _B64,
            },
        ),
        "additionalProperties": False,
    },
    "BridgeReply": _frame(
        "reply",
        "bridge -> service: the answer to one request, authenticated by the session HMAC.",
        {
            "request_id": _UUID,
            "result": {
                "oneOf": [
                    {
                        "type": "object",
                        "properties": {"plaintext": _B64},
                        "required": ["plaintext"],
                        "additionalProperties": False,
                    },
                    {
                        "type": "object",
                        "properties": {"nonce": _B64, "ciphertext": _B64},
                        "required": ["nonce", "ciphertext"],
                        "additionalProperties": False,
                    },
                    {
                        "type": "object",
                        "properties": {"error": {"type": "string"}, "message": {"type": "string"}},
                        "required": ["error", "message"],
                        "additionalProperties": False,
                    },
                ]
            },
            "hmac": {
                **_B64,
                "description": "HMAC-SHA256 under the session secret over request_id 0x00 "
                "RFC 8785 JSON of result",
            },
        },
    ),
}

_REF = "#/components/schemas/"

# The operation's ``x-websocket`` extension: subprotocols, frames in each direction, close codes.
EXTENSION: Final[JsonObject] = {
    "subprotocols": [SUBPROTOCOL, f"{TOKEN_SUBPROTOCOL_PREFIX}<control token>"],
    "frames": "JSON text, one object per frame, each with a `type`.",
    "server_to_client": [
        {"$ref": _REF + name}
        for name in ("BridgeChallenge", "BridgeReady", "BridgeRequest", "BridgeError")
    ],
    "client_to_server": [{"$ref": _REF + name} for name in ("BridgeAuth", "BridgeReply")],
    "close_codes": {
        str(CLOSE_REPLACED): "replaced by a newer bridge connection (final)",
        "4001": "closed by the service (the runtime was deleted or its token rotated)",
        str(CLOSE_AUTH_FAILED): "the auth frame did not verify (final)",
        str(CLOSE_GONE): "the runtime went away during the handshake",
        str(CLOSE_HANDSHAKE_TIMEOUT): "no auth frame in time",
        str(CLOSE_UNAVAILABLE): "the service cannot open the runtime's key",
    },
}

__all__ = ["EXTENSION", "SCHEMAS"]
