"""The bridge protocol's cryptography, pure (no I/O, no clock of its own): shared by the hub
(``hearth.server.bridge``) and the user-side sidecar (``hearth.client.bridge``).

Decisions (docs/bridge.md):

- Handshake proof: Ed25519 by the bridge's registered key over the SHA-256 of the recipe bytes
  ``bridge-auth/v1`` 0x00 runtime id 0x00 server nonce 0x00 bridge nonce, the nonces entering
  as their standard base64 text (DESIGN.md: text fields enter exactly as sent).
- Session secret: HKDF-SHA256 with the control token (UTF-8) as input key material, the raw
  server nonce followed by the raw bridge nonce as salt, and ``bridge-session/v1`` as info;
  32 bytes.
- Requests: the specification's fields, signed by the per-runtime key over
  :func:`hearth.proofs.recipes.bridge_request_digest`; valid within 60 s of ``issued_at`` (in
  either direction) and once per ``request_id``.
- Replies: HMAC-SHA256 under the session secret over ``request_id`` 0x00 the RFC 8785 JSON of
  the ``result`` object (a result, or ``{"error", "message"}`` for a refusal).
- Thoughts themselves (AES-256-GCM under K_master, AAD ``strand-thought/v1`` 0x00 strand id
  0x00 thought_seq) are sealed and opened by :mod:`hearth.proofs.thoughts`, the one definition.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

import rfc8785

from .encoding import EncodingError, b64_decode, b64_encode, parse_timestamp
from .kdf import hkdf
from .key_types import Ed25519PrivateKey
from .recipes import bridge_request_digest, recipe_bytes, sign_digest, verify_digest

AUTH_CONTEXT: Final = "bridge-auth/v1"
SESSION_INFO: Final = b"bridge-session/v1"
PROTOCOL: Final = "hearth-bridge/v1"
OPS: Final = ("decrypt", "encrypt")
REPLAY_WINDOW_S: Final = 60
HANDSHAKE_NONCE_BYTES: Final = 32
GCM_NONCE_BYTES: Final = 12
SECRET_BYTES: Final = 32
_CONTEXT_KEYS: Final = frozenset({"strand_id", "thought_seq", "issued_at"})
_REQUEST_KEYS: Final = frozenset(
    {"type", "op", "request_id", "nonce", "ciphertext_or_plaintext", "context", "signature"}
)


class RequestRefused(ValueError):
    """A bridge request that must not be acted on; ``code`` is the reply's ``error``."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


# --- handshake ----------------------------------------------------------------------------------


def new_handshake_nonce() -> str:
    """32 random bytes, standard base64: one side's contribution to the session."""
    return b64_encode(os.urandom(HANDSHAKE_NONCE_BYTES))


def bridge_auth_bytes(runtime_id: str, server_nonce: str, bridge_nonce: str) -> bytes:
    """``bridge-auth/v1`` 0x00 runtime id 0x00 server nonce 0x00 bridge nonce (base64 texts)."""
    return recipe_bytes(AUTH_CONTEXT, (runtime_id, server_nonce, bridge_nonce))


def bridge_auth_digest(runtime_id: str, server_nonce: str, bridge_nonce: str) -> bytes:
    return hashlib.sha256(bridge_auth_bytes(runtime_id, server_nonce, bridge_nonce)).digest()


def sign_bridge_auth(
    key: Ed25519PrivateKey, runtime_id: str, server_nonce: str, bridge_nonce: str
) -> str:
    return sign_digest(key, bridge_auth_digest(runtime_id, server_nonce, bridge_nonce))


def verify_bridge_auth(
    public_key: bytes, signature: str, runtime_id: str, server_nonce: str, bridge_nonce: str
) -> bool:
    """True when the bridge's signature verifies under its registered key; never raises."""
    return verify_digest(
        public_key, signature, bridge_auth_digest(runtime_id, server_nonce, bridge_nonce)
    )


