"""Project bearer keys: high-entropy secrets of which only a hash is stored."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, RowMapping, bindparam, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from ..db import direct
from ..db.engine import utcnow
from ..db.ids import new_id
from ..db.tables import api_keys
from ..json_types import JsonObject
from .times import iso

BEARER_PREFIX = "hk_"
PREFIX_LENGTH = 11  # "hk_" and 8 characters: enough to tell keys apart in a listing


@dataclass(frozen=True)
class IssuedKey:
    id: str
    project_id: str
    name: str
    prefix: str
    created_at: datetime
    secret: str  # shown once, never stored

    def record(self) -> JsonObject:
        return key_record(
            {
                "id": self.id,
                "name": self.name,
                "prefix": self.prefix,
                "created_at": self.created_at,
                "revoked_at": None,
            }
        )


def hash_bearer(bearer: str) -> str:
    return hashlib.sha256(bearer.encode("utf-8")).hexdigest()


def new_bearer() -> str:
    return BEARER_PREFIX + secrets.token_urlsafe(32)


def issue(conn: Connection, project_id: str, name: str) -> IssuedKey:
    secret = new_bearer()
    key = IssuedKey(
        id=new_id(),
        project_id=project_id,
        name=name,
        prefix=secret[:PREFIX_LENGTH],
        created_at=utcnow(),
        secret=secret,
    )
    direct.run(
        conn,
        _INSERT,
        {
            "id": key.id,
            "project_id": project_id,
            "name": name,
            "prefix": key.prefix,
            "key_hash": hash_bearer(secret),
            "created_at": key.created_at,
        },
    )
    return key


def resolve(conn: Connection, bearer: str) -> tuple[str, str] | None:
    """(project_id, key_id) of a live key, or None. Revocation shows at once: no cache."""
    if not bearer.startswith(BEARER_PREFIX) or len(bearer) > 128:
        return None
    row = conn.execute(_RESOLVE, {"key_hash": hash_bearer(bearer)}).first()
    return (row.project_id, row.id) if row else None


# Built once: a statement built per call costs more than executing it.
_INSERT = api_keys.insert()
_RESOLVE = select(api_keys.c.project_id, api_keys.c.id).where(
    api_keys.c.key_hash == bindparam("key_hash"), api_keys.c.revoked_at.is_(None)
)


async def active(conn: AsyncConnection, project_id: str) -> list[JsonObject]:
    rows = await conn.execute(_ACTIVE, {"project": project_id})
    return [key_record(row._mapping) for row in rows]


_ACTIVE = (
    select(api_keys)
    .where(api_keys.c.project_id == bindparam("project"), api_keys.c.revoked_at.is_(None))
    .order_by(api_keys.c.created_at, api_keys.c.id)
)


async def revoke(conn: AsyncConnection, project_id: str, key_id: str) -> bool:
    result = await conn.execute(
        update(api_keys)
        .where(
            api_keys.c.id == key_id,
            api_keys.c.project_id == project_id,
            api_keys.c.revoked_at.is_(None),
        )
        .values(revoked_at=utcnow())
    )
    return result.rowcount == 1


def key_record(row: RowMapping | Mapping[str, Any]) -> JsonObject:
    """A key's public record, from its row (or, for a key just issued, the same fields)."""
    return {
        "id": row["id"],
        "name": row["name"],
        "prefix": row["prefix"],
        "created_at": iso(row["created_at"]),
    }
