"""The inbox over real HTTP and through the orchestrator's service functions: posting and
listing, pending -> taken -> done and release back to pending, the idle -> running wake of the
identity's runtimes, and concurrent takers that never take one message twice. On SQLite, and on
PostgreSQL when SERVICE_TEST_DATABASE_URL is set."""

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

from hearth.server.services import inbox
from hearth.server.services import runtimes as runtime_service
from tests.support.databases import in_db
from tests.support.identities import Owner, new_owner
from tests.support.live import Live, live_on
from tests.support.openapi import conforms
from tests.support.runtimes import create, self_body


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def live(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Live]:
    with live_on(request.param, tmp_path_factory.mktemp("inbox")) as live:
        yield live


@pytest.fixture(scope="module")
def api_schema(live: Live) -> Any:
    return schemathesis.openapi.from_url(
        f"{live.base_url}/v1/openapi.json", config=schemathesis.Config()
    )


def send(client: httpx2.Client, owner: Owner, body: str, sender: str = "ada") -> dict[str, Any]:
    response = client.post(
        f"/v1/identities/{owner.identity_id}/inbox", json={"sender": sender, "body": body}
    )
    assert response.status_code == 201, response.text
    posted: dict[str, Any] = response.json()
    return posted


def statuses(client: httpx2.Client, owner: Owner) -> dict[str, str]:
    listed = client.get(f"/v1/identities/{owner.identity_id}/inbox", params={"limit": 200})
    assert listed.status_code == 200, listed.text
    return {m["body"]: m["status"] for m in listed.json()["items"]}


def to_idle(live: Live, runtime_id: str) -> None:
    def run(conn: Connection) -> None:
        for trigger in ("bind", "handshake", "idle_timeout"):
            runtime_service.move(conn, runtime_id, trigger)

    in_db(live, run)


def test_post_and_list(live: Live, api_schema: Any) -> None:
    owner = new_owner(live)
    stranger = new_owner(live)
    target = f"/v1/identities/{owner.identity_id}/inbox"
    with live.client(owner.bearer) as client:
        posted = conforms(
            api_schema,
            "POST /v1/identities/{id}/inbox",
            client.post(target, json={"sender": "ada", "body": "hello"}),
            201,
        )
        assert (posted["status"], posted["sender"], posted["body"]) == ("pending", "ada", "hello")
        assert posted["identity_id"] == owner.identity_id
        assert posted["woke_runtimes"] == []
        second = send(client, owner, "again")
        listed = conforms(api_schema, "GET /v1/identities/{id}/inbox", client.get(target), 200)
        assert [m["id"] for m in listed["items"]] == [second["id"], posted["id"]]  # newest first
        first_page = client.get(target, params={"limit": 1}).json()
        rest = client.get(target, params={"limit": 1, "cursor": first_page["next_cursor"]}).json()
        assert [m["id"] for m in first_page["items"] + rest["items"]] == [
            second["id"],
            posted["id"],
        ]
        assert client.get(target, params={"status": "done"}).json()["items"] == []
        assert client.get(target, params={"status": "gone"}).status_code == 422
        too_long = client.post(target, json={"sender": "ada", "body": "x" * 16_385})
        assert too_long.status_code == 422, too_long.text
        assert client.post(target, json={"sender": "", "body": "x"}).status_code == 422
        assert client.post(target, json={"sender": "a", "body": "x", "to": 1}).status_code == 422
        # The DID names the identity too.
        by_did = client.post(
            f"/v1/identities/{owner.did}/inbox", json={"sender": "bo", "body": "did"}
        )
        assert by_did.status_code == 201, by_did.text
    with live.client(stranger.bearer) as client:
        assert client.get(target).status_code == 404
        assert client.post(target, json={"sender": "eve", "body": "x"}).status_code == 404
    with live.client() as anonymous:
        assert anonymous.post(target, json={"sender": "eve", "body": "x"}).status_code == 401