def session_secret(control_token: str, server_nonce: str, bridge_nonce: str) -> bytes:
    """HKDF-SHA256(ikm = control token, salt = server nonce || bridge nonce (raw bytes),
    info = ``bridge-session/v1``): 32 bytes, fresh per connection since both nonces are."""
    salt = b64_decode(server_nonce, length=HANDSHAKE_NONCE_BYTES, what="server nonce")
    salt += b64_decode(bridge_nonce, length=HANDSHAKE_NONCE_BYTES, what="bridge nonce")
    return hkdf(control_token.encode("utf-8"), SESSION_INFO, salt=salt, length=SECRET_BYTES)


# --- replies ------------------------------------------------------------------------------------


def reply_mac_input(request_id: str, result: Mapping[str, Any]) -> bytes:
    canonical: bytes = rfc8785.dumps(json.loads(json.dumps(dict(result))))
    return request_id.encode("utf-8") + b"\x00" + canonical


def reply_mac(secret: bytes, request_id: str, result: Mapping[str, Any]) -> str:
    """HMAC-SHA256 over request_id 0x00 RFC 8785 JSON of ``result``, standard base64."""
    mac = hmac.new(secret, reply_mac_input(request_id, result), hashlib.sha256).digest()
    return b64_encode(mac)


def reply_mac_ok(secret: bytes, request_id: str, result: Mapping[str, Any], mac: object) -> bool:
    """Constant-time check of a reply's HMAC; never raises."""
    if not isinstance(mac, str):
        return False
    try:
        expected = reply_mac(secret, request_id, result)
    except (TypeError, ValueError):
        return False
    return hmac.compare_digest(expected.encode("ascii"), mac.encode("utf-8", "replace"))


# --- requests -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class BridgeRequest:
    """A request as the bridge received it, its fields checked for shape (not yet trusted)."""

    op: str
    request_id: str
    nonce: str
    payload: str
    strand_id: str
    thought_seq: int
    issued_at: str
    signature: str

    @property
    def context(self) -> dict[str, Any]:
        return {
            "strand_id": self.strand_id,
            "thought_seq": self.thought_seq,
            "issued_at": self.issued_at,
        }

    def digest(self) -> bytes:
        return bridge_request_digest(
            self.request_id, self.op, self.payload, self.nonce, self.context
        )

    def nonce_bytes(self) -> bytes:
        return b64_decode(self.nonce, length=GCM_NONCE_BYTES, what="nonce")

    def payload_bytes(self) -> bytes:
        return b64_decode(self.payload, what="ciphertext_or_plaintext")


def build_request(
    key: Ed25519PrivateKey,
    *,
    op: str,
    payload: bytes,
    nonce: bytes,
    strand_id: str,
    thought_seq: int,
    issued_at: str,
    request_id: str | None = None,
) -> dict[str, Any]:
    """A signed request message (the JSON object sent to the bridge)."""
    if op not in OPS:
        raise ValueError(f"unknown bridge op {op!r}")
    if len(nonce) != GCM_NONCE_BYTES:
        raise ValueError("a bridge request's nonce is 12 bytes")
    request_id = request_id or str(uuid.uuid4())
    context = {"strand_id": strand_id, "thought_seq": thought_seq, "issued_at": issued_at}
    payload_b64 = b64_encode(payload)
    nonce_b64 = b64_encode(nonce)
    digest = bridge_request_digest(request_id, op, payload_b64, nonce_b64, context)
    return {
        "type": "request",
        "op": op,
        "request_id": request_id,
        "nonce": nonce_b64,
        "ciphertext_or_plaintext": payload_b64,
        "context": context,
        "signature": sign_digest(key, digest),
    }


