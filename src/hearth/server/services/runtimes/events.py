"""A runtime's event log: append-only, one row per move and per notable thing that happened
(bridge connections, think cycles, control token rotations), read oldest first."""

from __future__ import annotations

import re

from sqlalchemy import Connection, insert, select

from ... import runtime_states
from ...db.engine import utcnow
from ...db.tables import runtime_events
from ...json_types import JsonObject
from .. import cursors
from ..times import iso
from .records import find

__all__ = ["EVENTS_CURSOR_PATTERN", "append_event", "events"]

# A runtime's events page by id: the cursor is the last id of the previous page. Every cursor of
# the pattern is a position; one beyond the largest id the column holds (a 32-bit INTEGER on
# PostgreSQL) is the end of the log.
EVENTS_CURSOR_PATTERN = "^[0-9]{1,18}$"
_EVENTS_CURSOR = re.compile(EVENTS_CURSOR_PATTERN)
_LAST_EVENT_ID = 2**31 - 1


_APPEND = insert(runtime_events)


def append_event(
    conn: Connection, runtime_id: str, event: str, details: JsonObject | None = None
) -> None:
    """Append one event to the runtime's log. The log is append-only: nothing here (nor
    anywhere else) updates or deletes its rows. Details never carry a secret."""
    if event not in runtime_states.EVENTS:
        raise ValueError(f"unknown runtime event {event!r}")
    conn.execute(
        _APPEND,
        {"runtime_id": runtime_id, "event": event, "details": details, "created_at": utcnow()},
    )


def events(
    conn: Connection, project_id: str, runtime_id: str, *, cursor: str | None, limit: int
) -> cursors.Page:
    """The runtime's events, oldest first; the cursor is the last event id of the page."""
    runtime = find(conn, project_id, runtime_id)
    after = 0
    if cursor is not None:
        # ASCII digits only: str.isdigit() also takes "²", which int() then refuses.
        if not _EVENTS_CURSOR.fullmatch(cursor):
            raise cursors.invalid_cursor()
        after = min(int(cursor), _LAST_EVENT_ID)
    rows = conn.execute(
        select(runtime_events)
        .where(runtime_events.c.runtime_id == runtime.id, runtime_events.c.id > after)
        .order_by(runtime_events.c.id)
        .limit(limit + 1)
    ).all()
    more = len(rows) > limit
    rows = rows[:limit]
    items = [
        {
            "id": r.id,
            "runtime_id": r.runtime_id,
            "event": r.event,
            "details": r.details,
            "created_at": iso(r.created_at),
        }
        for r in rows
    ]
    return cursors.Page(items, str(rows[-1].id) if more else None)
