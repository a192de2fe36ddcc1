"""The orchestrator worker: leases, every state move it makes and its event and voice change with
short timings (idle, auto-stop, wake on an inbox event), crash -> error -> restart, and two
``hearth worker`` processes on one database with one killed mid-cycle. On SQLite, and on
PostgreSQL when SERVICE_TEST_DATABASE_URL is set. Tests wait for states; they never assert
durations."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from sqlalchemy import Connection, func, select, update

from hearth.proofs.runtime_keys import wrap_runtime_key
from hearth.proofs.thoughts import sign_thought_write
from hearth.server.db.engine import epoch_ms, utcnow
from hearth.server.db.rows import RuntimeRow
from hearth.server.db.tables import inbox_messages, runtimes, thoughts
from hearth.server.events import Change
from hearth.server.orchestrator import cycle
from hearth.server.orchestrator.custody import TrustedCustody
from hearth.server.services import inbox
from hearth.server.services import runtimes as runtime_service
from hearth.server.services.runtimes import leases
from tests.support.databases import in_db
from tests.support.fake_llm import FakeLlm
from tests.support.live import Live, live_on
from tests.support.polling import eventually
from tests.support.runtimes import MASTER_KEY, bridged_body, new_project
from tests.support.think import (
    events_of,
    llm_settings,
    message_status,
    names,
    post_message,
    put_secret,
    recorder,
    runtime_of,
    status_is,
    strand_thoughts,
    trusted_runtime,
)

KINDS = ["sqlite", "postgresql"]


@pytest.fixture(scope="module", params=KINDS)
def live(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, fake: FakeLlm
) -> Iterator[Live]:
    """Idle after 1 s without work; stopped after 3 s idle."""
    with live_on(
        request.param,
        tmp_path_factory.mktemp("orchestrator"),
        **llm_settings(fake),
        runtime_idle_seconds=1.0,
        runtime_auto_stop_seconds=3.0,
    ) as live:
        yield live


def row_of(live: Live, runtime_id: str) -> dict[str, Any]:
    def read(conn: Connection) -> dict[str, Any]:
        return dict(
            conn.execute(select(runtimes).where(runtimes.c.id == runtime_id)).one()._mapping
        )

    return dict(in_db(live, read, write=False))


def moves_of(seen: list[Change], runtime_id: str) -> list[str]:
    return [
        c.details["trigger"]
        for c in seen
        if c.kind == "runtime_status_changed" and c.details["runtime_id"] == runtime_id
    ]


# --- the state machine, driven by the worker ----------------------------------------------------


def test_every_move_of_the_worker_with_its_event_and_change(live: Live) -> None:
    seen = recorder(live)
    bearer, project_id, agent_id = new_project(live)
    with live.client(bearer) as client:
        put_secret(client, "llm-key", "sk-moves")
        rid = trusted_runtime(client, agent_id)["id"]
        # provisioned -> starting (bind) -> running (handshake: the key unwraps) -> idle
        eventually(status_is(client, rid, "idle"), "the runtime to go idle")
        assert names(events_of(client, rid)) == [
            "provisioned",
            "started",
            "bridge_handshake_ok",
            "idle",
        ]
        assert row_of(live, rid)["last_seen_at"] is not None  # the heartbeat's liveness

        # idle -> running on an inbox event (the inbox route wakes it), then the cycle.
        posted = post_message(client, agent_id, "wake up")
        assert posted["woke_runtimes"] == [rid]
        eventually(lambda: message_status(live, posted["id"]) == "done", "the cycle")
        eventually(status_is(client, rid, "idle"), "idle again")

        # A message that arrives without the route's wake (another writer): the worker notices.
        def insert(conn: Connection) -> str:
            message_id = str(uuid.uuid4())
            conn.execute(
                inbox_messages.insert().values(
                    id=message_id,
                    project_id=project_id,
                    identity_id=agent_id,
                    sender="side door",
                    body="anyone home?",
                    status="pending",
                    created_at=utcnow(),
                )
            )
            return message_id

        quiet_id = in_db(live, insert)
        eventually(lambda: message_status(live, quiet_id) == "done", "the noticed message")
        eventually(status_is(client, rid, "stopped"), "the auto-stop after idling")
        events = events_of(client, rid)
        wakes = [e for e in events if e["details"] and e["details"].get("trigger") == "wake"]
        assert len(wakes) == 2
        assert wakes[1]["details"]["detail"] == "an inbox message is waiting"
        assert names(events)[-2:] == ["idle", "stopped"]
        assert events[-1]["details"]["trigger"] == "auto_stop"
        # A stopped runtime is let go.
        eventually(lambda: row_of(live, rid)["lease_owner"] is None, "the lease to be released")

    worker_moves = moves_of(seen, rid)
    # Every move the worker made was published (the inbox route's wake is the route's own).
    for trigger in ("bind", "handshake", "idle_timeout", "wake", "auto_stop"):
        assert trigger in worker_moves
    changes = [c for c in seen if c.details.get("runtime_id") == rid]
    assert all(c.key == "you_run" and c.identity_id == agent_id for c in changes)


def test_self_runtimes_are_left_to_their_user(live: Live) -> None:
    bearer, _, agent_id = new_project(live)
    with live.client(bearer) as client:
        mine = client.post(
            "/v1/runtimes", json={"name": "laptop", "mode": "self", "identity_id": agent_id}
        )
        assert mine.status_code == 201, mine.text
        put_secret(client, "llm-key", "sk-self")
        hosted = trusted_runtime(client, agent_id)["id"]
        eventually(status_is(client, hosted, "idle"), "the hosted runtime to run and idle")
        # The hosted one was claimed after the self one was created; the self one never is.
        assert row_of(live, mine.json()["id"])["lease_owner"] is None
        assert runtime_of(client, mine.json()["id"])["status"] == "provisioned"


def test_crash_error_restart(live: Live) -> None:
    """A key that does not unwrap is a crash (error, last_error); restart after the fix runs."""
    bearer, project_id, agent_id = new_project(live)
    with live.client(bearer) as client:
        put_secret(client, "llm-key", "sk-crash")

        def provision_under_another_key(conn: Connection) -> str:
            body = {
                "name": "wrong key",
                "mode": "trusted",
                "identity_id": agent_id,
                "region": "lhr",
                "llm": {"provider": "openai", "model": "m", "vault_key": "llm-key"},
            }
            created = runtime_service.create(conn, project_id, body, kms_master_key="another key")
            return str(created["id"])

        rid = in_db(live, provision_under_another_key)
        eventually(status_is(client, rid, "error"), "the crash")
        runtime = runtime_of(client, rid)
        assert "does not unwrap" in runtime["last_error"]
        assert names(events_of(client, rid))[-1] == "error"

        def rewrap(conn: Connection) -> None:
            material = wrap_runtime_key(rid, Ed25519PrivateKey.generate(), MASTER_KEY)
            conn.execute(update(runtimes).where(runtimes.c.id == rid).values(key_material=material))

        in_db(live, rewrap)
        restarted = client.post(f"/v1/runtimes/{rid}/restart")
        assert restarted.status_code == 200, restarted.text
        posted = post_message(client, agent_id, "back?")
        eventually(lambda: message_status(live, posted["id"]) == "done", "the cycle after restart")
        after = runtime_of(client, rid)
        assert after["last_error"] is None
        after_crash = names(events_of(client, rid))
        last_error = len(after_crash) - 1 - after_crash[::-1].index("error")
        assert after_crash[last_error + 1 : last_error + 5] == [
            "started",
            "bridge_handshake_ok",
            "think_cycle_start",
            "think_cycle_end",
        ]


def test_a_deleted_runtime_is_released(live: Live) -> None:
    bearer, _, agent_id = new_project(live)
    with live.client(bearer) as client:
        put_secret(client, "llm-key", "sk-delete")
        rid = trusted_runtime(client, agent_id)["id"]
        eventually(lambda: runtime_of(client, rid)["status"] in {"running", "idle"}, "running")
        assert client.delete(f"/v1/runtimes/{rid}").status_code == 200
        worker = live.app.state.worker
        eventually(lambda: rid not in worker.held, "the worker to let it go")
        assert row_of(live, rid)["lease_owner"] is None
        assert runtime_of(client, rid)["status"] == "stopped"


# --- leases, directly ---------------------------------------------------------------------------


def test_a_lease_is_exclusive_until_it_lapses(live: Live) -> None:
    """Two owners claiming the same runtimes: one holds it; the other gets it only once the
    lease has lapsed, and then the messages taken under the old lease are released."""
    bearer, _, agent_id = new_project(live)
    with live.client(bearer) as client:
        # A self runtime: the service's own worker never claims one (modes below say "self"),
        # so the only claimers are the two owners of this test.
        created = client.post(
            "/v1/runtimes", json={"name": "leased", "mode": "self", "identity_id": agent_id}
        )
        assert created.status_code == 201, created.text
        rid = created.json()["id"]
        post_message(client, agent_id, "for whoever holds the runtime")

    def claim(owner: str, now_ms: int) -> list[str]:
        def run(conn: Connection) -> list[str]:
            got = leases.claim(
                conn, owner, now_ms=now_ms, lease_ms=10_000, limit=1000, modes=("self",)
            )
            return [r.id for r in got]

        return list(in_db(live, run))

    now = epoch_ms()
    assert rid in claim("worker-a", now)
    assert rid not in claim("worker-b", now + 5_000)  # a's lease runs to now + 10 s

    def take(conn: Connection) -> str | None:
        message = inbox.take_next(conn, agent_id, rid)
        return None if message is None else str(message.id)

    message_id = in_db(live, take)
    assert message_id is not None
    assert message_status(live, message_id) == "taken"

    # a holds and renews; b cannot write under a's lease.
    in_db(live, leases.hold, rid, "worker-a", now_ms=now, lease_ms=10_000)
    with pytest.raises(leases.LeaseLost):
        in_db(live, leases.hold, rid, "worker-b", now_ms=now, lease_ms=10_000)

    # a dies; after the lapse b takes over, and a's taken message is pending again.
    assert rid in claim("worker-b", now + 11_000)
    assert message_status(live, message_id) == "pending"
    with pytest.raises(leases.LeaseLost):
        in_db(live, leases.hold, rid, "worker-a", now_ms=now + 11_000, lease_ms=10_000)
    in_db(live, leases.release, rid, "worker-b")
    assert row_of(live, rid)["lease_owner"] is None


# --- two worker processes, one killed mid-cycle -------------------------------------------------


def _hearth_command() -> list[str]:
    script = Path(sys.executable).parent / "hearth"
    return [str(script)] if script.exists() else [sys.executable, "-m", "hearth.cli.main"]


@pytest.fixture(params=KINDS)
def shared_db(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, fake: FakeLlm
) -> Iterator[Live]:
    """A service without an in-process worker: the runtimes are the worker processes'."""
    settings = {**llm_settings(fake), "worker_in_process": False}
    with live_on(request.param, tmp_path_factory.mktemp("workers"), **settings) as live:
        yield live


