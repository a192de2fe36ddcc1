"""Single-use values (registration nonces, key proofs): claimed by one atomic insert."""

from __future__ import annotations

import hashlib

from sqlalchemy import Connection
from sqlalchemy.dialects import postgresql, sqlite

from ..db.engine import utcnow
from ..db.tables import single_use


def digest(value: str | bytes) -> str:
    raw = value.encode("utf-8") if isinstance(value, str) else value
    return hashlib.sha256(raw).hexdigest()


def claim(conn: Connection, scope: str, value: str | bytes) -> bool:
    """True for the one caller that inserts the value first; everyone after gets False.

    ON CONFLICT DO NOTHING rather than catching an IntegrityError: on PostgreSQL an error would
    abort the surrounding transaction, and the caller needs to go on and answer cleanly.
    """
    statement = _CLAIM[conn.dialect.name]
    result = conn.execute(
        statement, {"scope": scope, "digest": digest(value), "created_at": utcnow()}
    )
    return result.rowcount == 1


# Built once: a statement built per call costs more than executing it.
_CLAIM = {
    "postgresql": postgresql.insert(single_use).on_conflict_do_nothing(
        index_elements=["scope", "digest"]
    ),
    "sqlite": sqlite.insert(single_use).on_conflict_do_nothing(index_elements=["scope", "digest"]),
}
