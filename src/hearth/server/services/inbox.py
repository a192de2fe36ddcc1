"""An identity's inbox: messages that wake its idle runtimes and feed their think cycles
(docs/strands.md, "The inbox").

A message is ``pending`` -> ``taken`` (by one runtime) -> ``done``; a failed cycle
``release``s it back to ``pending``, so a failure never loses a message. ``take_next`` claims
the oldest pending message atomically: on PostgreSQL the row is selected ``FOR UPDATE SKIP
LOCKED`` (concurrent takers pass over each other's rows instead of queueing on them), and on
every database the UPDATE is conditional on ``status = 'pending'``, so two takers never take
one message.

A new pending message is the specification's "inbox event": in the same transaction as the
insert, every ``idle`` runtime bound to the identity moves to ``running``
(``runtimes.move(..., "wake")``, which appends its event).
"""

from __future__ import annotations

import contextlib
import uuid
from typing import Any, Final

from sqlalchemy import Connection, bindparam, select, update

from ..canon import CustodyMode
from ..db.engine import utcnow
from ..db.ids import new_id
from ..db.rows import InboxMessageRow, MemoryRow, RuntimeRow
from ..db.tables import inbox_messages, runtimes
from ..errors import ApiError, not_found
from ..json_types import JsonObject
from . import cursors, identities
from . import memories as memory_service
from . import runtimes as runtime_service
from .times import iso

STATUSES = ("pending", "taken", "done")
# The custody the think-cycle events of the ``*_for_self`` calls name: only a self runtime's
# loop takes messages over HTTP (``runtimes.self_runtime`` refuses the others).
_SELF_CUSTODY: Final[CustodyMode] = "self"
# Rounds of take_next when another taker wins the row it read (SQLite reads without locks).
_TAKE_ROUNDS = 8

_INSERT = inbox_messages.insert()
_BY_ID = select(inbox_messages).where(inbox_messages.c.id == bindparam("message"))
_OLDEST_PENDING = (
    select(inbox_messages.c.id)
    .where(
        inbox_messages.c.identity_id == bindparam("identity"),
        inbox_messages.c.status == "pending",
    )
    .order_by(inbox_messages.c.created_at, inbox_messages.c.id)
    .limit(1)
)
_OLDEST_PENDING_SKIP_LOCKED = _OLDEST_PENDING.with_for_update(skip_locked=True)
_TAKE = (
    update(inbox_messages)
    .where(inbox_messages.c.id == bindparam("message"), inbox_messages.c.status == "pending")
    .values(status="taken", taken_by=bindparam("runtime"), taken_at=bindparam("now"))
)
_COMPLETE = (
    update(inbox_messages)
    .where(inbox_messages.c.id == bindparam("message"), inbox_messages.c.status == "taken")
    .values(status="done", done_at=bindparam("now"))
)
_RELEASE = (
    update(inbox_messages)
    .where(inbox_messages.c.id == bindparam("message"), inbox_messages.c.status == "taken")
    .values(status="pending", taken_by=None, taken_at=None)
)
_IDLE_RUNTIMES = (
    select(runtimes.c.id)
    .where(
        runtimes.c.identity_id == bindparam("identity"),
        runtimes.c.status == "idle",
        runtimes.c.deleted_at.is_(None),
    )
    .order_by(runtimes.c.created_at, runtimes.c.id)
)


def view(row: InboxMessageRow) -> JsonObject:
    return {
        "id": row.id,
        "identity_id": row.identity_id,
        "sender": row.sender,
        "body": row.body,
        "status": row.status,
        "taken_by": row.taken_by,
        "taken_at": iso(row.taken_at),
        "done_at": iso(row.done_at),
        "created_at": iso(row.created_at),
    }


def wake_idle_runtimes(conn: Connection, identity_id: str) -> list[str]:
    """Move every idle runtime of the identity to running (the state machine's ``wake``), in
    the caller's transaction; the ids of those moved. A runtime another worker moved meanwhile
    is left to that worker's move."""
    woke: list[str] = []
    for runtime_id in conn.execute(_IDLE_RUNTIMES, {"identity": identity_id}).scalars():
        try:
            runtime_service.move(conn, runtime_id, "wake", expected="idle")
        except runtime_service.MoveRefused:
            continue
        woke.append(runtime_id)
    return woke


def post(
    conn: Connection, project_id: str, identity_ref: str, *, sender: str, body: str
) -> JsonObject:
    """Store a pending message for an identity of the project and wake its idle runtimes."""
    identity = identities.find(conn, project_id, identity_ref)
    row = {
        "id": new_id(),
        "project_id": project_id,
        "identity_id": identity.id,
        "sender": sender,
        "body": body,
        "status": "pending",
        "taken_by": None,
        "taken_at": None,
        "done_at": None,
        "created_at": utcnow(),
    }
    conn.execute(_INSERT, row)
    return {**view(InboxMessageRow.of(row)), "woke_runtimes": wake_idle_runtimes(conn, identity.id)}


