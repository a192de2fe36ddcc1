"""Self custody: the user's loop reports in over HTTP (docs/runtimes.md, "Self custody"). A
heartbeat stamps ``last_seen_at`` and moves the runtime through the table; the inbox routes use
:func:`self_runtime` and :func:`self_move` for the loop's other calls."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import Connection, bindparam, select

from ... import runtime_states
from ...canon import CustodyMode
from ...db.engine import utcnow
from ...db.rows import RuntimeRow
from ...db.tables import inbox_messages
from ...errors import ApiError
from ...json_types import JsonObject
from .moves import move, stamp_seen
from .records import find, row_by_id, view_one
from .refusals import StaleMove, runtime_deleted

__all__ = ["has_pending", "heartbeat", "not_live", "self_move", "self_runtime"]

# How the moves a heartbeat makes are worded in their events (no secret, nothing the user sent).
_SELF_DETAIL = {
    "bind": "self: the user's loop reported in",
    "handshake": "self: the user's loop is running",
    "wake": "self: an inbox message is waiting",
    "idle_timeout": "self: no work for the idle timeout",
}
_MOVE_ROUNDS = 5
_PENDING_FOR = (
    select(inbox_messages.c.id)
    .where(
        inbox_messages.c.identity_id == bindparam("identity"),
        inbox_messages.c.status == "pending",
    )
    .limit(1)
)


def not_live(runtime: RuntimeRow) -> ApiError:
    """A self runtime in ``error`` or ``stopped``: its loop has nothing to report into."""
    return ApiError(
        409,
        "invalid_runtime_state",
        f"The runtime is {runtime.status}: its loop can report in only when it is "
        "provisioned, starting, running or idle.",
        details={"runtime_id": runtime.id, "current_status": runtime.status},
        hint="Recover a runtime in error with POST /v1/runtimes/{id}/restart; a stopped one "
        "needs a new runtime.",
    )


def self_runtime(conn: Connection, project_id: str, runtime_id: str) -> RuntimeRow:
    """The project's undeleted ``self`` runtime, for the routes its user-side loop calls: 404
    for another project's, 409 ``runtime_deleted``, 409 ``not_self_custody`` for a hosted one
    (the hosted loop runs in the service and reports in through its lease instead)."""
    runtime = find(conn, project_id, runtime_id)
    if runtime.deleted_at is not None:
        raise runtime_deleted(runtime, "run")
    mode: CustodyMode = runtime.mode
    if mode != "self":
        raise ApiError(
            409,
            "not_self_custody",
            f"The runtime is {runtime.mode}: only a self runtime's loop runs on the user's "
            "machine and reports in here.",
            details={"runtime_id": runtime.id, "mode": runtime.mode},
            hint="Provision a runtime with mode `self` to run its loop with `hearth runtime run`.",
        )
    return runtime


def has_pending(conn: Connection, identity_id: str | None) -> bool:
    if identity_id is None:
        return False
    return conn.execute(_PENDING_FOR, {"identity": identity_id}).first() is not None


def self_move(
    conn: Connection, runtime: RuntimeRow, trigger: str, moves: list[JsonObject]
) -> RuntimeRow:
    """One move of a self runtime (the table's trigger, its event); the move is added to
    ``moves`` for the route to announce once committed."""
    before = runtime.status
    moved = move(conn, runtime.id, trigger, detail=_SELF_DETAIL.get(trigger), expected=before)
    moves.append(
        {
            "runtime_id": runtime.id,
            "from": before,
            "to": moved.status,
            "trigger": trigger,
            "event": runtime_states.move_for(trigger).event,
        }
    )
    return moved


def heartbeat(
    conn: Connection, project_id: str, runtime_id: str, *, idle_seconds: float
) -> tuple[JsonObject, list[JsonObject]]:
    """A self runtime's loop reports in: ``last_seen_at`` is stamped, and the runtime moves
    through the table (docs/runtimes.md, "Self custody"):

    - provisioned -> starting (``bind``) -> running (``handshake``): the first heartbeat;
      starting -> running after a restart;
    - idle -> running (``wake``) when a message is waiting for the identity;
    - running -> idle (``idle_timeout``) when nothing was done for ``idle_seconds`` and nothing
      is waiting.

    Returns the view and the moves made. A move lost to a concurrent one (another heartbeat,
    an inbox post waking the runtime) is read again and reconsidered, a few rounds at most.
    """
    runtime = self_runtime(conn, project_id, runtime_id)
    moves: list[JsonObject] = []
    for _ in range(_MOVE_ROUNDS):
        try:
            runtime = _heartbeat_moves(conn, runtime, idle_seconds, moves)
            break
        except StaleMove:
            runtime = self_runtime(conn, project_id, runtime_id)
    stamp_seen(conn, runtime.id)
    return view_one(conn, row_by_id(conn, runtime.id)), moves


def _heartbeat_moves(
    conn: Connection, runtime: RuntimeRow, idle_seconds: float, moves: list[JsonObject]
) -> RuntimeRow:
    status = runtime.status
    if status in {"stopped", "error"}:
        raise not_live(runtime)
    if status == "provisioned":
        runtime = self_move(conn, runtime, "bind", moves)
    if runtime.status == "starting":
        return self_move(conn, runtime, "handshake", moves)
    waiting = has_pending(conn, runtime.identity_id)
    if runtime.status == "idle" and waiting:
        return self_move(conn, runtime, "wake", moves)
    if runtime.status == "running" and not waiting:
        last_work = runtime.last_work_at or runtime.status_changed_at
        if utcnow() - last_work >= timedelta(seconds=idle_seconds):
            return self_move(conn, runtime, "idle_timeout", moves)
    return runtime
