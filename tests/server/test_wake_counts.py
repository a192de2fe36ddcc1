"""The wake's counters (db/counters.py) equal the counts of their rows after any sequence of
writes, on both databases: inserts, deletes, and updates that move a row from one counter to
another (a memory's tier or identity, a runtime's deletion, an identity's status), including
ones made straight in SQL, bypassing every service."""

from __future__ import annotations

import random
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from hearth.server.db import direct
from hearth.server.db.engine import utcnow
from hearth.server.db.tables import (
    adds_blocks,
    identities,
    memories,
    runtimes,
    vault_secrets,
    wake_counts,
)
from hearth.server.memory_tiers import TIERS
from tests.support.databases import counters_exact, in_db
from tests.support.live import live_on
from tests.support.memories import Owner
from tests.support.wake import owner_and_other, runtime_row

STEPS = 400


class Writer:
    """Random writes straight to the counted tables of one project."""

    def __init__(self, project_id: str, identity_ids: list[str], seed: int) -> None:
        self.project_id = project_id
        self.identity_ids = identity_ids
        self.random = random.Random(seed)
        self.now = utcnow()

    def step(self, conn: sa.Connection) -> None:
        choice = self.random.randrange(100)
        if choice < 35:
            self.new_memory(conn)
        elif choice < 45:
            self.on_a_memory(conn, None)
        elif choice < 60:
            self.on_a_memory(conn, {"tier": self.random.choice(TIERS)})
        elif choice < 70:
            self.on_a_memory(conn, {"identity_id": self.owner_or_none()})
        elif choice < 78:
            self.runtime(conn)
        elif choice < 84:
            identity_id = self.random.choice(self.identity_ids)
            status = self.random.choice(("active", "resting"))
            conn.execute(
                identities.update().where(identities.c.id == identity_id), {"status": status}
            )
        elif choice < 92:
            self.block(conn)
        else:
            self.vault(conn)

    def owner_or_none(self) -> str | None:
        return self.random.choice([*self.identity_ids, None])

    def new_memory(self, conn: sa.Connection) -> None:
        conn.execute(
            memories.insert(),
            {
                "id": str(uuid.uuid4()),
                "project_id": self.project_id,
                "identity_id": self.owner_or_none(),
                "tier": self.random.choice(TIERS),
                "key": None,
                "content": "counted",
                "created_at": self.now,
                "elevated_at": None,
                "expression_patch": None,
            },
        )

    def on_a_memory(self, conn: sa.Connection, change: dict[str, Any] | None) -> None:
        ids = conn.execute(
            sa.select(memories.c.id).where(memories.c.project_id == self.project_id)
        ).scalars()
        found = sorted(ids)
        if not found:
            return
        where = memories.c.id == self.random.choice(found)
        if change is None:
            conn.execute(memories.delete().where(where))
        else:
            conn.execute(memories.update().where(where), change)

    def runtime(self, conn: sa.Connection) -> None:
        found = sorted(
            conn.execute(
                sa.select(runtimes.c.id).where(runtimes.c.project_id == self.project_id)
            ).scalars()
        )
        action = self.random.randrange(4)
        if action == 0 or not found:
            row = runtime_row(
                str(uuid.uuid4()), self.project_id, self.owner_or_none(), "counted", self.now
            )
            conn.execute(runtimes.insert(), row)
            return
        where = runtimes.c.id == self.random.choice(found)
        if action == 1:
            conn.execute(runtimes.update().where(where), {"deleted_at": self.now})
        elif action == 2:
            conn.execute(runtimes.update().where(where), {"deleted_at": None})
        else:
            conn.execute(runtimes.delete().where(where))

    def block(self, conn: sa.Connection) -> None:
        found = sorted(
            conn.execute(
                sa.select(adds_blocks.c.cid).where(adds_blocks.c.project_id == self.project_id)
            ).scalars()
        )
        if found and self.random.random() < 0.4:
            conn.execute(
                adds_blocks.delete().where(
                    adds_blocks.c.project_id == self.project_id,
                    adds_blocks.c.cid == self.random.choice(found),
                )
            )
            return
        row = {"project_id": self.project_id, "cid": uuid.uuid4().hex, "size": 1}
        conn.execute(adds_blocks.insert(), {**row, "created_at": self.now})

    def vault(self, conn: sa.Connection) -> None:
        name = f"secret-{self.random.randrange(5)}"
        gone = conn.execute(
            vault_secrets.delete().where(
                vault_secrets.c.project_id == self.project_id, vault_secrets.c.name == name
            )
        )
        if gone.rowcount:
            return
        conn.execute(
            vault_secrets.insert(),
            {
                "id": str(uuid.uuid4()),
                "project_id": self.project_id,
                "identity_id": self.owner_or_none(),
                "name": name,
                "description": None,
                "sealing": "test",
                "ciphertext": b"\x00",
                "version": 1,
                "created_at": self.now,
                "updated_at": self.now + timedelta(seconds=1),
            },
        )


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_counters_follow_every_write(backend: str, tmp_path: Path) -> None:
    with live_on(backend, tmp_path) as live:
        owner, project_id, other_id = owner_and_other(live)
        writer = Writer(project_id, [owner.id, other_id], seed=15)
        counters_exact(live)
        for _ in range(STEPS // 50):
            # Fifty writes a transaction, then the check: some transactions move one row twice.
            in_db(live, lambda conn: [writer.step(conn) for _ in range(50)])
            counters_exact(live)

        def kinds(conn: sa.Connection) -> set[str]:
            return set(conn.execute(sa.select(wake_counts.c.kind)).scalars())

        # The sequence reached every counter it writes (a silent no-op would pass otherwise).
        seen = in_db(live, kinds)
        assert {"runtimes", "identities:active", "adds_blocks", "vault"} <= seen
        assert {f"memories:{tier}" for tier in TIERS} <= seen


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_rolled_back_write_moves_no_counter(backend: str, tmp_path: Path) -> None:
    with live_on(backend, tmp_path) as live:
        owner = Owner.new(live)
        project_id = owner.reg["project"]["id"]
        writer = Writer(project_id, [owner.id], seed=1)

        def write_then_fail(conn: sa.Connection) -> None:
            for _ in range(10):
                writer.new_memory(conn)
            raise RuntimeError("rolled back")

        def totals(conn: sa.Connection) -> list[Any]:
            return sorted(conn.execute(sa.select(wake_counts)).all())

        before = in_db(live, totals)
        with pytest.raises(RuntimeError):
            in_db(live, write_then_fail)
        assert in_db(live, totals) == before
        counters_exact(live)


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_statements_of_many_rows_count_each_row(backend: str, tmp_path: Path) -> None:
    """An INSERT or DELETE of many rows at once (an import's batches; PostgreSQL counts them
    once per statement, migration 0017): every row counted where it belongs, the untrusted and
    superseded ones nowhere, and a delete of some of them takes off exactly those."""
    with live_on(backend, tmp_path) as live:
        owner, project_id, other_id = owner_and_other(live)
        now = utcnow()
        chooser = random.Random(17)

        def row(index: int) -> dict[str, Any]:
            return {
                "id": str(uuid.uuid4()),
                "project_id": project_id,
                "identity_id": chooser.choice([owner.id, other_id, None]),
                "tier": TIERS[index % len(TIERS)],
                "key": None,
                "content": f"many {index}",
                "created_at": now,
                "elevated_at": None,
                "expression_patch": None,
                "untrusted": index % 7 == 0,
                "superseded_at": now if index % 11 == 0 else None,
            }

        def counted(conn: sa.Connection) -> int:
            kinds = wake_counts.c.kind.like("memories:%")
            total = sa.select(sa.func.sum(wake_counts.c.total)).where(kinds)
            return int(conn.execute(total).scalar_one() or 0)

        def selectable(some: list[dict[str, Any]]) -> int:
            return sum(1 for r in some if not r["untrusted"] and r["superseded_at"] is None)

        before = in_db(live, counted)  # registration's own memories
        rows = [row(index) for index in range(300)]
        in_db(live, lambda conn: conn.execute(memories.insert().values(rows[:150])))
        in_db(live, lambda conn: direct.run_many(conn, memories.insert(), rows[150:]))
        counters_exact(live)
        assert in_db(live, counted) == before + selectable(rows)
        doomed = [r["id"] for r in rows if r["tier"] in TIERS[:2]]
        gone = memories.delete().where(memories.c.id.in_(doomed))
        in_db(live, lambda conn: conn.execute(gone))
        counters_exact(live)
        left = [r for r in rows if r["tier"] not in TIERS[:2]]
        assert in_db(live, counted) == before + selectable(left)
