"""What a project holds on the provider node: block rows and control documents, in SQL.

Blocks themselves live once in the block store, named by CID; a row of ``adds_blocks`` is one
project's claim on one. Documents are kept as their canonical bytes, with the members that heads
and grants are found by copied into indexed columns. Listings page by (created_at, cid) with an
opaque cursor, so a page boundary never skips or repeats an item.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import and_, func, or_, select
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql import Select

from hearth.adds.cid import cid_from_digest, cid_problem, decode_cid
from hearth.adds.kinds import SIGNER_MEMBER

from ..db.engine import dialect_insert, utcnow
from ..db.tables import adds_blocks, adds_documents, adds_provider_records
from ..errors import ApiError
from ..json_types import JsonObject
from . import cursors
from .cursors import Page
from .times import iso

KINDS = tuple(SIGNER_MEMBER)
CURSOR_PATTERN = cursors.position_pattern(32)


def invalid_cid(cid: str) -> ApiError | None:
    """The 400 for a CID that is not canonical, or None when it is one."""
    problem = cid_problem(cid)
    if problem is None:
        return None
    return ApiError(
        400,
        "invalid_cid",
        f"Not a canonical ADDS CID: {problem[1]}.",
        details={"rule": problem[0]},
        hint="A CID is CIDv1, raw codec, sha2-256, in lower-case base32: 'bafkrei' and 52 more.",
    )


def require_cid(cid: str) -> None:
    refusal = invalid_cid(cid)
    if refusal is not None:
        raise refusal


def head_digest(head_id: str) -> str:
    return hashlib.sha256(head_id.encode("utf-8")).hexdigest()


# --- cursors ------------------------------------------------------------------------------------


def encode_cursor(created_at: datetime, cid: str) -> str:
    """The position of a row: its time and its CID's 32-byte digest (``cursors.pack_position``),
    54 characters (``CURSOR_PATTERN``); every string of that form is a position."""
    return cursors.pack_position(created_at, decode_cid(cid))


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    created_at, digest = cursors.unpack_position(cursor, 32)
    return created_at, cid_from_digest(digest)


def _after(statement: Select[Any], table: Any, cursor: str | None) -> Select[Any]:
    if cursor is None:
        return statement
    created_at, cid = decode_cursor(cursor)
    return statement.where(
        or_(
            table.c.created_at > created_at,
            and_(table.c.created_at == created_at, table.c.cid > cid),
        )
    )


def _page(rows: Sequence[Any], limit: int, view: Any) -> Page:
    more = len(rows) > limit
    rows = rows[:limit]
    next_cursor = encode_cursor(rows[-1].created_at, rows[-1].cid) if more else None
    return Page([view(row) for row in rows], next_cursor)


# --- blocks -------------------------------------------------------------------------------------


async def record_block(conn: AsyncConnection, project_id: str, cid: str, size: int) -> bool:
    """Record that the project holds the block; True when it did not hold it before."""
    result = await conn.execute(
        dialect_insert(conn)(adds_blocks)
        .values(project_id=project_id, cid=cid, size=size, created_at=utcnow())
        .on_conflict_do_nothing(index_elements=["project_id", "cid"])
    )
    return result.rowcount == 1


async def block_size(conn: AsyncConnection, cid: str) -> int | None:
    """The size of a block held for any project, or None when the service holds none."""
    size = (
        await conn.execute(select(adds_blocks.c.size).where(adds_blocks.c.cid == cid).limit(1))
    ).scalar_one_or_none()
    return None if size is None else int(size)


async def list_blocks(
    conn: AsyncConnection, project_id: str, *, cursor: str | None, limit: int
) -> Page:
    statement = _after(
        select(adds_blocks.c.cid, adds_blocks.c.size, adds_blocks.c.created_at).where(
            adds_blocks.c.project_id == project_id
        ),
        adds_blocks,
        cursor,
    )
    rows = (
        await conn.execute(
            statement.order_by(adds_blocks.c.created_at, adds_blocks.c.cid).limit(limit + 1)
        )
    ).all()
    return _page(rows, limit, lambda row: {"cid": row.cid, "size": int(row.size)})


async def recent_blocks(conn: AsyncConnection, limit: int) -> list[tuple[str, int]]:
    """Up to ``limit`` distinct blocks held for any project, the most recently stored first.

    Reads a bounded window of the newest rows (the created_at index) rather than grouping the
    whole table, so the cost does not grow with the store; a block many projects stored at
    once may take several rows of the window, and then fewer than ``limit`` are returned.
    """
    rows = await conn.execute(
        select(adds_blocks.c.cid, adds_blocks.c.size)
        .order_by(adds_blocks.c.created_at.desc(), adds_blocks.c.cid.desc())
        .limit(limit * 4)
    )
    seen: dict[str, int] = {}
    for row in rows:
        if row.cid not in seen:
            seen[row.cid] = int(row.size)
            if len(seen) == limit:
                break
    return list(seen.items())


# --- documents ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class StoredDocument:
    cid: str
    kind: str
    canonical: bytes
    document: JsonObject


def _document_row(project_id: str, stored: StoredDocument) -> Mapping[str, Any]:
    """The values of the document's insert into ``adds_documents``."""
    document = stored.document
    signer = document[SIGNER_MEMBER[stored.kind]]
    row: JsonObject = {
        "project_id": project_id,
        "cid": stored.cid,
        "kind": stored.kind,
        "canonical": stored.canonical,
        "size": len(stored.canonical),
        "signer_key": signer["ed25519_public_key"],
        "created_at": utcnow(),
    }
    if stored.kind == "head":
        row.update(
            head_id=document["head_id"],
            head_digest=head_digest(document["head_id"]),
            sequence=document["sequence"],
        )
    elif stored.kind == "grant":
        row.update(manifest_cid=document["manifest_cid"], audience=document["audience"])
    return row