def _worker_env(live: Live, fake: FakeLlm) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SERVICE_")}
    env.update(
        SERVICE_DATABASE_URL=live.settings.database_url,
        SERVICE_KMS_MASTER_KEY=MASTER_KEY,
        SERVICE_AUTO_MIGRATE="false",
        SERVICE_LOG_LEVEL="warning",
        SERVICE_RUNTIME_POLL_SECONDS="0.1",
        SERVICE_RUNTIME_HEARTBEAT_SECONDS="0.5",
        SERVICE_RUNTIME_LEASE_SECONDS="2",
        SERVICE_RUNTIME_RETRY_SECONDS="0.2",
        SERVICE_LLM_OPENAI_BASE_URL=fake.openai_base_url,
        SERVICE_LLM_ANTHROPIC_BASE_URL=fake.anthropic_base_url,
        SERVICE_LLM_MAX_RETRIES="0",
    )
    return env


def test_two_workers_one_killed_mid_cycle(shared_db: Live, fake: FakeLlm, tmp_path: Path) -> None:
    live = shared_db
    env = _worker_env(live, fake)
    logs = [(tmp_path / f"worker-{n}.log").open("wb") for n in range(2)]
    workers = [
        subprocess.Popen(
            [*_hearth_command(), "worker"], env=env, stdout=log, stderr=subprocess.STDOUT
        )
        for log in logs
    ]
    try:
        bearer, _, agent_id = new_project(live)
        with live.client(bearer) as client:
            put_secret(client, "llm-key", "sk-two-workers")
            rid = trusted_runtime(client, agent_id)["id"]
            eventually(status_is(client, rid, "running"), "a worker to run the runtime")
            fake.hold()  # the next provider call hangs: a cycle stuck in the middle
            posted = post_message(client, agent_id, "only once, please")
            assert fake.arrived.wait(60), "no worker started the cycle"
            first_owner = row_of(live, rid)["lease_owner"]
            pid = int(first_owner.split(":")[1])
            victim = next(w for w in workers if w.pid == pid)
            assert message_status(live, posted["id"]) == "taken"
            victim.send_signal(signal.SIGKILL)
            victim.wait(30)
            fake.release()

            eventually(lambda: message_status(live, posted["id"]) == "done", "the takeover")
            survivor = next(w for w in workers if w is not victim)
            assert survivor.poll() is None
            owner = row_of(live, rid)["lease_owner"]
            assert owner is not None
            assert int(owner.split(":")[1]) == survivor.pid

            # Processed exactly once: one thought, one completed cycle; the killed cycle began
            # and never ended.
            _, stored = strand_thoughts(client, rid)
            assert len(stored) == 1
            events = names(events_of(client, rid))
            assert events.count("think_cycle_start") == 2
            assert events.count("think_cycle_end") == 1
            assert events.count("think_cycle_error") == 0

            def thought_count(conn: Connection) -> int:
                return int(
                    conn.execute(
                        select(func.count())
                        .select_from(thoughts)
                        .where(thoughts.c.runtime_id == rid)
                    ).scalar_one()
                )

            assert in_db(live, thought_count, write=False) == 1
    finally:
        fake.release()
        for process in workers:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in workers:
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(30)
        for log in logs:
            log.close()
    # A worker stopped by SIGTERM gives its leases up.
    assert row_of(live, rid)["lease_owner"] is None


