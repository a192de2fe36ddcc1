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

import uuid
from typing import Any

from sqlalchemy import Connection, bindparam, select, update

from ..db.engine import utcnow
from ..db.tables import inbox_messages, runtimes
from ..errors import ApiError, not_found
from . import cursors, identities
from . import runtimes as runtime_service
from .times import iso

STATUSES = ("pending", "taken", "done")
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


def view(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": row["id"],
        "identity_id": row["identity_id"],
        "sender": row["sender"],
        "body": row["body"],
        "status": row["status"],
        "taken_by": row["taken_by"],
        "taken_at": iso(row["taken_at"]),
        "done_at": iso(row["done_at"]),
        "created_at": iso(row["created_at"]),
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
) -> dict[str, Any]:
    """Store a pending message for an identity of the project and wake its idle runtimes."""
    identity = identities.find(conn, project_id, identity_ref)
    row = {
        "id": str(uuid.uuid4()),
        "project_id": project_id,
        "identity_id": identity["id"],
        "sender": sender,
        "body": body,
        "status": "pending",
        "taken_by": None,
        "taken_at": None,
        "done_at": None,
        "created_at": utcnow(),
    }
    conn.execute(_INSERT, row)
    return {**view(row), "woke_runtimes": wake_idle_runtimes(conn, identity["id"])}


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
        inbox_messages.c.identity_id == identity["id"],
    ]
    if status is not None:
        conditions.append(inbox_messages.c.status == status)
    items, next_cursor = cursors.newest_first(conn, inbox_messages, conditions, cursor, limit)
    return cursors.Page([view(r) for r in items], next_cursor)


def take_next(conn: Connection, identity_id: str, runtime_id: str) -> dict[str, Any] | None:
    """Atomically take the identity's oldest pending message for ``runtime_id`` (pending ->
    taken), or None when there is none. Commit the caller's transaction to keep it taken."""
    oldest = _OLDEST_PENDING_SKIP_LOCKED if conn.dialect.name == "postgresql" else _OLDEST_PENDING
    for _ in range(_TAKE_ROUNDS):
        message_id = conn.execute(oldest, {"identity": identity_id}).scalar_one_or_none()
        if message_id is None:
            return None
        taken = conn.execute(_TAKE, {"message": message_id, "runtime": runtime_id, "now": utcnow()})
        if taken.rowcount == 1:
            return dict(conn.execute(_BY_ID, {"message": message_id}).one()._mapping)
    return None


def _move(conn: Connection, statement: Any, message_id: str, doing: str) -> dict[str, Any]:
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
    return dict(conn.execute(_BY_ID, {"message": message_id}).one()._mapping)


def complete(conn: Connection, message_id: str) -> dict[str, Any]:
    """taken -> done: the cycle that took it has stored its thought."""
    return _move(conn, _COMPLETE, message_id, "complete")


def release(conn: Connection, message_id: str) -> dict[str, Any]:
    """taken -> pending: the cycle failed; the message waits for the next one."""
    return _move(conn, _RELEASE, message_id, "release")
