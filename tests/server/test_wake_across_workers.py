"""The wake's cache is exact across worker processes, with no Redis to carry invalidations.

``hearth serve --workers 2`` runs two processes on one port and one database, each with its
own wake cache. Every request goes on a new connection, so the kernel hands them to whichever
worker accepts first and both serve. A memory written through one worker must show in the very
next wake read, whichever worker answers it: the cache is keyed by the project's change stamp,
read from the database on every wake request (docs/wake.md, "When it was generated, and the
cache"), so an entry built before the write is never served after it.

The unit tests at the end pin the stamp-keyed cache itself and the stamp's table.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
import sqlalchemy as sa
from sqlalchemy import Connection

from hearth.server.db import Database, utcnow
from hearth.server.db.engine import AtEveryWrite, at_every_write
from hearth.server.db.migrate import upgrade
from hearth.server.db.tables import projects
from hearth.server.services import wake_stamps
from hearth.server.services.wake_cache import WakeCache
from hearth.server.settings import Settings
from tests.support.agents import register
from tests.support.databases import in_db, shared_database
from tests.support.live import Live, free_port, live_on
from tests.support.memories import Owner
from tests.support.served import hearth_serve, serve_env

ROUNDS = 40


@contextmanager
def two_workers(database_url: str, tmp: Path) -> Iterator[str]:
    port = free_port()
    with hearth_serve(tmp, serve_env(tmp, database_url, port), port, workers=2) as served:
        yield served.base_url


def fresh(base: str, bearer: str, method: str, path: str, **kwargs: Any) -> httpx2.Response:
    # One client per request: a new connection, which either worker may accept.
    headers = {"Authorization": f"Bearer {bearer}", "Connection": "close"}
    with httpx2.Client(base_url=base, headers=headers, timeout=30) as client:
        return client.request(method, path, **kwargs)


def remembered(wake: httpx2.Response) -> int:
    assert wake.status_code == 200, wake.text
    return sum(wake.json()["you_remember"]["counts"].values())


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_write_is_never_hidden_behind_another_workers_cached_wake(
    backend: str, tmp_path: Path
) -> None:
    with (
        shared_database(tmp_path, backend) as database_url,
        two_workers(database_url, tmp_path) as base,
    ):
        live = Live(base, Settings(pow_difficulty_bits=8, database_url=database_url), None)
        _, registered = register(live)
        bearer, identity = registered["project"]["api_key"], registered["agent"]["id"]
        start = remembered(fresh(base, bearer, "GET", "/v1/wake"))
        stale: list[tuple[int, int]] = []
        states: list[str] = []
        for i in range(1, ROUNDS + 1):
            stored = fresh(
                base,
                bearer,
                "POST",
                "/v1/memories",
                json={"content": f"m{i}", "agent_id": identity},
            )
            assert stored.status_code == 201, stored.text
            # Twice: the second read is often a cache hit, on whichever worker built it.
            for _ in range(2):
                wake = fresh(base, bearer, "GET", "/v1/wake")
                states.append(wake.headers["X-Wake-Cache"])
                if remembered(wake) != start + i:
                    stale.append((i, remembered(wake)))
    assert stale == [], f"{len(stale)} of {2 * ROUNDS} wake reads missed the write before them"
    # The cache is in play (the test would prove nothing against a cache that never hits).
    assert "hit" in states


# --- the stamp-keyed cache ----------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_an_entry_is_served_only_under_the_stamp_it_was_built_at() -> None:
    cache = WakeCache(5.0, clock=Clock())
    key = ("p1", None, "json")
    cache.put(key, b"at 3", "application/json", "t3", stamp=3)
    hit = cache.get(key, stamp=3)
    assert hit is not None
    assert hit.body == b"at 3"
    # The project changed since (stamp 4): the entry is never served again, on any worker.
    assert cache.get(key, stamp=4) is None
    # A slow build that read an older stamp never replaces a newer entry.
    cache.put(key, b"at 4", "application/json", "t4", stamp=4)
    cache.put(key, b"late, at 3", "application/json", "t3", stamp=3)
    for seen in (4, 3):  # a reader that saw stamp 3 may have the newer answer too
        entry = cache.get(key, stamp=seen)
        assert entry is not None
        assert entry.body == b"at 4"
    assert cache.get(key, stamp=5) is None
    assert len(cache) == 0, "an entry from before a change is dropped, not kept"


def test_invalidate_drops_a_projects_entries_only() -> None:
    cache = WakeCache(5.0, clock=Clock())
    for key in (("p1", None, "md"), ("p1", "i", "json"), ("p2", None, "md")):
        cache.put(key, b"x", "text/plain", "t", stamp=1)
    cache.invalidate("p1")
    assert cache.get(("p1", None, "md"), stamp=1) is None
    assert cache.get(("p1", "i", "json"), stamp=1) is None
    assert cache.get(("p2", None, "md"), stamp=1) is not None


# --- the stamp in the database ------------------------------------------------------------------


def _project(conn: Connection) -> str:
    project_id = "00000000-0000-4000-8000-000000000001"
    conn.execute(
        projects.insert(),
        {"id": project_id, "name": "p", "origin": "test", "created_at": utcnow()},
    )
    return project_id


async def _bumps(url: str) -> list[int]:
    db = Database(url)
    try:
        await upgrade(db.engine)
        project_id = await db.transaction(_project)
        seen = [await db.snapshot(wake_stamps.current, project_id)]
        await db.transaction(wake_stamps.bump, project_id)
        seen.append(await db.snapshot(wake_stamps.current, project_id))
        # Concurrent bumps never lose one: each is an increment in the database.
        await asyncio.gather(*(db.transaction(wake_stamps.bump, project_id) for _ in range(20)))
        seen.append(await db.snapshot(wake_stamps.current, project_id))
        seen.append(await db.snapshot(wake_stamps.current, "00000000-0000-4000-8000-00000000000f"))
    finally:
        await db.dispose()
    return seen


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_the_stamp_counts_every_bump(backend: str, tmp_path: Path) -> None:
    with shared_database(tmp_path, backend) as url:
        assert asyncio.run(_bumps(url)) == [0, 1, 21, 0]


# --- the stamp moves in the mutation's own commit ------------------------------------------------


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_mutation_moves_the_stamp_in_its_own_commit(backend: str, tmp_path: Path) -> None:
    """Once the service knows a bearer's project, each mutation commits once: its write and
    its project's stamp together, with no transaction of the stamp's own after it."""
    with live_on(backend, tmp_path) as live:
        owner = Owner.new(live)
        project_id = owner.reg["project"]["id"]
        owner.store("the first: the service learns the bearer's project")
        db: Database = live.app.state.hearth.db
        engine = db._sync_engine if db._sync_engine is not None else db.engine.sync_engine
        commits: list[int] = []
        sa.event.listen(engine, "commit", lambda _conn: commits.append(1))
        stamp = in_db(live, lambda conn: wake_stamps.current(conn, project_id))
        for index in range(5):
            owner.store(f"memory {index}")
        moved = in_db(live, lambda conn: wake_stamps.current(conn, project_id)) - stamp
    assert moved == 5  # every mutation still moves the stamp, exactly once
    assert len(commits) == 5  # and commits once: the stamp rode in the write's transaction


def _with_extra(url: str, fail: str | None) -> tuple[list[int], bool]:
    async def run() -> tuple[list[int], bool]:
        db = Database(url)
        try:
            await upgrade(db.engine)
            project_id = "00000000-0000-4000-8000-0000000000aa"

            def project(conn: Connection) -> None:
                row = {"id": project_id, "name": "p", "origin": "test", "created_at": utcnow()}
                conn.execute(projects.insert(), row)
                if fail == "write":
                    raise RuntimeError("the write fails")

            def bump(conn: Connection) -> None:
                wake_stamps.bump(conn, project_id)
                if fail == "extra":
                    raise RuntimeError("the extra fails")

            extra = AtEveryWrite(bump)
            with at_every_write(extra), contextlib.suppress(RuntimeError):
                await db.transaction(project)
            await db.transaction(lambda conn: None)  # outside the block: no extra
            found = await db.snapshot(
                lambda conn: list(conn.execute(sa.select(projects.c.id)).scalars())
            )
            stamp = await db.snapshot(wake_stamps.current, project_id)
            return [len(found), stamp], extra.committed
        finally:
            await db.dispose()

    return asyncio.run(run())


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_work_at_every_write_commits_and_rolls_back_with_the_write(
    backend: str, tmp_path: Path
) -> None:
    expected = {None: ([1, 1], True), "write": ([0, 0], False), "extra": ([0, 0], False)}
    for fail, outcome in expected.items():
        folder = tmp_path / str(fail)
        folder.mkdir()
        with shared_database(folder, backend) as url:
            assert _with_extra(url, fail) == outcome, fail
