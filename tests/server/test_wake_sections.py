"""Partial wake rebuilds: a change rebuilds the sections whose tables it wrote, and no other.

Three claims, each checked on SQLite and PostgreSQL:
- every section's builder reads only the tables ``wake_sections.READS`` names for it (a new
  read that is not declared would let a change go unseen, so it fails here);
- a mutation's transaction records the tables it wrote (``db/writes.py``), through Core, the
  driver-level fast path and textual SQL alike;
- after each kind of mutation the wake answered from kept and rebuilt sections equals the one
  built from scratch, and only the sections the mutation touched were built.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.sql.util import find_tables

from hearth.server.db import counters, direct, writes
from hearth.server.db.engine import utcnow
from hearth.server.db.tables import chronicle, memories, runtimes, vault_secrets
from hearth.server.services import wake as wake_service
from hearth.server.services import wake_counts
from hearth.server.services.wake_sections import READS, SCOPE, SECTIONS, touched
from tests.support.databases import in_db
from tests.support.live import Live, live_on
from tests.support.memories import Owner
from tests.support.wake import insert_memories, memory_row, owner_and_other, runtime_row

BACKENDS = ["sqlite", "postgresql"]
_COUNTED_TABLE = {c.kind: c.table for c in counters.COUNTED}


def _counted_table(kind: str) -> str:
    """The table a counter kind counts (memory kinds carry their tier after a colon)."""
    return _COUNTED_TABLE.get(kind) or _COUNTED_TABLE[kind.split(":", maxsplit=1)[0]]


@contextmanager
def _reads_per_section(
    engine: sa.Engine, monkeypatch: pytest.MonkeyPatch
) -> Iterator[dict[str, set[str]]]:
    """The tables each section's builder read (counters: the tables they count)."""
    seen: dict[str, set[str]] = {name: set() for name in SECTIONS}
    current: list[str] = []

    def statement(_conn: Any, clause: Any, *_: Any) -> None:
        if not current:
            return
        for table in find_tables(clause, include_crud=True, include_joins=True):
            if table.name != "wake_counts":  # read through Counts, checked below
                seen[current[-1]].add(table.name)

    def within(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any, **kwargs: Any) -> Any:
            current.append(name)
            try:
                return fn(*args, **kwargs)
            finally:
                current.pop()

        return run

    original_of = wake_counts.Counts.of

    def of(self: wake_counts.Counts, kind: str, scopes: Any = (wake_counts.PROJECT,)) -> int:
        seen[current[-1]].add(_counted_table(kind))
        return original_of(self, kind, scopes)

    original_totals = wake_counts.memory_totals

    def totals(conn: sa.Connection, project_id: str) -> dict[str, int]:
        seen[current[-1]].add("memories")
        return original_totals(conn, project_id)

    for name, builder in list(wake_service.BUILDERS.items()):
        monkeypatch.setitem(wake_service.BUILDERS, name, within(name, builder))
    monkeypatch.setattr(wake_service, "_scope", within(SCOPE, wake_service._scope))
    monkeypatch.setattr(wake_counts.Counts, "of", of)
    monkeypatch.setattr(wake_counts, "memory_totals", totals)
    event.listen(engine, "before_execute", statement)
    try:
        yield seen
    finally:
        event.remove(engine, "before_execute", statement)