def listing(
    conn: Connection,
    project_id: str,
    identity_ref: str,
    *,
    status: str | None,
    cursor: str | None,
    limit: int,
) -> cursors.Page:
    """The identity's messages, newest first, optionally of one status."""
    identity = identities.find(conn, project_id, identity_ref)
    conditions: list[Any] = [
        inbox_messages.c.project_id == project_id,
        inbox_messages.c.identity_id == identity.id,
    ]
    if status is not None:
        conditions.append(inbox_messages.c.status == status)
    items, next_cursor = cursors.newest_first(
        conn, inbox_messages, conditions, cursor, limit, build=InboxMessageRow.of
    )
    return cursors.Page([view(r) for r in items], next_cursor)


def take_next(conn: Connection, identity_id: str, runtime_id: str) -> InboxMessageRow | None:
    """Atomically take the identity's oldest pending message for ``runtime_id`` (pending ->
    taken), or None when there is none. Commit the caller's transaction to keep it taken."""
    oldest = _OLDEST_PENDING_SKIP_LOCKED if conn.dialect.name == "postgresql" else _OLDEST_PENDING
    for _ in range(_TAKE_ROUNDS):
        message_id = conn.execute(oldest, {"identity": identity_id}).scalar_one_or_none()
        if message_id is None:
            return None
        taken = conn.execute(_TAKE, {"message": message_id, "runtime": runtime_id, "now": utcnow()})
        if taken.rowcount == 1:
            return InboxMessageRow.of(conn.execute(_BY_ID, {"message": message_id}).one()._mapping)
    return None


def _move(conn: Connection, statement: Any, message_id: str, doing: str) -> InboxMessageRow:
    values: dict[str, Any] = {"message": message_id}
    if doing == "complete":
        values["now"] = utcnow()
    if conn.execute(statement, values).rowcount != 1:
        row = conn.execute(_BY_ID, {"message": message_id}).first()
        if row is None:
            raise not_found("Inbox message")
        raise ApiError(
            409,
            "inbox_message_not_taken",
            f"The message is {row.status}; only a taken message can be {doing}d.",
            details={"message_id": message_id, "status": row.status},
        )
    return InboxMessageRow.of(conn.execute(_BY_ID, {"message": message_id}).one()._mapping)


def complete(conn: Connection, message_id: str) -> InboxMessageRow:
    """taken -> done: the cycle that took it has stored its thought."""
    return _move(conn, _COMPLETE, message_id, "complete")


def release(conn: Connection, message_id: str) -> InboxMessageRow:
    """taken -> pending: the cycle failed; the message waits for the next one."""
    return _move(conn, _RELEASE, message_id, "release")


# --- a self runtime's loop, over HTTP ------------------------------------------------------------

_COMPLETE_MINE = _COMPLETE.where(inbox_messages.c.taken_by == bindparam("runtime"))
_RELEASE_MINE = _RELEASE.where(inbox_messages.c.taken_by == bindparam("runtime"))
_STARTING = frozenset({"provisioned", "starting"})


def _bound_identity(runtime: RuntimeRow) -> str:
    if runtime.identity_id is None:
        raise ApiError(
            409,
            "runtime_unbound",
            "The runtime is bound to no identity, so it has no inbox to take messages from.",
            details={"runtime_id": runtime.id},
            hint="Provision a self runtime with `identity_id`.",
        )
    return str(runtime.identity_id)


def take_for_self(
    conn: Connection, project_id: str, runtime_ref: str
) -> tuple[JsonObject | None, list[JsonObject]]:
    """The next pending message of the self runtime's identity, taken by that runtime (None
    when none is waiting), and the moves made. ``take_next`` takes it, so two loops never take
    one message. The runtime must have reported in (running or idle); an idle one wakes when it
    takes a message. Appends ``think_cycle_start`` with the message id."""
    runtime = runtime_service.self_runtime(conn, project_id, runtime_ref)
    identity_id = _bound_identity(runtime)
    if runtime.status in _STARTING:
        raise ApiError(
            409,
            "invalid_runtime_state",
            f"The runtime is {runtime.status}: its loop takes messages once a heartbeat has "
            "moved it to running.",
            details={"runtime_id": runtime.id, "current_status": runtime.status},
            hint="POST /v1/runtimes/{id}/heartbeat first.",
        )
    if runtime.status not in {"running", "idle"}:
        raise runtime_service.not_live(runtime)
    moves: list[JsonObject] = []
    message = take_next(conn, identity_id, runtime.id)
    if message is None:
        runtime_service.stamp_seen(conn, runtime.id)
        return None, moves
    if runtime.status == "idle":
        # The inbox post wakes idle runtimes itself; this catches a message it did not (one
        # written by another path), and a wake lost to a concurrent one changes nothing.
        with contextlib.suppress(runtime_service.MoveRefused):
            runtime_service.self_move(conn, runtime, "wake", moves)
    runtime_service.stamp_seen(conn, runtime.id, worked=True)
    runtime_service.append_event(
        conn,
        runtime.id,
        "think_cycle_start",
        {"message_id": message.id, "custody": _SELF_CUSTODY},
    )
    return view(message), moves


