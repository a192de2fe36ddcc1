"""POST /v1/identities/{id}/move (issue 20): a moved identity refuses every mutation with 410
and where it went, keeps everything, and its public profile says where it lives now."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.agents import Registered
from tests.support.live import Live, live_on
from tests.support.openapi import register_project
from tests.support.runtimes import bridged_body, create, event_names, self_body

ELSEWHERE = "https://elsewhere.example"


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def live(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Live]:
    with live_on(request.param, tmp_path_factory.mktemp("moves")) as live:
        yield live


def test_a_moved_identity_refuses_mutations_and_says_where_it_went(live: Live) -> None:
    agent, reg = register_project(live, "public")
    me = Registered(live, agent, reg)
    path = f"/v1/identities/{me.id}/move"
    body = {"service": ELSEWHERE, "did": me.did}
    stored = me.call("POST", "/v1/memories", {"content": "Before.", "agent_id": me.id})
    assert stored.status_code == 201, stored.text
    assert me.call("POST", path, body).status_code == 428  # bearer + root: no proof, no move
    moved = me.call("POST", path, body, proof=True)
    assert moved.status_code == 200, moved.text
    assert moved.json()["status"] == "moved"
    assert moved.json()["moved_to"]["service"] == ELSEWHERE

    # Mutations naming it: refused with the pointer (a memory is not made project-level).
    for method, target, payload, proof in (
        ("POST", "/v1/memories", {"content": "After.", "agent_id": me.id}, False),
        ("POST", path, body, True),
    ):
        refused = me.call(method, target, payload, proof=proof)
        assert refused.status_code == 410, refused.text
        assert refused.json()["error"] == "moved"
        assert refused.json()["details"]["moved_to"]["did"] == me.did
    # Nothing deleted: reads answer.
    with me.client() as client:
        memories = client.get("/v1/memories", params={"agent_id": me.id})
        authority = client.get(f"/v1/identities/{me.id}/authority")
    assert memories.status_code == 200
    assert "Before." in {m["content"] for m in memories.json()["items"]}
    assert authority.status_code == 200
    with live.client() as client:  # public: no bearer
        shown = client.get(f"/public/agents/{me.did}")
    assert shown.status_code == 200, shown.text
    assert shown.json()["moved_to"]["service"] == ELSEWHERE


def test_a_move_stops_the_identitys_runtimes_here(live: Live) -> None:
    agent, reg = register_project(live, "private")
    me = Registered(live, agent, reg)
    with me.client() as client:
        made = [
            create(client, body | {"identity_id": me.id})["id"]
            for body in (self_body(), bridged_body())
        ]
        gone = create(client, self_body(name="deleted before") | {"identity_id": me.id})["id"]
        assert client.delete(f"/v1/runtimes/{gone}").status_code == 200
    moved = me.call(
        "POST", f"/v1/identities/{me.id}/move", {"service": ELSEWHERE, "did": me.did}, proof=True
    )
    assert moved.status_code == 200, moved.text
    assert sorted(moved.json()["runtimes_stopped"]) == sorted(made)
    with me.client() as client:
        for runtime_id in made:
            runtime = client.get(f"/v1/runtimes/{runtime_id}").json()
            assert runtime["status"] == "stopped"
            assert event_names(client, runtime_id)[-1] == "stopped"
            # stopped is final: nothing starts it again on this service
            assert client.post(f"/v1/runtimes/{runtime_id}/restart").status_code == 409
        assert client.get(f"/v1/runtimes/{gone}").json()["deleted_at"] is not None
