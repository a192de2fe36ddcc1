"""What the bridge hub reads and writes in the database: plain sync functions over a
``Connection``, run with ``hearth.db.snapshot``/``transaction`` like the domain services.

- :func:`admit`: the checks made before the WebSocket upgrade (401/403/404 in the service's
  error shape).
- :func:`connected`: after a verified handshake, ``bridge_connected`` true, ``last_seen_at``,
  and either the move starting -> running (trigger ``handshake``, whose event is
  ``bridge_handshake_ok``) or, from any other status, the ``bridge_handshake_ok`` event alone.
- :func:`disconnected`: the ``bridge_disconnected`` event, and ``bridge_connected`` false when
  no newer session of this process replaced the one that ended.
"""

from __future__ import annotations

import uuid
from dataclasses import replace

from sqlalchemy import Connection, bindparam, select

from hearth.proofs import EncodingError, b64_decode

from ..canon import CustodyMode
from ..db.engine import utcnow
from ..db.rows import RuntimeRow
from ..db.tables import runtimes
from ..errors import DOCS, ApiError
from ..services import runtimes as runtime_service

_BY_ID = select(runtimes).where(runtimes.c.id == bindparam("id"))


def _unauthorized(message: str, error: str = "unauthorized") -> ApiError:
    return ApiError(
        401,
        error,
        message,
        hint="Send the runtime's control token as `Authorization: Bearer <control token>` (or "
        "the subprotocol `hearth-bridge.token.<control token>`); it is answered once by POST "
        "/v1/runtimes and replaced by POST /v1/runtimes/{id}/control-token.",
        docs=DOCS,
        headers={"WWW-Authenticate": 'Bearer realm="hearth-bridge"'},
    )


def _runtime_not_found() -> ApiError:
    return ApiError(404, "not_found", "Runtime not found.")


def admit(conn: Connection, runtime_id: str, token: str | None) -> RuntimeRow:
    """The runtime a bridge may connect to, or the refusal, checked in this order: a token at
    all (401), the runtime (404; a deleted one too: it is kept for audit, not for bridges), its
    mode (403 ``not_bridged``), the token itself (401 ``invalid_control_token``)."""
    if not token:
        raise _unauthorized("A bridge connects with its runtime's control token.")
    try:
        canonical = str(uuid.UUID(runtime_id))
    except ValueError:
        raise _runtime_not_found() from None
    row = conn.execute(_BY_ID, {"id": canonical}).first()
    if row is None:
        raise _runtime_not_found()
    runtime = RuntimeRow.of(row._mapping)
    if runtime.deleted_at is not None:
        raise ApiError(
            404,
            "runtime_deleted",
            "This runtime was deleted; it is kept for audit and no bridge can connect to it.",
        )
    mode: CustodyMode = runtime.mode
    if mode != "bridged":
        raise ApiError(
            403,
            "not_bridged",
            f"Only bridged runtimes have a bridge; this one is {runtime.mode}.",
            details={"runtime_id": canonical, "mode": runtime.mode},
        )
    if not runtime_service.control_token_matches(runtime, token):
        raise _unauthorized(
            "This is not the runtime's current control token.", "invalid_control_token"
        )
    return runtime


def registered_bridge_key(runtime: RuntimeRow) -> bytes:
    """The bridge's Ed25519 public key as registered at provisioning (raw 32 bytes)."""
    try:
        return b64_decode((runtime.bridge or {})["pubkey"], length=32, what="bridge.pubkey")
    except (EncodingError, KeyError, TypeError):
        # Provisioning checks the key, so this is a damaged row, never a client's mistake.
        raise ValueError("the runtime's registered bridge key is unreadable") from None


def connected(conn: Connection, runtime_id: str, key_id: str) -> RuntimeRow:
    """Record a verified handshake; the row afterwards. A runtime deleted since the upgrade is
    refused (the caller closes the connection)."""
    row = conn.execute(_BY_ID, {"id": runtime_id}).first()
    if row is None or row.deleted_at is not None:
        raise ApiError(404, "runtime_deleted", "The runtime was deleted during the handshake.")
    runtime = RuntimeRow.of(row._mapping)
    now = utcnow()
    runtime_service.mark_bridge_connected(conn, runtime_id, now)
    moved = False
    if runtime.status == "starting":
        try:
            runtime = runtime_service.move(conn, runtime_id, "handshake", expected="starting")
            moved = True
        except runtime_service.MoveRefused:
            # Another move won meanwhile (a crash report, a delete): the handshake still
            # happened, so its event is still appended below, without the move.
            runtime = RuntimeRow.of(conn.execute(_BY_ID, {"id": runtime_id}).one()._mapping)
    if not moved:
        runtime_service.append_event(
            conn,
            runtime_id,
            "bridge_handshake_ok",
            {"status": runtime.status, "key_id": key_id},
        )
    return replace(runtime, bridge_connected=True, last_seen_at=now)


def disconnected(conn: Connection, runtime_id: str, *, current: bool, reason: str) -> None:
    """Append ``bridge_disconnected``; clear ``bridge_connected`` only when the session that
    ended was the runtime's current one (a replaced session leaves the new one's flag)."""
    if current:
        runtime_service.mark_bridge_disconnected(conn, runtime_id)
    runtime_service.append_event(conn, runtime_id, "bridge_disconnected", {"reason": reason})


__all__ = ["admit", "connected", "disconnected", "registered_bridge_key"]
