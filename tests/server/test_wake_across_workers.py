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
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from sqlalchemy import Connection

from hearth.server.db import Database, utcnow
from hearth.server.db.migrate import upgrade
from hearth.server.db.tables import projects
from hearth.server.services import wake_stamps
from hearth.server.services.wake import WakeCache
from hearth.server.settings import Settings

from .live import Live, free_port, hearth_serve, register, serve_env, shared_database

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