def _canonical_uuid(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise RequestRefused("malformed_request", f"{what} must be a UUID string")
    try:
        canonical = str(uuid.UUID(value))
    except ValueError:
        raise RequestRefused("malformed_request", f"{what} is not a UUID") from None
    if canonical != value:
        raise RequestRefused("malformed_request", f"{what} must be a lower-case hyphenated UUID")
    return canonical


def parse_request(message: Mapping[str, Any]) -> BridgeRequest:
    """Check a request's shape (RequestRefused ``malformed_request`` otherwise). Nothing about
    its authenticity is known yet: see :func:`verify_request`."""
    if set(message) != _REQUEST_KEYS:
        raise RequestRefused(
            "malformed_request", f"a request has exactly the fields {sorted(_REQUEST_KEYS)}"
        )
    op = message["op"]
    if op not in OPS:
        raise RequestRefused("unknown_op", f"op must be one of {list(OPS)}")
    request_id = _canonical_uuid(message["request_id"], "request_id")
    context = message["context"]
    if not isinstance(context, Mapping) or set(context) != _CONTEXT_KEYS:
        raise RequestRefused(
            "malformed_request", f"context has exactly the fields {sorted(_CONTEXT_KEYS)}"
        )
    strand_id = _canonical_uuid(context["strand_id"], "context.strand_id")
    seq = context["thought_seq"]
    if not isinstance(seq, int) or isinstance(seq, bool) or seq < 0 or seq >= 2**63:
        raise RequestRefused("malformed_request", "context.thought_seq is an integer >= 0")
    issued_at = context["issued_at"]
    for name in ("nonce", "ciphertext_or_plaintext", "signature"):
        if not isinstance(message[name], str):
            raise RequestRefused("malformed_request", f"{name} must be a base64 string")
    if not isinstance(issued_at, str):
        raise RequestRefused("malformed_request", "context.issued_at must be a timestamp")
    request = BridgeRequest(
        op=op,
        request_id=request_id,
        nonce=message["nonce"],
        payload=message["ciphertext_or_plaintext"],
        strand_id=strand_id,
        thought_seq=seq,
        issued_at=issued_at,
        signature=message["signature"],
    )
    try:
        request.nonce_bytes()
        request.payload_bytes()
        parse_timestamp(issued_at)
    except EncodingError as exc:
        raise RequestRefused("malformed_request", str(exc)) from None
    return request


def verify_request(runtime_public_key: bytes, request: BridgeRequest) -> None:
    """RequestRefused ``bad_signature`` unless the per-runtime key signed exactly this request."""
    if not verify_digest(runtime_public_key, request.signature, request.digest()):
        raise RequestRefused(
            "bad_signature", "the request is not signed by this runtime's key over its bytes"
        )


class ReplayGuard:
    """The 60 s replay window and request_id uniqueness, in memory.

    A request is fresh when ``issued_at`` is within the window of the bridge's clock in either
    direction (clocks drift both ways). An id is remembered until its request could no longer
    be fresh (issued_at + window), so the memory is bounded by the request rate, and a replay
    after that is refused as stale instead.
    """

    def __init__(self, window_s: float = REPLAY_WINDOW_S) -> None:
        self.window_s = window_s
        self._seen: dict[str, float] = {}  # request_id -> time after which it cannot be fresh

    def __len__(self) -> int:
        return len(self._seen)

    def check(self, request_id: str, issued_at: str, now: datetime) -> None:
        """Raise RequestRefused (``stale_request`` or ``replayed_request``), or remember the id.
        ``now`` must be timezone-aware."""
        try:
            issued = parse_timestamp(issued_at)
        except EncodingError as exc:
            raise RequestRefused("malformed_request", str(exc)) from None
        now_s = now.timestamp()
        issued_s = issued.timestamp()
        self._forget(now_s)
        if abs(now_s - issued_s) > self.window_s:
            raise RequestRefused(
                "stale_request",
                f"issued_at is outside the {self.window_s:g} s replay window of the bridge's clock",
            )
        if request_id in self._seen:
            raise RequestRefused("replayed_request", "this request_id was already received")
        self._seen[request_id] = issued_s + self.window_s

    def _forget(self, now_s: float) -> None:
        expired = [rid for rid, until in self._seen.items() if until < now_s]
        for rid in expired:
            del self._seen[rid]


__all__ = [
    "AUTH_CONTEXT",
    "GCM_NONCE_BYTES",
    "HANDSHAKE_NONCE_BYTES",
    "OPS",
    "PROTOCOL",
    "REPLAY_WINDOW_S",
    "SESSION_INFO",
    "BridgeRequest",
    "ReplayGuard",
    "RequestRefused",
    "bridge_auth_bytes",
    "bridge_auth_digest",
    "build_request",
    "new_handshake_nonce",
    "parse_request",
    "reply_mac",
    "reply_mac_input",
    "reply_mac_ok",
    "session_secret",
    "sign_bridge_auth",
    "verify_bridge_auth",
    "verify_request",
]
