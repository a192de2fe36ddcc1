"""What a ``self`` runtime's user-side loop needs from the service, over real HTTP: the heartbeat
and its moves through the state table, taking the next inbox message (never one another loop
took), completing and releasing it (only by the runtime that took it), the refusals, and the
liveness shown by the record and the wake. A hosted worker runs in the service throughout and
never claims a self runtime. On SQLite, and on PostgreSQL when SERVICE_TEST_DATABASE_URL is
set."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx2
import pytest
import schemathesis
from sqlalchemy import Connection

from hearth.server.services import runtimes as runtime_service
from tests.support.databases import in_db
from tests.support.identities import Owner, new_owner
from tests.support.live import Live, live_on
from tests.support.openapi import conforms
from tests.support.runtimes import bridged_body, self_body, stored_row

IDLE_S = 1.0


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def live(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Live]:
    # A worker in the service, polling fast: it must never claim a self runtime.
    with live_on(
        request.param,
        tmp_path_factory.mktemp("self_runtime"),
        worker_in_process=True,
        runtime_poll_seconds=0.05,
        runtime_idle_seconds=IDLE_S,
    ) as live:
        yield live


@pytest.fixture(scope="module")
def api_schema(live: Live) -> Any:
    return schemathesis.openapi.from_url(
        f"{live.base_url}/v1/openapi.json", config=schemathesis.Config()
    )


def provision_self(client: httpx2.Client, owner: Owner | None, **overrides: Any) -> str:
    body = self_body(**overrides)
    if owner is not None:
        body["identity_id"] = owner.identity_id
    response = client.post("/v1/runtimes", json=body)
    assert response.status_code == 201, response.text
    runtime_id: str = response.json()["id"]
    return runtime_id


def beat(client: httpx2.Client, runtime_id: str) -> dict[str, Any]:
    response = client.post(f"/v1/runtimes/{runtime_id}/heartbeat")
    assert response.status_code == 200, response.text
    record: dict[str, Any] = response.json()
    return record


def send(client: httpx2.Client, owner: Owner, body: str) -> dict[str, Any]:
    response = client.post(
        f"/v1/identities/{owner.identity_id}/inbox", json={"sender": "ada", "body": body}
    )
    assert response.status_code == 201, response.text
    posted: dict[str, Any] = response.json()
    return posted


def take(client: httpx2.Client, runtime_id: str) -> dict[str, Any] | None:
    response = client.post(f"/v1/runtimes/{runtime_id}/inbox/take")
    if response.status_code == 204:
        assert response.content == b""
        return None
    assert response.status_code == 200, response.text
    message: dict[str, Any] = response.json()
    return message


def events(client: httpx2.Client, runtime_id: str) -> list[dict[str, Any]]:
    response = client.get(f"/v1/runtimes/{runtime_id}/events", params={"limit": 200})
    assert response.status_code == 200, response.text
    items: list[dict[str, Any]] = response.json()["items"]
    return items


def refused(response: httpx2.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()
    assert body["error"] == code, body
    return body


# --- the heartbeat and the state machine ---------------------------------------------------------


def test_the_first_heartbeat_moves_a_self_runtime_to_running(live: Live, api_schema: Any) -> None:
    owner = new_owner(live)
    with live.client(owner.bearer) as client:
        runtime_id = provision_self(client, owner)
        time.sleep(0.3)  # several passes of the in-process worker
        before = client.get(f"/v1/runtimes/{runtime_id}").json()
        assert (before["status"], before["last_seen_at"]) == ("provisioned", None)

        record = conforms(
            api_schema,
            "POST /v1/runtimes/{id}/heartbeat",
            client.post(f"/v1/runtimes/{runtime_id}/heartbeat"),
            200,
        )
        assert record["status"] == "running"
        assert record["last_seen_at"] is not None
        moves = [(e["event"], e["details"].get("trigger")) for e in events(client, runtime_id)]
        assert moves == [
            ("provisioned", None),
            ("started", "bind"),
            ("bridge_handshake_ok", "handshake"),
        ]
        # Again: last_seen_at moves on, no move and no event.
        time.sleep(0.01)
        again = beat(client, runtime_id)
        assert again["status"] == "running"
        assert again["last_seen_at"] > record["last_seen_at"]
        assert len(events(client, runtime_id)) == 3

        shown = client.get(f"/v1/runtimes/{runtime_id}").json()
        assert shown["last_seen_at"] == again["last_seen_at"]
        wake = client.get(
            "/v1/wake", params={"identity_id": owner.identity_id, "refresh": "true"}
        ).json()
        entry = next(r for r in wake["you_run"]["runtimes"] if r["id"] == runtime_id)
        assert entry["status"] == "running"
        assert entry["last_seen_at"] == again["last_seen_at"]

    # The hosted worker never took a lease on it.
    row = in_db(live, stored_row, runtime_id, write=False)
    assert row["lease_owner"] is None


def test_idle_after_no_work_and_awake_when_a_message_waits(live: Live) -> None:
    owner = new_owner(live)
    with live.client(owner.bearer) as client:
        runtime_id = provision_self(client, owner)
        beat(client, runtime_id)
        time.sleep(IDLE_S + 0.2)
        assert beat(client, runtime_id)["status"] == "idle"
        assert beat(client, runtime_id)["status"] == "idle"  # nothing waits: it stays idle

        # The inbox event wakes it, as it wakes any idle runtime of the identity.
        posted = send(client, owner, "are you there?")
        assert posted["woke_runtimes"] == [runtime_id]
        assert client.get(f"/v1/runtimes/{runtime_id}").json()["status"] == "running"

        # Idle again with the message still waiting (moved by the table, as a lost wake would
        # leave it): the next heartbeat wakes it.
        in_db(live, runtime_service.move, runtime_id, "idle_timeout")
        assert beat(client, runtime_id)["status"] == "running"
        triggers = [e["details"].get("trigger") for e in events(client, runtime_id)]
        assert triggers[-4:] == ["idle_timeout", "wake", "idle_timeout", "wake"]

        # Idle with a message: taking it wakes the runtime as well.
        in_db(live, runtime_service.move, runtime_id, "idle_timeout")
        message = take(client, runtime_id)
        assert message is not None
        assert message["id"] == posted["id"]
        assert client.get(f"/v1/runtimes/{runtime_id}").json()["status"] == "running"


def test_a_restarted_runtime_reports_in_again(live: Live) -> None:
    owner = new_owner(live)
    with live.client(owner.bearer) as client:
        runtime_id = provision_self(client, owner)
        beat(client, runtime_id)

        def crash(conn: Connection) -> None:
            runtime_service.move(conn, runtime_id, "crash", detail="the laptop's disk filled")

        in_db(live, crash)
        body = refused(
            client.post(f"/v1/runtimes/{runtime_id}/heartbeat"), 409, "invalid_runtime_state"
        )
        assert body["details"]["current_status"] == "error"
        assert "restart" in body["hint"]
        refused(client.post(f"/v1/runtimes/{runtime_id}/inbox/take"), 409, "invalid_runtime_state")
        assert client.post(f"/v1/runtimes/{runtime_id}/restart").json()["status"] == "starting"
        assert beat(client, runtime_id)["status"] == "running"
        assert events(client, runtime_id)[-1]["details"]["trigger"] == "handshake"


# --- taking, completing, releasing ---------------------------------------------------------------


def test_take_complete_and_release(live: Live, api_schema: Any) -> None:
    owner = new_owner(live)
    with live.client(owner.bearer) as client:
        runtime_id = provision_self(client, owner)
        before = refused(
            client.post(f"/v1/runtimes/{runtime_id}/inbox/take"), 409, "invalid_runtime_state"
        )
        assert before["details"]["current_status"] == "provisioned"
        beat(client, runtime_id)
        conforms(
            api_schema,
            "POST /v1/runtimes/{id}/inbox/take",
            client.post(f"/v1/runtimes/{runtime_id}/inbox/take"),
            204,
        )
        first = send(client, owner, "first")
        second = send(client, owner, "second")

        taken = conforms(
            api_schema,
            "POST /v1/runtimes/{id}/inbox/take",
            client.post(f"/v1/runtimes/{runtime_id}/inbox/take"),
            200,
        )
        assert (taken["id"], taken["status"], taken["taken_by"]) == (
            first["id"],
            "taken",
            runtime_id,
        )
        next_one = take(client, runtime_id)
        assert next_one is not None
        assert next_one["id"] == second["id"]  # never the one already taken
        assert take(client, runtime_id) is None

        released = conforms(
            api_schema,
            "POST /v1/runtimes/{id}/inbox/{message_id}/release",
            client.post(f"/v1/runtimes/{runtime_id}/inbox/{first['id']}/release"),
            200,
        )
        assert (released["status"], released["taken_by"]) == ("pending", None)
        refused(
            client.post(f"/v1/runtimes/{runtime_id}/inbox/{first['id']}/complete"),
            409,
            "inbox_message_not_taken",
        )
        again = take(client, runtime_id)
        assert again is not None
        assert again["id"] == first["id"]
        done = conforms(
            api_schema,
            "POST /v1/runtimes/{id}/inbox/{message_id}/complete",
            client.post(f"/v1/runtimes/{runtime_id}/inbox/{first['id']}/complete"),
            200,
        )
        assert done["status"] == "done"
        assert done["done_at"] is not None
        refused(
            client.post(f"/v1/runtimes/{runtime_id}/inbox/{first['id']}/release"),
            409,
            "inbox_message_not_taken",
        )
        listed = client.get(f"/v1/identities/{owner.identity_id}/inbox").json()["items"]
        assert {m["body"]: m["status"] for m in listed} == {"first": "done", "second": "taken"}

        cycle = [
            (e["event"], e["details"]["message_id"])
            for e in events(client, runtime_id)
            if e["event"].startswith("think_cycle")
        ]
        assert cycle == [
            ("think_cycle_start", first["id"]),
            ("think_cycle_start", second["id"]),
            ("think_cycle_error", first["id"]),
            ("think_cycle_start", first["id"]),
            ("think_cycle_end", first["id"]),
        ]
        record = client.get(f"/v1/runtimes/{runtime_id}").json()
        assert record["last_seen_at"] is not None


def test_two_loops_never_take_one_message(live: Live) -> None:
    owner = new_owner(live)
    with live.client(owner.bearer) as client:
        loops = [provision_self(client, owner, name=f"loop {i}") for i in range(2)]
        for runtime_id in loops:
            beat(client, runtime_id)
        sent = {send(client, owner, f"message {i}")["id"] for i in range(12)}
    taken: dict[str, list[str]] = {runtime_id: [] for runtime_id in loops}
    start = threading.Barrier(len(loops))

    def drain(runtime_id: str) -> None:
        with live.client(owner.bearer) as client:
            start.wait()
            while (message := take(client, runtime_id)) is not None:
                taken[runtime_id].append(message["id"])

    with ThreadPoolExecutor(len(loops)) as pool:
        list(pool.map(drain, loops))
    every = [m for ids in taken.values() for m in ids]
    assert sorted(every) == sorted(sent)  # each message taken exactly once


def test_a_message_is_completed_and_released_only_by_its_taker(live: Live) -> None:
    owner = new_owner(live)
    with live.client(owner.bearer) as client:
        mine, other = (provision_self(client, owner, name=n) for n in ("mine", "other"))
        beat(client, mine)
        beat(client, other)
        message = send(client, owner, "for one loop only")
        assert take(client, mine) is not None
        for action in ("complete", "release"):
            body = refused(
                client.post(f"/v1/runtimes/{other}/inbox/{message['id']}/{action}"),
                409,
                "inbox_message_not_yours",
            )
            assert body["details"]["message_id"] == message["id"]
        listed = client.get(f"/v1/identities/{owner.identity_id}/inbox").json()["items"]
        assert (listed[0]["status"], listed[0]["taken_by"]) == ("taken", mine)

        # Another identity's message (same project) and unknown ids are not found here.
        stranger = new_owner(live)
        with live.client(stranger.bearer) as theirs:
            foreign = send(theirs, stranger, "not yours")
        for message_id in (foreign["id"], "not-a-uuid", "00000000-0000-4000-8000-000000000000"):
            refused(
                client.post(f"/v1/runtimes/{mine}/inbox/{message_id}/complete"), 404, "not_found"
            )


# --- refusals ------------------------------------------------------------------------------------


def test_refusals(live: Live) -> None:
    owner = new_owner(live)
    stranger = new_owner(live)
    with live.client(owner.bearer) as client:
        bridged = client.post("/v1/runtimes", json=bridged_body(identity_id=owner.identity_id))
        assert bridged.status_code == 201, bridged.text
        bridged_id = bridged.json()["id"]
        message = send(client, owner, "hello")
        for path in (
            f"/v1/runtimes/{bridged_id}/heartbeat",
            f"/v1/runtimes/{bridged_id}/inbox/take",
            f"/v1/runtimes/{bridged_id}/inbox/{message['id']}/complete",
            f"/v1/runtimes/{bridged_id}/inbox/{message['id']}/release",
        ):
            body = refused(client.post(path), 409, "not_self_custody")
            assert body["details"]["mode"] == "bridged"
        # The wrong-mode refusal took nothing.
        listed = client.get(f"/v1/identities/{owner.identity_id}/inbox").json()["items"]
        assert listed[0]["status"] == "pending"

        unbound = provision_self(client, None)
        assert beat(client, unbound)["status"] == "running"  # liveness needs no identity
        refused(client.post(f"/v1/runtimes/{unbound}/inbox/take"), 409, "runtime_unbound")

        deleted = provision_self(client, owner)
        beat(client, deleted)
        assert client.delete(f"/v1/runtimes/{deleted}").status_code == 200
        for path in (f"/v1/runtimes/{deleted}/heartbeat", f"/v1/runtimes/{deleted}/inbox/take"):
            refused(client.post(path), 409, "runtime_deleted")

        mine = provision_self(client, owner)
        beat(client, mine)
    # Another project's runtime does not exist for this bearer; nor does a made-up id.
    with live.client(stranger.bearer) as theirs:
        for path in (
            f"/v1/runtimes/{mine}/heartbeat",
            f"/v1/runtimes/{mine}/inbox/take",
            f"/v1/runtimes/{mine}/inbox/{message['id']}/complete",
            "/v1/runtimes/not-a-uuid/heartbeat",
        ):
            refused(theirs.post(path), 404, "not_found")
    with live.client() as anonymous:
        assert anonymous.post(f"/v1/runtimes/{mine}/heartbeat").status_code == 401
    with live.client(owner.bearer) as client:
        listed = client.get(f"/v1/identities/{owner.identity_id}/inbox").json()["items"]
        assert listed[0]["status"] == "pending"
        assert len(events(client, mine)) == 3  # the refused calls moved nothing