def test_a_worker_that_lost_its_lease_stores_nothing(live: Live) -> None:
    """Worker a begins a cycle, stalls past its lease; the service's worker takes the runtime
    over, releases the message and thinks it; a's late finish is refused and stores nothing."""
    bearer, project_id, agent_id = new_project(live)
    lease = cycle.Lease("worker-a", 60_000)
    with live.client(bearer) as client:
        put_secret(client, "llm-key", "sk-stall")

        def provision_held_by_a(conn: Connection) -> RuntimeRow:
            body = {
                "name": "stalled",
                "mode": "trusted",
                "identity_id": agent_id,
                "region": "lhr",
                "llm": {"provider": "openai", "model": "m", "vault_key": "llm-key"},
            }
            created = runtime_service.create(conn, project_id, body, kms_master_key=MASTER_KEY)
            conn.execute(
                update(runtimes)
                .where(runtimes.c.id == created["id"])
                .values(lease_owner="worker-a", lease_until=epoch_ms() + 60_000)
            )
            runtime_service.move(conn, created["id"], "bind")
            return runtime_service.move(conn, created["id"], "handshake")

        runtime = in_db(live, provision_held_by_a)
        rid = runtime.id
        posted = post_message(client, agent_id, "who answers?")
        begun = in_db(live, cycle.begin, rid, lease, epoch_ms(), 20)
        assert begun is not None
        assert begun.message.id == posted["id"]
        custody = TrustedCustody.unwrap(runtime, MASTER_KEY)
        in_db(live, custody.register, agent_id)
        sealed = custody.seal_sync(begun.strand_id, begun.seq, b"a's late thought")
        signature = sign_thought_write(
            custody.signing_key, custody.signing_key_id, begun.strand_id, begun.seq, sealed
        )

        # a stalls: its lease lapses and the service's worker takes the runtime over.
        in_db(
            live,
            lambda conn: conn.execute(
                update(runtimes).where(runtimes.c.id == rid).values(lease_until=epoch_ms() - 1)
            ),
        )
        eventually(lambda: message_status(live, posted["id"]) == "done", "the takeover's cycle")
        with pytest.raises(leases.LeaseLost):
            in_db(
                live,
                cycle.finish,
                begun,
                lease,
                nonce=sealed.nonce,
                ciphertext=sealed.ciphertext,
                signing_key_id=custody.signing_key_id,
                signature=signature,
            )
        with pytest.raises(leases.LeaseLost):
            in_db(live, cycle.fail, begun, lease, cycle.CycleFailed("worker", "late"))
        _, stored = strand_thoughts(client, rid)
        assert len(stored) == 1
        assert message_status(live, posted["id"]) == "done"
        assert names(events_of(client, rid)).count("think_cycle_end") == 1


