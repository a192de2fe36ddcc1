"""Leases: which orchestrator worker runs which hosted runtime (docs/orchestrator.md, "Leases").

A runtime row carries ``lease_owner`` (a worker's id) and ``lease_until`` (epoch ms). A worker
claims a runtime whose lease is free or lapsed, renews it with every heartbeat, and re-checks
it in every transaction that writes for the runtime (:func:`hold`): a worker that lost its
lease (it stalled past ``lease_until`` and another took over) writes nothing more for it.

Claiming is one conditional UPDATE on every database; on PostgreSQL the candidates are first
selected ``FOR UPDATE SKIP LOCKED``, so that workers claiming at the same moment pass over each
other's rows instead of queueing behind them. Plain sync functions over a ``Connection``, run
with ``Database.transaction`` like the rest of the service; the lease columns are written here
only. Callers name the module (``leases.claim``, ``leases.hold``): it is left out of the
package's names because claiming releases inbox messages, and the inbox imports the package.
"""

from __future__ import annotations

import os
import secrets
import socket
from typing import Any

from sqlalchemy import Connection, and_, bindparam, or_, select, update

from ...canon import CustodyMode
from ...db.engine import utcnow
from ...db.rows import RuntimeRow
from ...db.tables import inbox_messages, runtimes
from .. import inbox

# The statuses a worker runs: bound, booting, thinking or waiting for work. ``stopped`` and
# ``error`` runtimes need a person (a restart) before a worker takes them again.
ACTIVE = ("provisioned", "starting", "running", "idle")
# The mode whose cycles need the bridge session of the process running them.
_SESSION_MODE: CustodyMode = "bridged"


class LeaseLost(Exception):
    """This worker no longer holds the runtime's lease: another worker took it over, or the
    runtime was deleted (which drops its lease). Nothing more is written for it here."""


def new_owner() -> str:
    """A worker id: host, process and a random suffix (two workers of one process differ)."""
    host = socket.gethostname()[:32] or "host"
    return f"{host}:{os.getpid()}:{secrets.token_hex(4)}"


def _claimable(
    owner: str, now_ms: int, modes: tuple[CustodyMode, ...], sessions: frozenset[str]
) -> Any:
    free = [
        runtimes.c.lease_owner.is_(None),
        runtimes.c.lease_until < now_ms,
        runtimes.c.lease_owner == owner,
    ]
    if sessions:
        # A bridged runtime's cycles can run only in the process that holds its bridge
        # session, so that process takes the lease over even before it lapses. The old holder
        # finds its lease gone at its next write (``LeaseLost``) and stops: still one runner.
        free.append(and_(runtimes.c.mode == _SESSION_MODE, runtimes.c.id.in_(sorted(sessions))))
    return and_(
        runtimes.c.deleted_at.is_(None),
        runtimes.c.mode.in_(modes),
        runtimes.c.status.in_(ACTIVE),
        or_(*free),
    )


def claim(
    conn: Connection,
    owner: str,
    *,
    now_ms: int,
    lease_ms: int,
    limit: int,
    modes: tuple[CustodyMode, ...],
    exclude: frozenset[str] = frozenset(),
    sessions: frozenset[str] = frozenset(),
) -> list[RuntimeRow]:
    """Claim up to ``limit`` hosted runtimes whose lease is free or lapsed (or already ours and
    not in ``exclude``, the ones this worker is running); return their rows as claimed.
    ``sessions``: the bridged runtimes whose bridge session this process holds, claimed whoever
    holds their lease.

    Messages a claimed runtime had taken under an earlier lease are released in the same
    transaction: the worker that took them is gone (its lease lapsed), so its cycle will never
    complete them, and a message is never lost.
    """
    if limit <= 0:
        return []
    candidates = (
        select(runtimes.c.id)
        .where(_claimable(owner, now_ms, modes, sessions))
        .order_by(runtimes.c.lease_until, runtimes.c.created_at, runtimes.c.id)
        .limit(limit + len(exclude))
    )
    if conn.dialect.name == "postgresql":
        candidates = candidates.with_for_update(skip_locked=True)
    ids = [rid for rid in conn.execute(candidates).scalars() if rid not in exclude][:limit]
    if not ids:
        return []
    until = now_ms + lease_ms
    # Conditional again: on SQLite nothing was locked by the SELECT (the write transaction
    # serialises it anyway), and the statement then says by itself what a claim is.
    conn.execute(
        update(runtimes)
        .where(runtimes.c.id.in_(ids), _claimable(owner, now_ms, modes, sessions))
        .values(lease_owner=owner, lease_until=until, last_seen_at=utcnow())
    )
    claimed = [
        RuntimeRow.of(row._mapping)
        for row in conn.execute(
            select(runtimes).where(
                runtimes.c.id.in_(ids),
                runtimes.c.lease_owner == owner,
                runtimes.c.lease_until == until,
            )
        )
    ]
    for row in claimed:
        recover_messages(conn, row.id)
    return claimed


_ORPHANS = select(inbox_messages.c.id).where(
    inbox_messages.c.taken_by == bindparam("runtime"), inbox_messages.c.status == "taken"
)


def recover_messages(conn: Connection, runtime_id: str) -> list[str]:
    """Release (taken -> pending) the messages the runtime took under an earlier lease."""
    released = []
    for message_id in conn.execute(_ORPHANS, {"runtime": runtime_id}).scalars():
        inbox.release(conn, message_id)
        released.append(message_id)
    return released


def hold(
    conn: Connection,
    runtime_id: str,
    owner: str,
    *,
    now_ms: int,
    lease_ms: int,
    seen: bool = False,
) -> int:
    """Re-check and extend the lease in the caller's transaction, or raise :class:`LeaseLost`;
    the new ``lease_until``. Every transaction that writes for a runtime starts here: on
    PostgreSQL the UPDATE also locks the row, so a claimer waits for this transaction and then
    sees the extended lease. ``seen`` stamps ``last_seen_at`` (the heartbeat)."""
    until = now_ms + lease_ms
    values: dict[str, Any] = {"lease_until": until}
    if seen:
        values["last_seen_at"] = utcnow()
    held = conn.execute(
        update(runtimes)
        .where(
            runtimes.c.id == runtime_id,
            runtimes.c.lease_owner == owner,
            runtimes.c.deleted_at.is_(None),
        )
        .values(**values)
    )
    if held.rowcount != 1:
        raise LeaseLost(runtime_id)
    return until


def release(conn: Connection, runtime_id: str, owner: str) -> bool:
    """Give the lease up (a stopped, errored or deleted runtime; a worker shutting down)."""
    released = conn.execute(
        update(runtimes)
        .where(runtimes.c.id == runtime_id, runtimes.c.lease_owner == owner)
        .values(lease_owner=None, lease_until=0)
    )
    return bool(released.rowcount == 1)


def release_all(conn: Connection, owner: str) -> int:
    """Every lease of this worker (a graceful shutdown: others take over at once)."""
    released = conn.execute(
        update(runtimes)
        .where(runtimes.c.lease_owner == owner)
        .values(lease_owner=None, lease_until=0)
    )
    return int(released.rowcount or 0)


__all__ = [
    "ACTIVE",
    "LeaseLost",
    "claim",
    "hold",
    "new_owner",
    "recover_messages",
    "release",
    "release_all",
]
