"""Single-use values (registration nonces, key proofs): claimed by one atomic insert."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from sqlalchemy import Connection
from sqlalchemy.dialects import postgresql, sqlite

from ..db import direct
from ..db.engine import utcnow
from ..db.tables import single_use


def digest(value: str | bytes) -> str:
    raw = value.encode("utf-8") if isinstance(value, str) else value
    return hashlib.sha256(raw).hexdigest()


def claim_all(conn: Connection, claims: Sequence[tuple[str, str | bytes]]) -> set[str]:
    """Claim each (scope, value) pair; returns the scopes whose value was already used (empty:
    every claim won). The caller refuses when any was used, and its transaction rolls back, so
    a partial claim never commits.

    ON CONFLICT DO NOTHING rather than catching an IntegrityError: on PostgreSQL an error would
    abort the surrounding transaction, and the caller needs to go on and answer cleanly.
    """
    statement = _CLAIM[conn.dialect.name]
    now = utcnow()
    used: set[str] = set()
    for scope, value in claims:
        inserted = direct.run(
            conn, statement, {"scope": scope, "digest": digest(value), "created_at": now}
        )
        if inserted != 1:
            used.add(scope)
    return used


# Built once: a statement built per call costs more than executing it. (One statement per
# claim: a multi-row VALUES insert is compiled anew on every use.)
_CLAIM = {
    "postgresql": postgresql.insert(single_use).on_conflict_do_nothing(
        index_elements=["scope", "digest"]
    ),
    "sqlite": sqlite.insert(single_use).on_conflict_do_nothing(index_elements=["scope", "digest"]),
}
