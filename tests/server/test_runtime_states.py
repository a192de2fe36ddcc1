"""The runtime state machine: the table itself (every legal move, every illegal one), and
``services.runtimes.move`` on a real database (the event appended with the move, the conditional
UPDATE refusing a stale move, two movers at once); on SQLite, and on PostgreSQL when
SERVICE_TEST_DATABASE_URL is set."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import Connection, select, update

from hearth.server import runtime_states
from hearth.server.db import Database
from hearth.server.db.rows import RuntimeRow
from hearth.server.db.tables import runtime_events, runtimes
from hearth.server.errors import ApiError
from hearth.server.runtime_states import MOVES, STATES
from hearth.server.services import runtimes as runtime_service
from hearth.server.settings import Settings
from tests.support.databases import in_db
from tests.support.live import Live, live_on
from tests.support.runtimes import bridged_body, new_project, stored_row

# The specification's "Runtime status" table, written out independently of the module: (from,
# trigger) -> (to, event). docs/runtimes.md says why deprovision also leaves `starting` and why
# `crash` leaves every state but `error`.
EXPECTED: dict[tuple[str, str], tuple[str, str]] = {
    ("provisioned", "bind"): ("starting", "started"),
    ("starting", "handshake"): ("running", "bridge_handshake_ok"),
    ("running", "idle_timeout"): ("idle", "idle"),
    ("idle", "wake"): ("running", "started"),
    ("starting", "deprovision"): ("stopped", "stopped"),
    ("running", "deprovision"): ("stopped", "stopped"),
    ("idle", "deprovision"): ("stopped", "stopped"),
    ("idle", "auto_stop"): ("stopped", "stopped"),
    ("error", "restart"): ("starting", "started"),
    **{(state, "crash"): ("error", "error") for state in STATES if state != "error"},
    **{(state, "move_away"): ("stopped", "stopped") for state in STATES if state != "stopped"},
}
ALL_PAIRS = list(itertools.product(STATES, runtime_states.TRIGGERS))
ILLEGAL = [pair for pair in ALL_PAIRS if pair not in EXPECTED]

# A path through the table from `provisioned` to each state, so that a real runtime can be put
# in any state by legal moves only.
PATH_TO: dict[str, list[str]] = {
    "provisioned": [],
    "starting": ["bind"],
    "running": ["bind", "handshake"],
    "idle": ["bind", "handshake", "idle_timeout"],
    "stopped": ["bind", "handshake", "deprovision"],
    "error": ["bind", "crash"],
}


# --- the table ----------------------------------------------------------------------------------


def test_states_events_and_timings() -> None:
    assert STATES == ("provisioned", "starting", "running", "idle", "stopped", "error")
    assert runtime_states.INITIAL_STATE == "provisioned"
    assert runtime_states.INITIAL_EVENT in runtime_states.EVENTS
    assert len(runtime_states.EVENTS) == 11
    # The specification's timings are the settings' defaults (tests set them in seconds).
    defaults = Settings.model_fields
    assert defaults["runtime_idle_seconds"].default == 300
    assert defaults["runtime_auto_stop_seconds"].default == 86_400
    assert defaults["runtime_heartbeat_seconds"].default == 30
    for move in MOVES.values():
        assert move.sources <= set(STATES)
        assert move.target in STATES
        assert move.event in runtime_states.EVENTS
        assert move.target not in move.sources  # every move changes the status
        assert move.voice_change  # the status is in the wake's you_run: every move is a change


@pytest.mark.parametrize(("source", "trigger"), list(EXPECTED))
def test_every_legal_move(source: str, trigger: str) -> None:
    assert runtime_states.allowed(trigger, source)
    move = runtime_states.move_for(trigger)
    assert (move.target, move.event) == EXPECTED[(source, trigger)]


@pytest.mark.parametrize(("source", "trigger"), ILLEGAL)
def test_every_illegal_move_is_refused_by_the_table(source: str, trigger: str) -> None:
    assert not runtime_states.allowed(trigger, source)
    assert trigger not in runtime_states.triggers_from(source)


def test_unknown_trigger() -> None:
    with pytest.raises(runtime_states.UnknownTrigger):
        runtime_states.move_for("teleport")


def test_the_paths_are_legal() -> None:
    for target, path in PATH_TO.items():
        state = runtime_states.INITIAL_STATE
        for trigger in path:
            assert runtime_states.allowed(trigger, state)
            state = runtime_states.move_for(trigger).target
        assert state == target


# --- move() on a real database ------------------------------------------------------------------


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def live(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Live]:
    with live_on(request.param, tmp_path_factory.mktemp("runtime_states")) as live:
        yield live


@pytest.fixture(scope="module")
def bearer(live: Live) -> str:
    return new_project(live)[0]


def new_runtime(live: Live, bearer: str) -> str:
    with live.client(bearer) as client:
        response = client.post("/v1/runtimes", json=bridged_body())
    assert response.status_code == 201, response.text
    runtime_id: str = response.json()["id"]
    return runtime_id


def runtime_in(live: Live, bearer: str, state: str) -> str:
    runtime_id = new_runtime(live, bearer)
    for trigger in PATH_TO[state]:
        in_db(live, runtime_service.move, runtime_id, trigger, detail="boom")
    return runtime_id


def events_of(conn: Connection, runtime_id: str) -> list[dict[str, Any]]:
    rows = conn.execute(
        select(runtime_events)
        .where(runtime_events.c.runtime_id == runtime_id)
        .order_by(runtime_events.c.id)
    )
    return [dict(r._mapping) for r in rows]


@pytest.mark.parametrize(("source", "trigger"), list(EXPECTED))
def test_move_applies_and_appends_its_event(
    live: Live, bearer: str, source: str, trigger: str
) -> None:
    runtime_id = runtime_in(live, bearer, source)
    before = in_db(live, events_of, runtime_id, write=False)
    detail = "provider unreachable" if trigger == "crash" else None
    moved = in_db(live, runtime_service.move, runtime_id, trigger, detail=detail)
    target, event = EXPECTED[(source, trigger)]
    assert moved.status == target
    row = in_db(live, stored_row, runtime_id, write=False)
    assert row["status"] == target
    assert row["status_changed_at"] == moved.status_changed_at
    assert row["last_error"] == ("provider unreachable" if target == "error" else None)
    if target == "running":
        assert row["last_work_at"] == row["status_changed_at"]
    after = in_db(live, events_of, runtime_id, write=False)
    assert len(after) == len(before) + 1
    assert after[-1]["event"] == event
    assert after[-1]["details"]["from"] == source
    assert after[-1]["details"]["to"] == target
    assert after[-1]["details"]["trigger"] == trigger
    if trigger == "crash":
        assert after[-1]["details"]["last_error"] == "provider unreachable"


@pytest.mark.parametrize(("source", "trigger"), ILLEGAL)
def test_illegal_move_changes_nothing(live: Live, bearer: str, source: str, trigger: str) -> None:
    runtime_id = runtime_in(live, bearer, source)
    before_row = in_db(live, stored_row, runtime_id, write=False)
    before = in_db(live, events_of, runtime_id, write=False)
    with pytest.raises(runtime_service.IllegalMove) as refused:
        in_db(live, runtime_service.move, runtime_id, trigger, detail="boom")
    assert refused.value.status == 409
    assert refused.value.details is not None
    assert refused.value.details["current_status"] == source
    assert refused.value.details["allowed_from"] == sorted(MOVES[trigger].sources)
    assert in_db(live, stored_row, runtime_id, write=False) == before_row
    assert in_db(live, events_of, runtime_id, write=False) == before


def test_a_crash_needs_its_last_error(live: Live, bearer: str) -> None:
    runtime_id = runtime_in(live, bearer, "running")
    with pytest.raises(ValueError, match="last_error"):
        in_db(live, runtime_service.move, runtime_id, "crash")
    assert in_db(live, stored_row, runtime_id, write=False)["status"] == "running"


def test_the_conditional_update_refuses_a_stale_move(live: Live, bearer: str) -> None:
    """A worker read `provisioned`; another bound the runtime meanwhile: the first worker's
    move, made on what it saw, finds no row with that status and is refused."""
    runtime_id = new_runtime(live, bearer)
    in_db(live, runtime_service.move, runtime_id, "bind", expected="provisioned")
    events = in_db(live, events_of, runtime_id, write=False)
    with pytest.raises(runtime_service.StaleMove) as refused:
        in_db(live, runtime_service.move, runtime_id, "bind", expected="provisioned")
    assert refused.value.status == 409
    assert refused.value.details == {
        "runtime_id": runtime_id,
        "expected_status": "provisioned",
        "current_status": "starting",
        "trigger": "bind",
    }
    assert in_db(live, events_of, runtime_id, write=False) == events
    assert in_db(live, stored_row, runtime_id, write=False)["status"] == "starting"


def test_the_update_itself_checks_the_status(live: Live, bearer: str) -> None:
    """The status check is in the UPDATE, not only in the read before it: with the row changed
    under the same transaction after move() read it, the UPDATE matches nothing."""
    runtime_id = new_runtime(live, bearer)

    def race(conn: Connection) -> None:
        conn.execute(update(runtimes).where(runtimes.c.id == runtime_id).values(status="error"))
        runtime_service.move(conn, runtime_id, "bind", expected="provisioned")

    with pytest.raises(runtime_service.StaleMove):
        in_db(live, race)
    # The whole transaction rolled back: still provisioned, no event beyond `provisioned`.
    assert in_db(live, stored_row, runtime_id, write=False)["status"] == "provisioned"
    assert [e["event"] for e in in_db(live, events_of, runtime_id, write=False)] == ["provisioned"]


async def _two_binds(url: str, runtime_id: str) -> list[Any]:
    db = Database(url)
    try:
        return await asyncio.gather(
            *(
                db.transaction(runtime_service.move, runtime_id, "bind", expected="provisioned")
                for _ in range(2)
            ),
            return_exceptions=True,
        )
    finally:
        await db.dispose()


def test_two_movers_at_once_one_wins(live: Live, bearer: str) -> None:
    for _ in range(5):
        runtime_id = new_runtime(live, bearer)
        results = asyncio.run(_two_binds(live.settings.database_url, runtime_id))
        won = [r for r in results if isinstance(r, RuntimeRow)]
        lost = [r for r in results if isinstance(r, runtime_service.MoveRefused)]
        assert len(won) == 1, results
        assert len(lost) == 1, results
        events = [e["event"] for e in in_db(live, events_of, runtime_id, write=False)]
        assert events == ["provisioned", "started"]


def test_unknown_runtime_and_trigger(live: Live, bearer: str) -> None:
    runtime_id = new_runtime(live, bearer)
    with pytest.raises(runtime_states.UnknownTrigger):
        in_db(live, runtime_service.move, runtime_id, "teleport")
    with pytest.raises(ApiError) as missing:
        in_db(live, runtime_service.move, "00000000-0000-4000-8000-000000000000", "bind")
    assert missing.value.status == 404