async def store_document(conn: AsyncConnection, project_id: str, stored: StoredDocument) -> bool:
    """Keep a valid document for the project; True when the project did not hold it before."""
    result = await conn.execute(
        dialect_insert(conn)(adds_documents)
        .values(**_document_row(project_id, stored))
        .on_conflict_do_nothing(index_elements=["project_id", "cid"])
    )
    return result.rowcount == 1


async def document_bytes(conn: AsyncConnection, cid: str) -> bytes | None:
    """The canonical bytes of a document held for any project, or of one of the service's own
    provider records; None when the service holds no document with this CID."""
    found = (
        await conn.execute(
            select(adds_documents.c.canonical).where(adds_documents.c.cid == cid).limit(1)
        )
    ).scalar_one_or_none()
    if found is None:
        found = (
            await conn.execute(
                select(adds_provider_records.c.canonical)
                .where(adds_provider_records.c.cid == cid)
                .limit(1)
            )
        ).scalar_one_or_none()
    return None if found is None else bytes(found)


async def list_documents(
    conn: AsyncConnection,
    project_id: str,
    *,
    kind: str | None,
    cursor: str | None,
    limit: int,
) -> Page:
    statement = select(
        adds_documents.c.cid,
        adds_documents.c.kind,
        adds_documents.c.size,
        adds_documents.c.created_at,
    ).where(adds_documents.c.project_id == project_id)
    if kind is not None:
        statement = statement.where(adds_documents.c.kind == kind)
    statement = _after(statement, adds_documents, cursor)
    rows = (
        await conn.execute(
            statement.order_by(adds_documents.c.created_at, adds_documents.c.cid).limit(limit + 1)
        )
    ).all()
    return _page(
        rows,
        limit,
        lambda row: {
            "cid": row.cid,
            "kind": row.kind,
            "size": int(row.size),
            "created_at": iso(row.created_at),
        },
    )


async def head_documents(
    conn: AsyncConnection, *, issuer_key: str, head_id: str, limit: int
) -> list[bytes]:
    """The canonical bytes of the stored heads of (issuer key, head_id), each CID once, whoever
    submitted them; the highest sequences first when there are more than ``limit``."""
    rows = await conn.execute(
        select(adds_documents.c.cid, adds_documents.c.canonical, adds_documents.c.head_id)
        .where(
            adds_documents.c.signer_key == issuer_key,
            adds_documents.c.head_digest == head_digest(head_id),
            adds_documents.c.kind == "head",
        )
        .order_by(adds_documents.c.sequence.desc(), adds_documents.c.cid)
        .limit(limit)
    )
    seen: dict[str, bytes] = {}
    for row in rows:
        if row.head_id == head_id and row.cid not in seen:
            seen[row.cid] = bytes(row.canonical)
    return list(seen.values())


# --- what a project holds -----------------------------------------------------------------------


@dataclass(frozen=True)
class Held:
    """A project's holdings among some CIDs: size and role of each one found."""

    sizes: dict[str, int]
    roles: dict[str, str]


async def held(conn: AsyncConnection, project_id: str, cids: Sequence[str]) -> Held:
    """Which of ``cids`` the project holds; a CID held as both is listed with its document kind."""
    sizes: dict[str, int] = {}
    roles: dict[str, str] = {}
    if not cids:
        return Held(sizes, roles)
    blocks = await conn.execute(
        select(adds_blocks.c.cid, adds_blocks.c.size).where(
            adds_blocks.c.project_id == project_id, adds_blocks.c.cid.in_(list(cids))
        )
    )
    for row in blocks:
        sizes[row.cid], roles[row.cid] = int(row.size), "block"
    documents = await conn.execute(
        select(adds_documents.c.cid, adds_documents.c.size, adds_documents.c.kind).where(
            adds_documents.c.project_id == project_id, adds_documents.c.cid.in_(list(cids))
        )
    )
    for document in documents:
        sizes[document.cid], roles[document.cid] = int(document.size), document.kind
    return Held(sizes, roles)


async def inventory(conn: AsyncConnection, project_id: str) -> JsonObject:
    """Counts and bytes of the project's blocks and of its documents, by kind."""
    blocks = (
        await conn.execute(
            select(func.count(), func.coalesce(func.sum(adds_blocks.c.size), 0)).where(
                adds_blocks.c.project_id == project_id
            )
        )
    ).one()
    by_kind = dict.fromkeys(KINDS, (0, 0))
    rows = await conn.execute(
        select(
            adds_documents.c.kind,
            func.count(),
            func.coalesce(func.sum(adds_documents.c.size), 0),
        )
        .where(adds_documents.c.project_id == project_id)
        .group_by(adds_documents.c.kind)
    )
    for kind, count, total in rows:
        by_kind[kind] = (int(count), int(total))
    return {
        "blocks": (int(blocks[0]), int(blocks[1])),
        "documents": by_kind,
    }


__all__ = [
    "CURSOR_PATTERN",
    "KINDS",
    "Held",
    "Page",
    "StoredDocument",
    "block_size",
    "decode_cursor",
    "document_bytes",
    "encode_cursor",
    "head_documents",
    "held",
    "invalid_cid",
    "inventory",
    "list_blocks",
    "list_documents",
    "recent_blocks",
    "record_block",
    "require_cid",
    "store_document",
]
