"""One bridge connection, after the upgrade: the handshake, then the reply loop.

Frames are JSON text (docs/bridge.md, "Wire"):

1. service -> bridge ``challenge``: ``protocol``, ``runtime_id``, ``server_nonce`` (32 random
   bytes, base64), ``runtime_public_key`` (the per-runtime key that signs every request),
   ``replay_window_s``.
2. bridge -> service ``auth``: ``bridge_nonce`` (32 random bytes, base64) and ``signature``
   (Ed25519 by the bridge's registered key over ``bridge-auth/v1`` 0x00 runtime id 0x00 server
   nonce 0x00 bridge nonce). A wrong signature, a late or malformed answer: an ``error`` frame,
   then close code 4401 (4408 when late).
3. service -> bridge ``ready``: ``runtime_id``, ``session_id``, ``status``. Both sides now hold
   the session secret (HKDF over the control token, both nonces).
4. service -> bridge ``request`` frames; bridge -> service ``reply`` frames (``request_id``,
   ``result``, ``hmac``), delivered to the hub.
"""

from __future__ import annotations

import asyncio
import json

import structlog
from starlette.requests import HTTPConnection
from starlette.websockets import WebSocket, WebSocketState

from hearth.proofs import EncodingError, b64_decode, b64_encode
from hearth.proofs.bridge import (
    HANDSHAKE_NONCE_BYTES,
    PROTOCOL,
    REPLAY_WINDOW_S,
    new_handshake_nonce,
    session_secret,
    verify_bridge_auth,
)

from ..db.engine import Database, utcnow
from ..db.rows import RuntimeRow
from ..errors import ApiError
from ..events import Change, EventBus
from ..json_types import JsonObject
from ..observability import Metrics
from ..services.times import iso
from . import keys, store
from .hub import BridgeHub, Session

log = structlog.get_logger("hearth.bridge")

SUBPROTOCOL = "hearth-bridge.v1"
TOKEN_SUBPROTOCOL_PREFIX = "hearth-bridge.token."

CLOSE_REPLACED = 4000
CLOSE_AUTH_FAILED = 4401
CLOSE_GONE = 4404
CLOSE_HANDSHAKE_TIMEOUT = 4408
CLOSE_UNAVAILABLE = 1011


