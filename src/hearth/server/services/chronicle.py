"""The chronicle: an append-only record of what happened to a project and its identities.

Entries are written by the service (and, of the kinds the service does not keep for itself, by
callers: ``write``, POST /v1/chronicle), never edited and never deleted. The kinds are the canon's
(``canon.ChronicleKind``); who writes which kind is in docs/service.md ("Memory and
chronicle"). Refusals under the memory-tier rules are recorded as ``refusal`` entries (wall 5,
``refusals_recorded``), in a transaction of their own, so that the refused request itself
changes nothing else.
"""

from __future__ import annotations

from typing import Any

import structlog
from sqlalchemy import Connection

from ..canon import (
    CHRONICLE_KINDS,
    SERVICE_CHRONICLE_KINDS,
    WRITABLE_CHRONICLE_KINDS,
    ChronicleKind,
)
from ..db.engine import Database, utcnow
from ..db.ids import new_id
from ..db.rows import ChronicleRow
from ..db.tables import chronicle
from ..errors import ApiError
from ..json_types import JsonObject
from . import cursors, identities
from .times import iso

log = structlog.get_logger("hearth.chronicle")

_INSERT = chronicle.insert()


def record(
    conn: Connection,
    project_id: str,
    identity_id: str | None,
    kind: ChronicleKind,
    text: str,
    *,
    details: JsonObject | None = None,
) -> ChronicleRow:
    """Append one entry; returns the row."""
    # The type says it to mypy; a caller outside its reach (a str from elsewhere) meets this.
    if kind not in CHRONICLE_KINDS:
        raise ValueError(f"unknown chronicle kind {kind!r}")
    row = {
        "id": new_id(),
        "project_id": project_id,
        "identity_id": identity_id,
        "kind": kind,
        "text": text,
        "details": details,
        "created_at": utcnow(),
    }
    conn.execute(_INSERT, row)
    return ChronicleRow.of(row)


def refusal_details(error: ApiError, **context: Any) -> JsonObject:
    """What a ``refusal`` entry keeps of a refusal: its status, code and message, and context."""
    details: JsonObject = {"status": error.status, "error": error.error}
    details.update({name: value for name, value in context.items() if value is not None})
    if error.details:
        details["refusal_details"] = error.details
    return details


async def record_refusal(
    db: Database,
    error: ApiError,
    *,
    project_id: str,
    identity_id: str | None,
    text: str,
    **context: Any,
) -> ApiError:
    """Record a decided refusal in its own transaction and return it, for the caller to raise.

    The entry's id is added to the refusal's ``details.chronicle_entry_id``. If the record
    cannot be written, the failure is logged and the refusal is still answered (without that
    id): a refusal is never turned into a different answer by its bookkeeping.
    """
    details = refusal_details(error, **context)
    try:
        row = await db.transaction(
            record,
            project_id,
            identity_id,
            "refusal",
            f"{text}: {error.message}",
            details=details,
        )
    except Exception as exc:
        log.warning("refusal_not_recorded", error=error.error, failure=type(exc).__name__)
        return error
    error.details = {**(error.details or {}), "chronicle_entry_id": row.id}
    return error


def write(
    conn: Connection,
    project_id: str,
    identity_ref: str | None,
    kind: str,
    text: str,
    *,
    details: JsonObject | None,
    channel: str,
    api_key_id: str,
) -> JsonObject:
    """A caller's entry (POST /v1/chronicle): any kind but the service's own, about an identity
    of the project or the project; ``details`` say who wrote it, whatever the caller sent."""
    if kind in SERVICE_CHRONICLE_KINDS or kind not in CHRONICLE_KINDS:
        raise ApiError(
            422,
            "chronicle_kind_reserved",
            f"The kind {kind!r} is written by the service alone.",
            details={"writable": list(WRITABLE_CHRONICLE_KINDS)},
            hint="Write one of the writable kinds; refusals, seals and notes are the "
            "service's record of what it did.",
        )
    identity_id = identities.find(conn, project_id, identity_ref).id if identity_ref else None
    written: JsonObject = {**(details or {}), "channel": channel, "api_key_id": api_key_id}
    return view(record(conn, project_id, identity_id, kind, text, details=written))


def entries(
    conn: Connection,
    project_id: str,
    *,
    kind: str | None = None,
    identity_id: str | None = None,
    cursor: str | None = None,
    limit: int = 100,
) -> cursors.Page:
    """The project's entries, newest first, optionally of one kind or one identity."""
    equal: dict[str, Any] = {"project_id": project_id}
    if kind is not None:
        equal["kind"] = kind
    if identity_id is not None:
        equal["identity_id"] = identity_id
    items, next_cursor = cursors.newest_first_equal(
        conn, chronicle, equal, cursor, limit, build=ChronicleRow.of
    )
    return cursors.Page([view(row) for row in items], next_cursor)


def view(row: ChronicleRow) -> JsonObject:
    return {
        "id": row.id,
        "kind": row.kind,
        "agent_id": row.identity_id,
        "text": row.text,
        "details": row.details,
        "created_at": iso(row.created_at),
    }
