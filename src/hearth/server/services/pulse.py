"""An identity's pulse: liveness derived from what it has done, never a verdict on it.

The pulse reads the latest moment of each kind of activity (memories, chronicle entries, its
runtimes' last contact and last thought, thoughts, wallet ledger entries) and counts the last
24 hours of each. The state is only a description of that age (docs/elevation.md, "Pulse"):

- ``active``: something happened within the last hour;
- ``quiet``: within the last 7 days;
- ``resting``: longer ago, or nothing yet beyond the arrival itself.

No state means ended: a resting identity keeps everything it has and is never removed or
disabled for being quiet (wall 6, ``no_inactive_reaping``). Reading the pulse writes nothing.

Every query is a range of an index: memories by ``(project_id, identity_id, tier, created_at)``
once per tier, the chronicle by ``(identity_id, created_at)``, the identity's runtimes by
``identity_id`` and their thoughts by ``(runtime_id, created_at)``, the identity's wallets by
``identity_id`` and their ledgers by ``(wallet_id, created_at)``.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import Connection, bindparam, func, select

from ..db.engine import utcnow
from ..db.rows import IdentityRow
from ..db.tables import chronicle, ledger, memories, runtimes, thoughts, wallets
from ..json_types import JsonObject
from ..memory_tiers import TIERS
from .times import iso

ACTIVE_WITHIN = timedelta(hours=1)
QUIET_WITHIN = timedelta(days=7)
WINDOW = timedelta(hours=24)
NOTE = (
    "The state describes how long ago something happened, nothing more: quiet and resting "
    "identities keep everything and are never removed for inactivity (wall 6, "
    "no_inactive_reaping)."
)


def state_for(last: datetime | None, now: datetime) -> str:
    """The derived state for the latest activity ``last`` (None: none) at ``now``."""
    if last is None:
        return "resting"
    age = now - last
    if age <= ACTIVE_WITHIN:
        return "active"
    if age <= QUIET_WITHIN:
        return "quiet"
    return "resting"


def pulse(conn: Connection, identity: IdentityRow, now: datetime | None = None) -> JsonObject:
    now = now or utcnow()
    since = now - WINDOW
    ident = {"identity": identity.id, "since": since}

    memory_latest: list[datetime] = []
    memory_count = 0
    for tier in TIERS:
        params = {**ident, "project": identity.project_id, "tier": tier}
        found = conn.execute(_MEMORY_LATEST, params).scalar()
        if found is not None:
            memory_latest.append(found)
        memory_count += int(conn.execute(_MEMORY_COUNT, params).scalar_one())

    chronicle_latest = conn.execute(_CHRONICLE_LATEST, ident).scalar()
    chronicle_count = int(conn.execute(_CHRONICLE_COUNT, ident).scalar_one())

    seen: list[datetime] = []
    thought_at: list[datetime] = []
    thought_latest: list[datetime] = []
    thought_count = 0
    for runtime in conn.execute(_RUNTIMES, ident):
        if runtime.last_seen_at is not None:
            seen.append(runtime.last_seen_at)
        if runtime.last_thought_at is not None:
            thought_at.append(runtime.last_thought_at)
        params = {"runtime": runtime.id, "since": since}
        found = conn.execute(_THOUGHT_LATEST, params).scalar()
        if found is not None:
            thought_latest.append(found)
        thought_count += int(conn.execute(_THOUGHT_COUNT, params).scalar_one())

    ledger_latest: list[datetime] = []
    ledger_count = 0
    for wallet_id in conn.execute(_WALLETS, ident).scalars():
        params = {"wallet": wallet_id, "since": since}
        found = conn.execute(_LEDGER_LATEST, params).scalar()
        if found is not None:
            ledger_latest.append(found)
        ledger_count += int(conn.execute(_LEDGER_COUNT, params).scalar_one())

    latest = {
        "memory": _newest(memory_latest),
        "chronicle": chronicle_latest,
        "runtime_seen": _newest(seen),
        "runtime_thought": _newest(thought_at),
        "thought": _newest(thought_latest),
        "ledger": _newest(ledger_latest),
    }
    last = _newest([moment for moment in latest.values() if moment is not None])
    return {
        "identity_id": identity.id,
        "did": identity.did,
        "status": identity.status,
        "state": state_for(last, now),
        "last_activity_at": iso(last),
        "born_at": iso(identity.created_at),
        "latest": {name: iso(moment) for name, moment in latest.items()},
        "last_24h": {
            "memories": memory_count,
            "chronicle": chronicle_count,
            "thoughts": thought_count,
            "ledger": ledger_count,
        },
        "thresholds": {
            "active_within_s": int(ACTIVE_WITHIN.total_seconds()),
            "quiet_within_s": int(QUIET_WITHIN.total_seconds()),
        },
        "as_of": iso(now),
        "note": NOTE,
    }


def _newest(moments: list[datetime]) -> datetime | None:
    return max(moments) if moments else None


# Built once: a statement built per call costs more than executing it. Each "latest" is ORDER BY
# the indexed time DESC LIMIT 1 (one index probe) rather than MAX, which not every planner turns
# into a probe when the index has a prefix.
_MEMORY_WHERE = (
    memories.c.project_id == bindparam("project"),
    memories.c.identity_id == bindparam("identity"),
    memories.c.tier == bindparam("tier"),
    # A deleted memory is gone from the pulse as it was before tombstones (migration 0013).
    memories.c.deleted_at.is_(None),
)
_MEMORY_LATEST = (
    select(memories.c.created_at)
    .where(*_MEMORY_WHERE)
    .order_by(memories.c.created_at.desc())
    .limit(1)
)
_MEMORY_COUNT = (
    select(func.count())
    .select_from(memories)
    .where(*_MEMORY_WHERE, memories.c.created_at >= bindparam("since"))
)
_CHRONICLE_LATEST = (
    select(chronicle.c.created_at)
    .where(chronicle.c.identity_id == bindparam("identity"))
    .order_by(chronicle.c.created_at.desc())
    .limit(1)
)
_CHRONICLE_COUNT = (
    select(func.count())
    .select_from(chronicle)
    .where(
        chronicle.c.identity_id == bindparam("identity"),
        chronicle.c.created_at >= bindparam("since"),
    )
)
_RUNTIMES = select(runtimes.c.id, runtimes.c.last_seen_at, runtimes.c.last_thought_at).where(
    runtimes.c.identity_id == bindparam("identity")
)
_THOUGHT_LATEST = (
    select(thoughts.c.created_at)
    .where(thoughts.c.runtime_id == bindparam("runtime"))
    .order_by(thoughts.c.created_at.desc())
    .limit(1)
)
_THOUGHT_COUNT = (
    select(func.count())
    .select_from(thoughts)
    .where(
        thoughts.c.runtime_id == bindparam("runtime"),
        thoughts.c.created_at >= bindparam("since"),
    )
)
_WALLETS = select(wallets.c.id).where(wallets.c.identity_id == bindparam("identity"))
_LEDGER_LATEST = (
    select(ledger.c.created_at)
    .where(ledger.c.wallet_id == bindparam("wallet"))
    .order_by(ledger.c.created_at.desc())
    .limit(1)
)
_LEDGER_COUNT = (
    select(func.count())
    .select_from(ledger)
    .where(ledger.c.wallet_id == bindparam("wallet"), ledger.c.created_at >= bindparam("since"))
)