class _HandshakeFailed(Exception):
    def __init__(self, code: int, error: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.error = error
        self.message = message


def control_token_of(websocket: HTTPConnection) -> tuple[str | None, str | None]:
    """(control token, subprotocol to accept). The token comes from ``Authorization: Bearer``,
    or, for clients that cannot set headers, from a subprotocol ``hearth-bridge.token.<token>``
    offered beside ``hearth-bridge.v1``; the accepted subprotocol is then ``hearth-bridge.v1``,
    never the one carrying the token."""
    offered = [str(p) for p in websocket.scope.get("subprotocols") or []]
    subprotocol = SUBPROTOCOL if SUBPROTOCOL in offered else None
    scheme, _, value = websocket.headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip(), subprotocol
    for proto in offered:
        if proto.startswith(TOKEN_SUBPROTOCOL_PREFIX):
            return proto.removeprefix(TOKEN_SUBPROTOCOL_PREFIX), subprotocol or SUBPROTOCOL
    return None, subprotocol


async def _receive_json(websocket: WebSocket) -> JsonObject | None:
    """The next JSON object frame; None when the peer disconnected. A frame that is not a JSON
    object is answered with {} so that the caller refuses it as malformed."""
    message = await websocket.receive()
    if message["type"] == "websocket.disconnect":
        return None
    text = message.get("text")
    if text is None:
        raw = message.get("bytes")
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else ""
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


async def _close(websocket: WebSocket, code: int, reason: str) -> None:
    if websocket.application_state == WebSocketState.CONNECTED:
        try:
            await websocket.close(code=code, reason=reason)
        except Exception as exc:  # the peer may be gone already
            log.info("bridge_close_failed", error=type(exc).__name__)


async def _handshake(
    websocket: WebSocket, hub: BridgeHub, runtime: RuntimeRow, public_key: bytes
) -> tuple[str, str]:
    """Send the challenge and check the answer: (server nonce, bridge nonce)."""
    server_nonce = new_handshake_nonce()
    await websocket.send_json(
        {
            "type": "challenge",
            "protocol": PROTOCOL,
            "runtime_id": runtime.id,
            "server_nonce": server_nonce,
            "runtime_public_key": b64_encode(public_key),
            "replay_window_s": REPLAY_WINDOW_S,
        }
    )
    try:
        answer = await asyncio.wait_for(_receive_json(websocket), hub.handshake_timeout)
    except TimeoutError:
        raise _HandshakeFailed(
            CLOSE_HANDSHAKE_TIMEOUT,
            "handshake_timeout",
            f"No auth frame within {hub.handshake_timeout:g} s.",
        ) from None
    if answer is None:
        raise _HandshakeFailed(1000, "disconnected", "The bridge left during the handshake.")
    bridge_nonce = answer.get("bridge_nonce")
    signature = answer.get("signature")
    if answer.get("type") != "auth" or not isinstance(bridge_nonce, str):
        raise _HandshakeFailed(
            CLOSE_AUTH_FAILED,
            "bridge_auth_failed",
            "Expected an auth frame with bridge_nonce and signature.",
        )
    try:
        b64_decode(bridge_nonce, length=HANDSHAKE_NONCE_BYTES, what="bridge_nonce")
    except EncodingError as exc:
        raise _HandshakeFailed(CLOSE_AUTH_FAILED, "bridge_auth_failed", str(exc)) from None
    registered = store.registered_bridge_key(runtime)
    if not isinstance(signature, str) or not verify_bridge_auth(
        registered, signature, runtime.id, server_nonce, bridge_nonce
    ):
        raise _HandshakeFailed(
            CLOSE_AUTH_FAILED,
            "bridge_auth_failed",
            "The signature does not verify under the bridge key registered for this runtime "
            f"(key_id {(runtime.bridge or {})['key_id']}).",
        )
    return server_nonce, bridge_nonce


async def _publish(events: EventBus, runtime: RuntimeRow, kind: str, up: bool) -> None:
    # The voice stream's `change` for the wake's you_run (bridge_connected is one of its fields).
    await events.publish(
        Change(
            runtime.project_id,
            runtime.identity_id,
            "you_run",
            kind,
            {"runtime_id": runtime.id, "bridge_connected": up},
            iso(utcnow()) or "",
        )
    )


async def serve(
    websocket: WebSocket,
    hub: BridgeHub,
    runtime: RuntimeRow,
    *,
    token: str,
    subprotocol: str | None,
    db: Database,
    events: EventBus,
    metrics: Metrics,
    master_key: str | None,
) -> None:
    """Run one admitted connection to its end (``master_key``: the KMS key that wraps the
    runtime's signing key, when one is set)."""
    await websocket.accept(subprotocol=subprotocol)
    runtime_id = runtime.id
    try:
        signing_key = await db.transaction(keys.ensure_runtime_key, runtime, master_key)
    except keys.RuntimeKeyUnavailable as exc:
        log.error("bridge_runtime_key_unavailable", runtime_id=runtime_id, why=str(exc))
        await websocket.send_json(
            {
                "type": "error",
                "error": "runtime_key_unavailable",
                "message": "The service cannot open this runtime's signing key.",
            }
        )
        await _close(websocket, CLOSE_UNAVAILABLE, "runtime key unavailable")
        return
    public_key = signing_key.public_key().public_bytes_raw()
    try:
        server_nonce, bridge_nonce = await _handshake(websocket, hub, runtime, public_key)
    except _HandshakeFailed as failed:
        log.warning("bridge_handshake_refused", runtime_id=runtime_id, error=failed.error)
        metrics.bridge_handshake_failures.labels(failed.error).inc()
        if failed.error != "disconnected":
            await websocket.send_json(
                {"type": "error", "error": failed.error, "message": failed.message}
            )
        await _close(websocket, failed.code, failed.error)
        return
    key_id = str((runtime.bridge or {})["key_id"])
    try:
        after = await db.transaction(store.connected, runtime_id, key_id)
    except ApiError as exc:
        await websocket.send_json({"type": "error", **exc.body()})
        await _close(websocket, CLOSE_GONE, exc.error)
        return

    async def send(message: JsonObject) -> None:
        await websocket.send_json(message)
        metrics.bridge_messages.labels("to_bridge").inc()

    async def close(code: int, reason: str) -> None:
        await _close(websocket, code, reason)

    session = Session(
        runtime_id=runtime_id,
        project_id=runtime.project_id,
        identity_id=runtime.identity_id,
        key_id=key_id,
        secret=session_secret(token, server_nonce, bridge_nonce),
        signing_key=signing_key,
        send_message=send,
        close_connection=close,
    )
    await hub.attach(session)
    metrics.bridge_connections.inc()
    log.info("bridge_connected", runtime_id=runtime_id, session_id=session.session_id)
    reason = "bridge closed the connection"
    try:
        await websocket.send_json(
            {
                "type": "ready",
                "runtime_id": runtime_id,
                "session_id": session.session_id,
                "status": after.status,
            }
        )
        await _publish(events, runtime, "bridge_connected", True)
        while True:
            message = await _receive_json(websocket)
            if message is None:
                break
            if message.get("type") == "reply":
                metrics.bridge_messages.labels("from_bridge").inc()
                hub.deliver(session, message)
            else:
                log.info("bridge_frame_ignored", runtime_id=runtime_id, type=message.get("type"))
    except Exception as exc:  # a broken socket ends the session like a close does
        reason = f"connection failed ({type(exc).__name__})"
    finally:
        current = hub.detach(session)
        if not current:
            reason = "replaced by a newer bridge connection"
        try:
            await db.transaction(store.disconnected, runtime_id, current=current, reason=reason)
            if current:
                await _publish(events, runtime, "bridge_disconnected", False)
        except Exception as exc:  # the app may be shutting down; the event is best effort then
            log.warning("bridge_disconnect_unrecorded", runtime_id=runtime_id, error=str(exc))
        log.info("bridge_disconnected", runtime_id=runtime_id, session_id=session.session_id)


__all__ = ["SUBPROTOCOL", "TOKEN_SUBPROTOCOL_PREFIX", "control_token_of", "serve"]
