"""Opaque cursors over (created_at, id) for listings that run newest first.

A cursor is base64url of the last item's time and UUID. Items are ordered by (created_at, id)
descending, so a page boundary never skips or repeats an item, even when many rows share one
timestamp.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, and_, or_, select

from hearth.adds import b64url_decode, b64url_encode

from ..errors import ApiError

_TIME = "%Y-%m-%dT%H:%M:%S.%f"


@dataclass(frozen=True)
class Page:
    items: list[dict[str, Any]]
    next_cursor: str | None

    def body(self) -> dict[str, Any]:
        """The answer of a listing route: ``items`` and ``next_cursor``."""
        return {"items": self.items, "next_cursor": self.next_cursor}


def encode_cursor(created_at: datetime, row_id: str) -> str:
    return b64url_encode(f"{created_at.strftime(_TIME)}|{row_id}".encode("ascii"))


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    try:
        moment, row_id = b64url_decode(cursor).decode("ascii").split("|")
        return datetime.strptime(moment, _TIME), str(uuid.UUID(row_id))
    except (ValueError, UnicodeDecodeError):
        raise ApiError(
            400,
            "invalid_cursor",
            "The cursor is not one this service handed out.",
            hint="Pass next_cursor from the previous page as it is, or leave cursor out.",
        ) from None


def before(table: Any, cursor: str | None) -> Any:
    """The condition for the rows after ``cursor`` in newest-first order (None: no condition)."""
    if cursor is None:
        return None
    created_at, row_id = decode_cursor(cursor)
    return or_(
        table.c.created_at < created_at,
        and_(table.c.created_at == created_at, table.c.id < row_id),
    )


def page_of(rows: list[dict[str, Any]], limit: int) -> tuple[list[dict[str, Any]], str | None]:
    """The first ``limit`` of ``limit + 1`` rows fetched, and the cursor when there are more."""
    if len(rows) <= limit:
        return rows, None
    rows = rows[:limit]
    return rows, encode_cursor(rows[-1]["created_at"], rows[-1]["id"])


def newest_first(
    conn: Connection, table: Any, conditions: list[Any], cursor: str | None, limit: int
) -> tuple[list[dict[str, Any]], str | None]:
    """One page of ``table``'s rows matching ``conditions``, newest first, after ``cursor``;
    and the cursor of the next page when there is one."""
    after = before(table, cursor)
    if after is not None:
        conditions = [*conditions, after]
    rows = conn.execute(
        select(table)
        .where(*conditions)
        .order_by(table.c.created_at.desc(), table.c.id.desc())
        .limit(limit + 1)
    )
    return page_of([dict(r._mapping) for r in rows], limit)
