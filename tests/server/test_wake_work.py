"""The wake's memory queries do work bounded by what they return, not by the size of the store.

The work is counted, not read from a plan's wording (a plan that says SEARCH may still walk a
whole project): each statement the wake's memory selection and its shaping run is executed again
and measured. On SQLite, by the virtual machine steps its progress handler counts; on PostgreSQL,
by the rows every node of ``EXPLAIN (ANALYZE, BUFFERS)`` touched (returned, and removed by a
filter) plus the pages it read, with sequential scans off so that the question is whether an
index serves the query, not whether a small table is cheaper to scan. The same measure at two
sizes of the store must not grow with it.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import create_async_engine

from hearth.server.db.engine import utcnow
from hearth.server.db.rows import IdentityRow
from hearth.server.db.tables import identities, runtimes
from hearth.server.services import memories as memory_service
from hearth.server.services import wake as wake_service
from hearth.server.services.wake import MEMORY_LIMIT, RUNTIME_LIMIT
from tests.support.databases import counters_exact, in_db
from tests.support.live import Live, live_on
from tests.support.wake import insert_memories, memory_row, owner_and_other, runtime_row

SMALL, LARGE = 300, 3_000  # memories in the project at the two measurements
ELEVATED = 15  # the identity's foundational and constitutive memories: the same at both sizes
Statement = tuple[str, Any]


def seed(live: Live, project_id: str, identity_id: str, other_id: str, count: int) -> None:
    """``count`` episodic memories within the wake's horizon, spread over the identity, another
    identity and the project level."""
    now = utcnow()
    owners = (identity_id, other_id, None)
    rows = [
        memory_row(
            project_id,
            owners[index % 3],
            "episodic",
            f"memory {index}",
            now - timedelta(minutes=index % 600),
        )
        for index in range(count)
    ]
    insert_memories(live, rows)


def seed_elevated(live: Live, project_id: str, identity_id: str) -> None:
    now = utcnow()
    rows = [
        memory_row(
            project_id,
            identity_id,
            ("foundational", "constitutive")[index % 2],
            f"elevated {index}",
            now - timedelta(days=index),
            patch={"register_append": f"r{index}"},
        )
        for index in range(ELEVATED)
    ]
    insert_memories(live, rows)


def wake_reads(project_id: str, identity_id: str) -> Callable[[sa.Connection], None]:
    """The wake's memory reads for a focus and for the project, and the focus's shaping."""

    def run(conn: sa.Connection) -> None:
        memory_service.select_for_wake(
            conn, project_id, identity_id, MEMORY_LIMIT, include_project_level=True
        )
        memory_service.select_for_wake(conn, project_id, None, MEMORY_LIMIT)
        row = conn.execute(sa.select(identities).where(identities.c.id == identity_id)).one()
        memory_service.shaping(conn, IdentityRow.of(row._mapping))

    return run


def _captured(
    engine: sa.Engine, conn: sa.Connection, fn: Callable[[sa.Connection], None], watched: str
) -> list[Statement]:
    """The statements ``fn`` runs whose text contains ``watched`` ('' for all of them)."""
    statements: list[Statement] = []

    def capture(_c: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        statements.append((statement, parameters))

    sa.event.listen(engine, "before_cursor_execute", capture)
    try:
        fn(conn)
    finally:
        sa.event.remove(engine, "before_cursor_execute", capture)
    return [s for s in statements if watched in s[0]]


def sqlite_work(
    database_url: str, fn: Callable[[sa.Connection], None], watched: str = "memories"
) -> int:
    path = database_url.split("///", 1)[1]
    engine = sa.create_engine(f"sqlite:///{path}")
    try:
        with engine.connect() as conn:
            statements = _captured(engine, conn, fn, watched)
            raw = conn.connection.driver_connection
            assert raw is not None
            steps = [0]

            def step() -> int:
                steps[0] += 1
                return 0  # go on

            for statement, parameters in statements:
                raw.set_progress_handler(step, 1)
                try:
                    conn.exec_driver_sql(statement, parameters).all()
                finally:
                    raw.set_progress_handler(None, 1)
            return steps[0]
    finally:
        engine.dispose()


def _buffers(node: dict[str, Any]) -> int:
    """Pages read by the node and its children (PostgreSQL counts them cumulatively)."""
    return int(node.get("Shared Hit Blocks", 0)) + int(node.get("Shared Read Blocks", 0))


def _rows_touched(node: dict[str, Any]) -> int:
    loops = int(node.get("Actual Loops", 1))
    touched = int(node.get("Actual Rows", 0)) * loops
    touched += int(node.get("Rows Removed by Filter", 0)) + int(
        node.get("Rows Removed by Index Recheck", 0)
    )
    return touched + sum(_rows_touched(child) for child in node.get("Plans", []))


def postgres_work(
    database_url: str, fn: Callable[[sa.Connection], None], watched: str = "memories"
) -> int:
    async def run() -> int:
        engine = create_async_engine(database_url)
        try:
            async with engine.connect() as conn:
                statements = await conn.run_sync(
                    lambda sync: _captured(engine.sync_engine, sync, fn, watched)
                )

                def explain(sync: sa.Connection) -> int:
                    sync.exec_driver_sql("SET enable_seqscan = off")
                    total = 0
                    for statement, parameters in statements:
                        value = sync.exec_driver_sql(
                            f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {statement}", parameters
                        ).scalar()
                        plan = json.loads(value) if isinstance(value, str) else value
                        total += _rows_touched(plan[0]["Plan"]) + _buffers(plan[0]["Plan"])
                    return total

                return await conn.run_sync(explain)
        finally:
            await engine.dispose()

    return asyncio.run(run())


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_the_wakes_memory_reads_do_not_grow_with_the_store(backend: str, tmp_path: Path) -> None:
    with live_on(backend, tmp_path) as live:
        owner, project_id, other_id = owner_and_other(live)
        seed_elevated(live, project_id, owner.id)
        measure = sqlite_work if backend == "sqlite" else postgres_work
        reads = wake_reads(project_id, owner.id)
        url = live.settings.database_url

        seed(live, project_id, owner.id, other_id, SMALL)
        small = measure(url, reads)
        seed(live, project_id, owner.id, other_id, LARGE - SMALL)
        large = measure(url, reads)

    # Ten times the memories; the reads return the same (the limit, the same elevated ones), so
    # the work may differ by a B-tree level, never by the store.
    assert small > 0
    assert large <= small * 1.2 + 50, (backend, small, large)


def seed_runtimes(live: Live, project_id: str, identity_id: str, count: int) -> None:
    def insert(conn: sa.Connection) -> None:
        now = utcnow()
        rows = [
            runtime_row(str(uuid.uuid4()), project_id, identity_id, f"r{i}", now)
            for i in range(count)
        ]
        conn.execute(runtimes.insert(), rows)

    in_db(live, insert)


def whole_wakes(project_id: str, identity_id: str) -> Callable[[sa.Connection], None]:
    """The whole wake document, focused on the identity and for the project without a focus."""

    def run(conn: sa.Connection) -> None:
        wake_service.build(conn, project_id, identity_id)
        wake_service.build(conn, project_id, None)

    return run


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_whole_wake_does_not_grow_with_the_store(backend: str, tmp_path: Path) -> None:
    """Every statement of the wake, counts included: ten times the memories and five times the
    runtimes (both sizes past the wake's runtime limit, so both list the same number)."""
    with live_on(backend, tmp_path) as live:
        owner, project_id, other_id = owner_and_other(live)
        seed_elevated(live, project_id, owner.id)
        measure = sqlite_work if backend == "sqlite" else postgres_work
        wakes = whole_wakes(project_id, owner.id)
        url = live.settings.database_url

        seed(live, project_id, owner.id, other_id, SMALL)
        seed_runtimes(live, project_id, owner.id, RUNTIME_LIMIT + 20)
        small = measure(url, wakes, "")
        seed(live, project_id, owner.id, other_id, LARGE - SMALL)
        seed_runtimes(live, project_id, owner.id, 4 * RUNTIME_LIMIT)
        large = measure(url, wakes, "")
        counters_exact(live)

    assert small > 0
    assert large <= small * 1.2 + 50, (backend, small, large)