def test_the_bridge_session_holder_takes_a_bridged_lease_over(shared_db: Live) -> None:
    """Cycles of a bridged runtime can run only where its bridge session is: the process that
    holds the session claims the lease even before it lapses, and the old holder's next write
    finds its lease gone."""
    live = shared_db
    bearer, _, agent_id = new_project(live)
    with live.client(bearer) as client:
        created = client.post("/v1/runtimes", json=bridged_body(identity_id=agent_id))
        assert created.status_code == 201, created.text
        rid = created.json()["id"]

    def claim(owner: str, now_ms: int, sessions: frozenset[str]) -> list[str]:
        def run(conn: Connection) -> list[str]:
            got = leases.claim(
                conn,
                owner,
                now_ms=now_ms,
                lease_ms=10_000,
                limit=1000,
                modes=("bridged",),
                sessions=sessions,
            )
            return [r.id for r in got]

        return list(in_db(live, run))

    now = epoch_ms()
    assert rid in claim("worker-a", now, frozenset())
    # b has no session: a's lease stands.
    assert rid not in claim("worker-b", now + 1_000, frozenset())
    # b holds the bridge session: it takes the lease at once.
    assert rid in claim("worker-b", now + 1_000, frozenset({rid}))
    assert row_of(live, rid)["lease_owner"] == "worker-b"
    with pytest.raises(leases.LeaseLost):
        in_db(live, leases.hold, rid, "worker-a", now_ms=now + 1_000, lease_ms=10_000)
    # Another runtime's session does not reach this one.
    assert rid not in claim("worker-c", now + 2_000, frozenset({str(uuid.uuid4())}))