def _own_message(
    conn: Connection, project_id: str, runtime_ref: str, message_ref: str
) -> tuple[RuntimeRow, InboxMessageRow]:
    runtime = runtime_service.self_runtime(conn, project_id, runtime_ref)
    identity_id = _bound_identity(runtime)
    try:
        message_id = str(uuid.UUID(message_ref))
    except ValueError:
        raise not_found("Inbox message") from None
    row = conn.execute(_BY_ID, {"message": message_id}).first()
    if row is None or row.identity_id != identity_id:
        raise not_found("Inbox message")
    return runtime, InboxMessageRow.of(row._mapping)


def _finish_for_self(
    conn: Connection,
    project_id: str,
    runtime_ref: str,
    message_ref: str,
    *,
    doing: str,
) -> JsonObject:
    runtime, message = _own_message(conn, project_id, runtime_ref, message_ref)
    statement = _COMPLETE_MINE if doing == "complete" else _RELEASE_MINE
    values: dict[str, Any] = {"message": message.id, "runtime": runtime.id}
    if doing == "complete":
        values["now"] = utcnow()
    if conn.execute(statement, values).rowcount != 1:
        current = conn.execute(_BY_ID, {"message": message.id}).one()
        if current.status == "taken":
            raise ApiError(
                409,
                "inbox_message_not_yours",
                f"The message was taken by another runtime; only the runtime that took it can "
                f"{doing} it.",
                details={"message_id": message.id, "status": current.status},
            )
        raise ApiError(
            409,
            "inbox_message_not_taken",
            f"The message is {current.status}; only a taken message can be {doing}d.",
            details={"message_id": message.id, "status": current.status},
        )
    runtime_service.stamp_seen(conn, runtime.id, worked=True)
    if doing == "complete":
        runtime_service.append_event(
            conn,
            runtime.id,
            "think_cycle_end",
            {"message_id": message.id, "custody": _SELF_CUSTODY},
        )
    else:
        runtime_service.append_event(
            conn,
            runtime.id,
            "think_cycle_error",
            {
                "message_id": message.id,
                "custody": _SELF_CUSTODY,
                "stage": "self",
                "reason": "released by the user's loop",
            },
        )
    return view(InboxMessageRow.of(conn.execute(_BY_ID, {"message": message.id}).one()._mapping))


def complete_for_self(
    conn: Connection, project_id: str, runtime_ref: str, message_ref: str
) -> JsonObject:
    """taken -> done, by the self runtime that took it (409 ``inbox_message_not_yours``
    otherwise); appends ``think_cycle_end``."""
    return _finish_for_self(conn, project_id, runtime_ref, message_ref, doing="complete")


def release_for_self(
    conn: Connection, project_id: str, runtime_ref: str, message_ref: str
) -> JsonObject:
    """taken -> pending, by the self runtime that took it: its cycle failed on the user's
    machine, and the message waits for the next one; appends ``think_cycle_error``."""
    return _finish_for_self(conn, project_id, runtime_ref, message_ref, doing="release")


def remember_for_self(
    conn: Connection,
    project_id: str,
    runtime_ref: str,
    message_ref: str,
    *,
    key: str | None,
    api_key_id: str,
) -> MemoryRow:
    """A self runtime stores a message it took as an episodic memory of its identity. The text
    came from outside the project, so the memory is untrusted until a person confirms it
    (docs/memory.md, "Provenance"); its provenance names the runtime and the message."""
    runtime, message = _own_message(conn, project_id, runtime_ref, message_ref)
    if message.taken_by != runtime.id:
        raise ApiError(
            409,
            "inbox_message_not_yours",
            "Only the runtime that took the message can store it as a memory.",
            details={"message_id": message.id, "status": message.status},
        )
    identity = memory_service.binding(conn, project_id, message.identity_id)
    if identity is None:
        raise not_found("Identity")
    provenance = memory_service.Provenance(
        "runtime",
        api_key_id=api_key_id,
        runtime_id=runtime.id,
        inbox_message_id=message.id,
        untrusted=True,
    )
    return memory_service.store(
        conn,
        project_id,
        identity,
        content=message.body,
        tier="episodic",
        key=key,
        grant=None,
        provenance=provenance,
    )
