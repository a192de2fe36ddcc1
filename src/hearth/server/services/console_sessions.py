"""The console's sessions (docs/console.md, "Sessions").

A browser signs in with a project bearer once; what it keeps is a random session id in an
``HttpOnly`` cookie, and the database keeps only that id's SHA-256, the key it was opened with
and the session's form token. The bearer itself is checked (``keys.resolve``) and forgotten. A
session is live while it has not expired, has not been closed, and its key is not revoked: the
lookup joins ``api_keys``, so revoking a key ends its sessions at once, in every process.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import Connection, bindparam, delete, select

from ..db import direct
from ..db.engine import utcnow
from ..db.tables import api_keys, console_sessions
from . import keys


@dataclass(frozen=True, slots=True)
class ConsoleSession:
    project_id: str
    key_id: str
    csrf_token: str


@dataclass(frozen=True, slots=True)
class Opened:
    session_id: str  # for the cookie only: the database never holds it
    session: ConsoleSession


def open_session(conn: Connection, bearer: str, *, hours: float) -> Opened | None:
    """A new session for a live project bearer, or None (unknown or revoked)."""
    resolved = keys.resolve(conn, bearer)
    if resolved is None:
        return None
    project_id, key_id = resolved
    session_id = secrets.token_urlsafe(32)
    csrf_token = secrets.token_urlsafe(32)
    now = utcnow()
    # The key's expired sessions go as a new one comes: the table holds live sessions only.
    direct.run(conn, _EXPIRED, {"api_key_id": key_id, "now": now})
    direct.run(
        conn,
        _INSERT,
        {
            "id_hash": keys.hash_bearer(session_id),
            "api_key_id": key_id,
            "project_id": project_id,
            "csrf_token": csrf_token,
            "created_at": now,
            "expires_at": now + timedelta(hours=hours),
        },
    )
    return Opened(session_id, ConsoleSession(project_id, key_id, csrf_token))


def find(conn: Connection, session_id: str) -> ConsoleSession | None:
    """The live session of a cookie's id, or None: expired, closed, or its key revoked."""
    if not session_id or len(session_id) > 128:
        return None
    row = conn.execute(_FIND, {"id_hash": keys.hash_bearer(session_id), "now": utcnow()}).first()
    return ConsoleSession(row.project_id, row.api_key_id, row.csrf_token) if row else None


def close(conn: Connection, session_id: str) -> None:
    """Sign-out: the session is deleted, so its cookie opens nothing even if it was kept."""
    direct.run(conn, _DELETE, {"id_hash": keys.hash_bearer(session_id)})


# Built once: a statement built per call costs more than executing it.
_INSERT = console_sessions.insert()
_FIND = (
    select(
        console_sessions.c.project_id,
        console_sessions.c.api_key_id,
        console_sessions.c.csrf_token,
    )
    .join(api_keys, api_keys.c.id == console_sessions.c.api_key_id)
    .where(
        console_sessions.c.id_hash == bindparam("id_hash"),
        console_sessions.c.expires_at > bindparam("now"),
        api_keys.c.revoked_at.is_(None),
    )
)
_DELETE = delete(console_sessions).where(console_sessions.c.id_hash == bindparam("id_hash"))
_EXPIRED = delete(console_sessions).where(
    console_sessions.c.api_key_id == bindparam("api_key_id"),
    console_sessions.c.expires_at <= bindparam("now"),
)
