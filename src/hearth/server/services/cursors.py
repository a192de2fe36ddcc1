"""Cursors over (created_at, id): listings page through rows in time order without skipping or
repeating one, even when many rows share one timestamp.

A cursor is a position, written as fixed-width bytes in base64url: the time as unsigned
microseconds since 1970 (8 bytes, big-endian), then the row's UUID (16 bytes), 32 characters in
all (``PATTERN``). Every string the pattern matches decodes to a position (a time past year
9999 is read as the last one there is), so the pattern in the OpenAPI document says exactly
which cursors the service takes; anything else is a 400 ``invalid_cursor``. Positions are not
secrets: a listing's other conditions (the project, the filters) decide what a page may hold.
ADDS listings use the same layout with a CID's digest in place of the UUID
(``adds_store``); the vault pages by name and a runtime's events by id.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final, TypeVar

from sqlalchemy import (
    BindParameter,
    Connection,
    Row,
    RowMapping,
    Select,
    and_,
    bindparam,
    or_,
    select,
)

from hearth.adds import b64url_decode, b64url_encode
from hearth.adds.b64 import canonical_b64url_pattern

from ..errors import ApiError
from ..json_types import JsonObject

_EPOCH: Final = datetime(1970, 1, 1)
_LAST_MICROS: Final = (datetime.max - _EPOCH) // timedelta(microseconds=1)
TIME_BYTES: Final = 8


def position_pattern(tail_bytes: int) -> str:
    """The pattern (anchored, as the document shows it) of the cursors whose tail is
    ``tail_bytes`` long: exactly the canonical base64url texts of that many bytes and the time."""
    characters = -(-4 * (TIME_BYTES + tail_bytes) // 3)
    return f"^{canonical_b64url_pattern(characters).pattern}$"


PATTERN: Final = position_pattern(16)

# A ranked listing (memory search) pages by place in its ranking, not by time: its cursor is
# the offset of the next page (4 bytes, big-endian). Like every position it is no secret and
# names no query: any offset the pattern admits is a place (past the end, an empty page).
OFFSET_BYTES: Final = 4
OFFSET_PATTERN: Final = f"^{canonical_b64url_pattern(-(-4 * OFFSET_BYTES // 3)).pattern}$"


@dataclass(frozen=True)
class Page:
    items: list[JsonObject]
    next_cursor: str | None

    def body(self) -> JsonObject:
        """The answer of a listing route: ``items`` and ``next_cursor``."""
        return {"items": self.items, "next_cursor": self.next_cursor}


def invalid_cursor() -> ApiError:
    return ApiError(
        400,
        "invalid_cursor",
        "The cursor is not one this service handed out.",
        hint="Pass next_cursor from the previous page as it is, or leave cursor out.",
    )


def pack_position(created_at: datetime, tail: bytes) -> str:
    """The cursor of a row: its (naive UTC) time, then ``tail`` (a UUID's or a digest's bytes)."""
    micros = (created_at - _EPOCH) // timedelta(microseconds=1)
    return b64url_encode(micros.to_bytes(TIME_BYTES, "big") + tail)


def unpack_position(cursor: str, tail_bytes: int) -> tuple[datetime, bytes]:
    """(time, tail) of a cursor ``pack_position`` made, or of any string of that form."""
    try:
        raw = b64url_decode(cursor)
    except ValueError:
        raise invalid_cursor() from None
    if len(raw) != TIME_BYTES + tail_bytes:
        raise invalid_cursor()
    micros = min(int.from_bytes(raw[:TIME_BYTES], "big"), _LAST_MICROS)
    return _EPOCH + timedelta(microseconds=micros), raw[TIME_BYTES:]


def encode_offset(offset: int) -> str:
    """The cursor of the ranked page starting at ``offset``."""
    return b64url_encode(offset.to_bytes(OFFSET_BYTES, "big"))


def decode_offset(cursor: str) -> int:
    """The offset of a cursor ``encode_offset`` made, or of any string of its pattern."""
    try:
        raw = b64url_decode(cursor)
    except ValueError:
        raise invalid_cursor() from None
    if len(raw) != OFFSET_BYTES:
        raise invalid_cursor()
    return int.from_bytes(raw, "big")


def encode_cursor(created_at: datetime, row_id: str) -> str:
    return pack_position(created_at, uuid.UUID(row_id).bytes)


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    created_at, tail = unpack_position(cursor, 16)
    return created_at, str(uuid.UUID(bytes=tail))


def before(table: Any, cursor: str | None) -> Any:
    """The condition for the rows after ``cursor`` in newest-first order (None: no condition)."""
    if cursor is None:
        return None
    created_at, row_id = decode_cursor(cursor)
    return or_(
        table.c.created_at < created_at,
        and_(table.c.created_at == created_at, table.c.id < row_id),
    )


def after(table: Any, cursor: str | None) -> Any:
    """The condition for the rows after ``cursor`` in oldest-first order (None: no condition)."""
    if cursor is None:
        return None
    created_at, row_id = decode_cursor(cursor)
    return or_(
        table.c.created_at > created_at,
        and_(table.c.created_at == created_at, table.c.id > row_id),
    )


def page_of(rows: list[RowMapping], limit: int) -> tuple[list[RowMapping], str | None]:
    """The first ``limit`` of ``limit + 1`` rows fetched, and the cursor when there are more."""
    if len(rows) <= limit:
        return rows, None
    rows = rows[:limit]
    return rows, encode_cursor(rows[-1]["created_at"], rows[-1]["id"])


T = TypeVar("T")


def _page(
    rows: Sequence[Row[Any]], limit: int, build: Callable[[RowMapping], T]
) -> tuple[list[T], str | None]:
    """The first ``limit`` of ``limit + 1`` rows fetched, each built once, and the cursor when
    there are more (read off the row itself, whatever ``build`` makes of it)."""
    if len(rows) <= limit:
        return [build(r._mapping) for r in rows], None
    last = rows[limit - 1]
    return [build(r._mapping) for r in rows[:limit]], encode_cursor(last.created_at, last.id)


def newest_first(
    conn: Connection,
    table: Any,
    conditions: list[Any],
    cursor: str | None,
    limit: int,
    *,
    build: Callable[[RowMapping], T],
) -> tuple[list[T], str | None]:
    """One page of ``table``'s rows matching ``conditions``, newest first, after ``cursor``,
    each made by ``build`` (a row class's ``of``); and the cursor of the next page when there is
    one."""
    after = before(table, cursor)
    if after is not None:
        conditions = [*conditions, after]
    rows = conn.execute(
        select(table)
        .where(*conditions)
        .order_by(table.c.created_at.desc(), table.c.id.desc())
        .limit(limit + 1)
    ).all()
    return _page(rows, limit, build)


def newest_first_equal(
    conn: Connection,
    table: Any,
    equal: Mapping[str, Any],
    cursor: str | None,
    limit: int,
    *,
    build: Callable[[RowMapping], T],
) -> tuple[list[T], str | None]:
    """``newest_first`` where every condition is a column equal to a value (``equal``: column
    name to value), through a statement built once per table, set of columns and cursor or
    none: building a statement per call cost more CPU than executing it."""
    key = (table.name, tuple(equal), cursor is not None)
    statement = _NEWEST_FIRST.get(key)
    if statement is None:
        statement = _NEWEST_FIRST[key] = _newest_first_statement(table, tuple(equal), cursor)
    params: dict[str, Any] = {f"eq_{name}": value for name, value in equal.items()}
    params["limit"] = limit + 1
    if cursor is not None:
        params["cursor_at"], params["cursor_id"] = decode_cursor(cursor)
    rows = conn.execute(statement, params).all()
    return _page(rows, limit, build)


def _newest_first_statement(
    table: Any, columns: tuple[str, ...], cursor: str | None
) -> Select[Any]:
    conditions = [table.c[name] == bindparam(f"eq_{name}") for name in columns]
    if cursor is not None:
        at: BindParameter[Any] = bindparam("cursor_at")
        row_id: BindParameter[Any] = bindparam("cursor_id")
        conditions.append(
            or_(table.c.created_at < at, and_(table.c.created_at == at, table.c.id < row_id))
        )
    return (
        select(table)
        .where(*conditions)
        .order_by(table.c.created_at.desc(), table.c.id.desc())
        .limit(bindparam("limit"))
    )


# (table name, equality columns in order, with a cursor) -> the statement; a few per listing.
_NEWEST_FIRST: dict[tuple[str, tuple[str, ...], bool], Select[Any]] = {}
