"""A runtime's status and liveness writes: :func:`move` (one move of the table of
``runtime_states``, a conditional UPDATE on the status the caller saw, and the move's event in
the same transaction), the moves a request asks for (restart, soft delete), and the stamps of
life (``last_seen_at``, ``last_work_at``, ``last_thought_at``, and ``bridge_connected`` as the
bridge hub sees its sessions come and go)."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, bindparam, select, update

from ... import runtime_states
from ...db.engine import utcnow
from ...db.rows import RuntimeRow
from ...db.tables import runtimes
from ...errors import not_found
from ...json_types import JsonObject
from ...observability import TRANSITIONS
from .events import append_event
from .records import find, lookup, row_by_id, view_one
from .refusals import StaleMove, illegal_move, runtime_deleted

__all__ = [
    "mark_bridge_connected",
    "mark_bridge_disconnected",
    "move",
    "restart",
    "soft_delete",
    "stamp_seen",
    "stamp_thought",
    "stamp_work",
    "stop_moved_identity",
]

_STAMP_THOUGHT = (
    update(runtimes)
    .where(runtimes.c.id == bindparam("runtime"))
    .values(last_thought_at=bindparam("now"))
)


def move(
    conn: Connection,
    runtime_id: str,
    trigger: str,
    *,
    detail: str | None = None,
    expected: str | None = None,
) -> RuntimeRow:
    """Apply one move of the table to the runtime and append its event, in the caller's
    transaction; return the updated row.

    ``expected`` is the status the caller saw (a worker that read the row earlier); without it,
    the status read here. The UPDATE is conditional on that status, so of two workers moving the
    same runtime at once exactly one wins and the other gets :class:`StaleMove`. A status the
    trigger does not move from is :class:`IllegalMove`; a deleted runtime does not move.
    ``detail`` is the crash's ``last_error`` (required for ``crash``), and a note in the event
    otherwise.
    """
    step = runtime_states.move_for(trigger)
    runtime = lookup(conn, runtime_id)
    if runtime is None:
        raise not_found("Runtime")
    if runtime.deleted_at is not None:
        raise runtime_deleted(runtime, f"moved ({trigger})")
    seen = expected if expected is not None else runtime.status
    if seen not in step.sources:
        raise illegal_move(replace(runtime, status=seen), trigger)
    if trigger == "crash" and not detail:
        raise ValueError("a crash needs its last_error as detail")
    now = utcnow()
    values: dict[str, Any] = {"status": step.target, "status_changed_at": now, "updated_at": now}
    if step.target == "error":
        values["last_error"] = detail
    elif seen == "error":
        values["last_error"] = None  # last_error is populated in the error state only
    if step.target == "running":
        values["last_work_at"] = now  # the idle timeout counts from here
    if step.target in {"stopped", "error"}:
        values["bridge_connected"] = False
    moved = conn.execute(
        update(runtimes)
        .where(
            runtimes.c.id == runtime_id,
            runtimes.c.status == seen,
            runtimes.c.deleted_at.is_(None),
        )
        .values(**values)
    )
    if moved.rowcount != 1:
        current = row_by_id(conn, runtime_id)
        raise StaleMove(
            409,
            "stale_runtime_state",
            f"The runtime was {seen} when read and is {current.status} now: another move won.",
            details={
                "runtime_id": runtime_id,
                "expected_status": seen,
                "current_status": current.status,
                "trigger": trigger,
            },
        )
    details: JsonObject = {"from": seen, "to": step.target, "trigger": trigger}
    if detail:
        details["last_error" if trigger == "crash" else "detail"] = detail
    append_event(conn, runtime_id, step.event, details)
    # Counted once applied in the caller's transaction (a transaction that then fails on the
    # database, which is rare, leaves it counted).
    TRANSITIONS.labels(seen, step.target).inc()
    return replace(runtime, **values)


_RUNNING = ("starting", "running", "idle")


def soft_delete(conn: Connection, project_id: str, runtime_id: str) -> JsonObject:
    """Keep the record for audit: ``deleted_at`` set, the control token revoked (no bridge can
    connect again), and a running orchestrator stopped (``deprovision``, event ``stopped``).
    Deleting a deleted runtime answers the record again and changes nothing."""
    runtime = find(conn, project_id, runtime_id)
    if runtime.deleted_at is not None:
        return view_one(conn, runtime)
    # A worker may move the runtime between the read and the conditional UPDATE: read again and
    # retry; a few rounds suffice, since each lost round means another move was applied.
    for _ in range(5):
        if runtime.status not in _RUNNING:
            break
        try:
            runtime = move(conn, runtime.id, "deprovision", expected=runtime.status)
            break
        except StaleMove:
            runtime = find(conn, project_id, runtime_id)
    now = utcnow()
    values: dict[str, Any] = {
        "deleted_at": now,
        "updated_at": now,
        "control_token_hash": None,
        "bridge_connected": False,
        "lease_owner": None,
        "lease_until": 0,
    }
    conn.execute(
        update(runtimes)
        .where(runtimes.c.id == runtime.id, runtimes.c.deleted_at.is_(None))
        .values(**values)
    )
    return view_one(conn, replace(runtime, **values))


def stop_moved_identity(conn: Connection, identity_id: str, where: str) -> list[str]:
    """Stop every runtime of an identity that moved away (``move_away``, whatever its state
    but ``stopped``), in the move's transaction, and drop its lease and control token: the
    worker running it finds its lease gone at its next write and stops, and no bridge connects
    again. The ids of the runtimes stopped."""
    bound = conn.execute(
        select(runtimes.c.id, runtimes.c.status).where(
            runtimes.c.identity_id == identity_id,
            runtimes.c.deleted_at.is_(None),
            runtimes.c.status != "stopped",
        )
    ).all()
    stopped = []
    for runtime_id, status in bound:
        seen = status
        # A worker may move it between the read and the conditional UPDATE: read again.
        for _ in range(5):
            try:
                move(conn, runtime_id, "move_away", detail=f"moved to {where}", expected=seen)
                break
            except StaleMove:
                seen = row_by_id(conn, runtime_id).status
        conn.execute(
            update(runtimes)
            .where(runtimes.c.id == runtime_id)
            .values(control_token_hash=None, lease_owner=None, lease_until=0)
        )
        stopped.append(runtime_id)
    return stopped


def restart(conn: Connection, project_id: str, runtime_id: str) -> JsonObject:
    """error -> starting; any other status is 409 naming the current and the allowed ones."""
    runtime = find(conn, project_id, runtime_id)
    if runtime.deleted_at is not None:
        raise runtime_deleted(runtime, "restarted")
    if not runtime_states.allowed("restart", runtime.status):
        raise illegal_move(runtime, "restart")
    return view_one(conn, move(conn, runtime.id, "restart", expected=runtime.status))


def stamp_seen(conn: Connection, runtime_id: str, *, worked: bool = False) -> datetime:
    """``last_seen_at`` (and ``last_work_at`` when the loop did work): every call of a self
    loop is a sign of life."""
    now = utcnow()
    values: dict[str, Any] = {"last_seen_at": now}
    if worked:
        values["last_work_at"] = now
    conn.execute(update(runtimes).where(runtimes.c.id == runtime_id).values(**values))
    return now


def stamp_work(conn: Connection, runtime_id: str) -> None:
    """``last_work_at``: the hosted loop finished a think cycle (or failed one), so the idle
    timeout counts from now."""
    conn.execute(update(runtimes).where(runtimes.c.id == runtime_id).values(last_work_at=utcnow()))


def stamp_thought(conn: Connection, runtime_id: str, now: datetime) -> None:
    """``last_thought_at``: a thought was stored in a strand bound to the runtime, at ``now``
    (the thought's own ``created_at``)."""
    conn.execute(_STAMP_THOUGHT, {"runtime": runtime_id, "now": now})


def mark_bridge_connected(conn: Connection, runtime_id: str, now: datetime) -> None:
    """A bridge completed its handshake at ``now``: ``bridge_connected`` and ``last_seen_at``.
    A runtime deleted meanwhile is left as it is (its flag stays false)."""
    conn.execute(
        update(runtimes)
        .where(runtimes.c.id == runtime_id, runtimes.c.deleted_at.is_(None))
        .values(bridge_connected=True, last_seen_at=now)
    )


def mark_bridge_disconnected(conn: Connection, runtime_id: str) -> None:
    """The runtime's current bridge session ended: ``bridge_connected`` false, and
    ``last_seen_at`` (the session was alive until now)."""
    conn.execute(
        update(runtimes)
        .where(runtimes.c.id == runtime_id)
        .values(bridge_connected=False, last_seen_at=utcnow())
    )