@pytest.mark.parametrize("backend", BACKENDS)
def test_each_section_reads_only_its_declared_tables(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with live_on(backend, tmp_path) as live:
        owner, project_id, other_id = owner_and_other(live)
        now = utcnow()
        rows = [memory_row(project_id, owner.id, "episodic", f"m{i}", now) for i in range(3)] + [
            memory_row(project_id, owner.id, "foundational", "f", now, patch={"walls_add": []})
        ]
        insert_memories(live, rows)
        runtime = runtime_row(str(uuid.uuid4()), project_id, owner.id, "r", now)
        in_db(live, lambda conn: conn.execute(sa.insert(runtimes), [runtime]))

        def wakes(conn: sa.Connection) -> None:
            for focus in (owner.id, other_id, None):
                wake_service.build(conn, project_id, focus)

        seen = _on_sync_connection(live, wakes, monkeypatch)
    for name in SECTIONS:
        assert seen[name], f"{name} read nothing: the instrument is broken"
        assert seen[name] <= READS[name], (name, sorted(seen[name] - READS[name]))


def _on_sync_connection(
    live: Live, fn: Callable[[sa.Connection], None], monkeypatch: pytest.MonkeyPatch
) -> dict[str, set[str]]:
    async def run() -> dict[str, set[str]]:
        engine = create_async_engine(live.settings.database_url)
        try:
            with _reads_per_section(engine.sync_engine, monkeypatch) as seen:
                async with engine.connect() as conn:
                    await conn.run_sync(fn)
            return seen
        finally:
            await engine.dispose()

    return asyncio.run(run())


def test_touched_sections_follow_the_tables() -> None:
    assert touched(None) == frozenset(SECTIONS)
    assert touched({writes.UNKNOWN}) == frozenset(SECTIONS)
    assert touched({"vault_secrets"}) == {"kept"}
    assert touched({"memories", "chronicle"}) == {"agents", "remembered"}
    assert touched({"api_keys", "ledger"}) == frozenset()
    assert SCOPE in touched({"identities"})


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_tracked_transaction_records_the_tables_it_wrote(backend: str, tmp_path: Path) -> None:
    with live_on(backend, tmp_path) as live:
        owner = Owner.new(live)
        project_id = owner.reg["project"]["id"]

        def check(conn: sa.Connection) -> None:
            assert writes.tables(conn) is None
            conn.execute(sa.select(memories.c.id).limit(1))
            with writes.tracked(conn):
                conn.execute(sa.select(memories.c.id).limit(1))
                assert writes.tables(conn) == frozenset()
                direct.run(
                    conn,
                    chronicle.delete().where(chronicle.c.id == sa.bindparam("id")),
                    {"id": str(uuid.uuid4())},
                )
                conn.execute(vault_secrets.delete().where(vault_secrets.c.project_id == project_id))
                assert writes.tables(conn) == {"chronicle", "vault_secrets"}
                conn.execute(sa.text("DELETE FROM ledger WHERE 1 = 0"))
                assert writes.UNKNOWN in (writes.tables(conn) or ())
            assert writes.tables(conn) is None
            with writes.tracked(conn):
                conn.exec_driver_sql("UPDATE ledger SET amount = amount WHERE 1 = 0")
                assert writes.tables(conn) == {writes.UNKNOWN}

        # The service's own Database: its engines listen (db/writes.py).
        in_db(live, check)


def _wake(client: Any, owner: Owner, **params: str) -> tuple[str, dict[str, Any]]:
    answer = client.get("/v1/wake", params={"identity_id": owner.id, **params})
    assert answer.status_code == 200, answer.text
    document = answer.json()
    document.pop("generated_at")
    return answer.headers["X-Wake-Cache"], document


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_change_rebuilds_only_the_sections_it_touched(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[str] = []

    def counted(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any, **kwargs: Any) -> Any:
            built.append(name)
            return fn(*args, **kwargs)

        return run

    for name, builder in list(wake_service.BUILDERS.items()):
        monkeypatch.setitem(wake_service.BUILDERS, name, counted(name, builder))
    monkeypatch.setattr(wake_service, "_scope", counted(SCOPE, wake_service._scope))

    with live_on(backend, tmp_path) as live:
        owner = Owner.new(live)
        with owner.client() as client:

            def after(change: Callable[[], Any]) -> set[str]:
                """The sections a wake built after ``change``; the wake equals a full build."""
                change()
                built.clear()
                state, partial = _wake(client, owner)
                rebuilt = set(built)
                assert state == "miss"
                _, whole = _wake(client, owner, refresh="true")
                assert partial == whole
                return rebuilt

            def vault(name: str) -> Callable[[], Any]:
                return lambda: client.put(
                    f"/v1/vault/{name}", json={"value": "v"}
                ).raise_for_status()

            # The bearer's first mutation in this process is stamped after its commit, with
            # every section; the process knows the bearer's project from then on.
            assert after(vault("first")) == set(SECTIONS)
            assert after(vault("second")) == {"kept"}
            assert after(lambda: owner.store("a new fact", agent_id=owner.id)) == {
                "agents",
                "remembered",
            }
            provisioned = {"name": "home", "mode": "self", "identity_id": owner.id}
            assert after(lambda: client.post("/v1/runtimes", json=provisioned)) == {"runtimes"}
            # A mutation that no section reads moves the stamp (a rendered answer is not
            # served) and rebuilds nothing: the document is assembled again.
            assert after(lambda: client.post("/v1/keys", json={"name": "ci"})) == set()
            born = lambda: client.post("/v1/bootstrap", json={"name": "Kestrel"})  # noqa: E731
            assert after(born) == set(SECTIONS)
            # Nothing changed: the rendered answer itself is served.
            assert _wake(client, owner)[0] == "hit"
