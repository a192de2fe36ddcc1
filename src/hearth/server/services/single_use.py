"""Single-use values (registration nonces, key proofs): claimed by one atomic insert."""

from __future__ import annotations

import hashlib

from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection

from ..db.engine import utcnow
from ..db.tables import single_use


def digest(value: str | bytes) -> str:
    raw = value.encode("utf-8") if isinstance(value, str) else value
    return hashlib.sha256(raw).hexdigest()


async def claim(conn: AsyncConnection, scope: str, value: str | bytes) -> bool:
    """True for the one caller that inserts the value first; everyone after gets False.

    ON CONFLICT DO NOTHING rather than catching an IntegrityError: on PostgreSQL an error would
    abort the surrounding transaction, and the caller needs to go on and answer cleanly.
    """
    insert = postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert
    statement = (
        insert(single_use)
        .values(scope=scope, digest=digest(value), created_at=utcnow())
        .on_conflict_do_nothing(index_elements=["scope", "digest"])
    )
    result = await conn.execute(statement)
    return result.rowcount == 1