def test_take_complete_release(live: Live) -> None:
    owner = new_owner(live)
    with live.client(owner.bearer) as client:
        runtime = create(client, self_body(identity_id=owner.identity_id))
        first = send(client, owner, "one")
        second = send(client, owner, "two")

    taken = in_db(live, inbox.take_next, owner.identity_id, runtime["id"])
    assert taken is not None
    assert (taken.id, taken.status, taken.taken_by) == (
        first["id"],
        "taken",
        runtime["id"],
    )
    following = in_db(live, inbox.take_next, owner.identity_id, runtime["id"])
    assert following is not None
    assert following.id == second["id"]
    assert in_db(live, inbox.take_next, owner.identity_id, runtime["id"]) is None

    # A failed cycle releases its message: it is pending again and is taken again next.
    released = in_db(live, inbox.release, first["id"])
    assert (released.status, released.taken_by, released.taken_at) == (
        "pending",
        None,
        None,
    )
    with pytest.raises(Exception, match="only a taken message"):
        in_db(live, inbox.complete, first["id"])
    again = in_db(live, inbox.take_next, owner.identity_id, runtime["id"])
    assert again is not None
    assert again.id == first["id"]

    done = in_db(live, inbox.complete, first["id"])
    assert done.status == "done"
    assert done.done_at is not None
    with pytest.raises(Exception, match="only a taken message"):
        in_db(live, inbox.release, first["id"])
    with pytest.raises(Exception, match="not found"):
        in_db(live, inbox.complete, "6c1ad0f2-6c1a-4d0f-9c1a-d0f26c1ad0f2")
    with live.client(owner.bearer) as client:
        assert statuses(client, owner) == {"one": "done", "two": "taken"}
        done_only = client.get(
            f"/v1/identities/{owner.identity_id}/inbox", params={"status": "done"}
        ).json()
        assert [m["id"] for m in done_only["items"]] == [first["id"]]


def test_a_message_wakes_the_identitys_idle_runtimes(live: Live) -> None:
    owner = new_owner(live)
    with live.client(owner.bearer) as client:
        idle = create(client, self_body(identity_id=owner.identity_id))
        fresh = create(client, self_body(identity_id=owner.identity_id))
        elsewhere = create(client, self_body())
        to_idle(live, idle["id"])
        to_idle(live, elsewhere["id"])

        posted = send(client, owner, "wake up")
        assert posted["woke_runtimes"] == [idle["id"]]
        assert client.get(f"/v1/runtimes/{idle['id']}").json()["status"] == "running"
        # Not idle: nothing to wake. Not the identity's: not this inbox's to wake.
        assert client.get(f"/v1/runtimes/{fresh['id']}").json()["status"] == "provisioned"
        assert client.get(f"/v1/runtimes/{elsewhere['id']}").json()["status"] == "idle"
        events = client.get(f"/v1/runtimes/{idle['id']}/events").json()["items"]
        assert events[-1]["event"] == "started"
        assert events[-1]["details"]["trigger"] == "wake"

        # Running already: a second message wakes nothing.
        assert send(client, owner, "still there?")["woke_runtimes"] == []


@pytest.mark.parametrize("messages", [1, 3])
def test_concurrent_takers_never_take_one_message_twice(live: Live, messages: int) -> None:
    takers = 5
    owner = new_owner(live)
    with live.client(owner.bearer) as client:
        runtimes = [
            create(client, self_body(identity_id=owner.identity_id))["id"] for _ in range(takers)
        ]
        for i in range(messages):
            send(client, owner, f"m{i}")
    start = threading.Barrier(takers)

    def take_and_hold(conn: Connection, runtime_id: str) -> str | None:
        row = inbox.take_next(conn, owner.identity_id, runtime_id)
        # Hold the transaction open so that the takers overlap (PostgreSQL runs them at once;
        # SQLite's single writer runs them one after another).
        time.sleep(0.2)
        return None if row is None else str(row.id)

    def taker(runtime_id: str) -> str | None:
        start.wait()
        taken: str | None = in_db(live, take_and_hold, runtime_id)
        return taken

    with ThreadPoolExecutor(takers) as pool:
        results = list(pool.map(taker, runtimes))
    taken = [r for r in results if r is not None]
    assert len(taken) == messages
    assert len(set(taken)) == messages
    with live.client(owner.bearer) as client:
        assert set(statuses(client, owner).values()) == {"taken"}
