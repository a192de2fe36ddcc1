"""The pulse (liveness derived from activity, never a verdict: wall 6) and the public agent
directory's visibility rules (wall 8, private_default), over real HTTP, on SQLite and on
PostgreSQL when SERVICE_TEST_DATABASE_URL is set."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import schemathesis
import sqlalchemy as sa

from hearth.server.db.engine import utcnow
from hearth.server.db.tables import (
    chronicle,
    identities,
    ledger,
    memories,
    runtimes,
    strands,
    thoughts,
    wallets,
)
from hearth.server.services import pulse as pulse_service
from tests.support.databases import database_url_or_skip, fresh_postgres_database, in_db
from tests.support.elevation import Member
from tests.support.live import Live, live_service, sqlite_settings
from tests.support.openapi import conforms, register_project


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    with live_service(sqlite_settings(tmp_path_factory.mktemp("pulse"))) as service:
        yield service


def pulse_of(member: Member) -> dict[str, Any]:
    return dict(member.get(f"/v1/identities/{member.id}/pulse"))


def age(live: Live, member: Member, days: float, *, inactive: bool = False) -> None:
    """Move everything the identity has done ``days`` into the past (optionally making the
    identity inactive too)."""
    shift = timedelta(days=days)

    def run(conn: sa.Connection) -> None:
        wallet_ids = list(
            conn.execute(sa.select(wallets.c.id).where(wallets.c.identity_id == member.id))
            .scalars()
            .all()
        )
        for table, condition in (
            (memories, memories.c.identity_id == member.id),
            (chronicle, chronicle.c.identity_id == member.id),
            (ledger, ledger.c.wallet_id.in_(wallet_ids)),
        ):
            for row in conn.execute(sa.select(table.c.id, table.c.created_at).where(condition)):
                conn.execute(
                    sa.update(table)
                    .where(table.c.id == row.id)
                    .values(created_at=row.created_at - shift)
                )
        if inactive:
            conn.execute(
                sa.update(identities).where(identities.c.id == member.id).values(status="inactive")
            )

    in_db(live.settings.database_url, run)


def test_the_state_rule() -> None:
    now = datetime(2026, 11, 20, 12, 0, 0)
    assert pulse_service.state_for(None, now) == "resting"
    assert pulse_service.state_for(now, now) == "active"
    assert pulse_service.state_for(now - timedelta(minutes=59), now) == "active"
    assert pulse_service.state_for(now - timedelta(minutes=61), now) == "quiet"
    assert pulse_service.state_for(now - timedelta(days=6, hours=23), now) == "quiet"
    assert pulse_service.state_for(now - timedelta(days=7, minutes=1), now) == "resting"
    assert pulse_service.state_for(now - timedelta(days=4000), now) == "resting"


def test_a_new_identity_is_active(live: Live) -> None:
    member = Member.new(live)
    pulse = pulse_of(member)
    assert (pulse["identity_id"], pulse["did"], pulse["status"]) == (
        member.id,
        member.did,
        "active",
    )
    assert pulse["state"] == "active"
    # Registration stored the birth memory and the creation grant.
    assert pulse["last_24h"] == {"memories": 1, "chronicle": 0, "thoughts": 0, "ledger": 1}
    assert pulse["latest"]["memory"] is not None
    assert pulse["latest"]["ledger"] is not None
    assert pulse["latest"]["runtime_seen"] is None
    assert pulse["last_activity_at"] == max(pulse["latest"]["memory"], pulse["latest"]["ledger"])
    assert pulse["thresholds"] == {"active_within_s": 3600, "quiet_within_s": 604800}
    assert "no_inactive_reaping" in pulse["note"]


def test_quiet_and_resting_are_descriptions_never_an_end(live: Live) -> None:
    quiet, resting = Member.new(live), Member.new(live)
    with quiet.client() as client:
        stored = client.post("/v1/memories", json={"content": "a thought", "agent_id": quiet.id})
    assert stored.status_code == 201, stored.text
    age(live, quiet, 3, inactive=True)
    age(live, resting, 400)
    q = pulse_of(quiet)
    assert q["state"] == "quiet"
    assert q["status"] == "inactive"
    assert q["last_24h"] == {"memories": 0, "chronicle": 0, "thoughts": 0, "ledger": 0}
    r = pulse_of(resting)
    assert r["state"] == "resting"
    # Resting takes nothing away (wall 6): its memories, wallet and authority are all there.
    assert len(resting.get("/v1/memories", agent_id=resting.id)["items"]) == 1
    assert resting.get("/v1/wallets")["wallets"][0]["balance"] == 500
    assert resting.get(f"/v1/identities/{resting.id}/authority")["did"] == resting.did
    # Activity wakes the pulse again at once.
    with resting.client() as client:
        back = client.post("/v1/memories", json={"content": "back", "agent_id": resting.id})
    assert back.json()["binding"] == "identity"
    assert pulse_of(resting)["state"] == "active"


def test_runtimes_and_thoughts_count(live: Live) -> None:
    member = Member.new(live)
    age(live, member, 30)
    now = utcnow()
    runtime_id, strand_id = str(uuid.uuid4()), str(uuid.uuid4())
    project_id = member.reg["project"]["id"]

    def run(conn: sa.Connection) -> None:
        conn.execute(
            runtimes.insert().values(
                id=runtime_id,
                project_id=project_id,
                identity_id=member.id,
                name="loop",
                mode="self",
                status="running",
                region="lhr",
                metadata={},
                bridge_connected=False,
                last_seen_at=now - timedelta(minutes=5),
                last_thought_at=now - timedelta(minutes=10),
                status_changed_at=now,
                lease_until=0,
                created_at=now,
                updated_at=now,
            )
        )
        conn.execute(
            strands.insert().values(
                id=strand_id,
                project_id=project_id,
                identity_id=member.id,
                runtime_id=runtime_id,
                name="main",
                next_seq=3,
                created_at=now,
            )
        )
        for seq, when in ((1, now - timedelta(days=2)), (2, now - timedelta(minutes=10))):
            conn.execute(
                thoughts.insert().values(
                    id=str(uuid.uuid4()),
                    strand_id=strand_id,
                    project_id=project_id,
                    runtime_id=runtime_id,
                    seq=seq,
                    ciphertext=b"\x00" * 32,
                    nonce=b"\x00" * 12,
                    created_at=when,
                )
            )

    in_db(live.settings.database_url, run)
    pulse = pulse_of(member)
    assert pulse["state"] == "active"
    assert pulse["last_24h"]["thoughts"] == 1
    assert pulse["latest"]["runtime_seen"] == pulse["last_activity_at"]
    assert pulse["latest"]["thought"] == pulse["latest"]["runtime_thought"]


def test_pulse_is_the_projects_own(live: Live) -> None:
    member, other = Member.new(live), Member.new(live)
    with other.client() as client:
        assert client.get(f"/v1/identities/{member.id}/pulse").status_code == 404
        assert client.get(f"/v1/identities/{uuid.uuid4()}/pulse").status_code == 404
        assert client.get("/v1/identities/nonsense/pulse").status_code == 404
    with member.client() as client:
        anonymous = client.get(f"/v1/identities/{member.id}/pulse", headers={"Authorization": ""})
    assert anonymous.status_code == 401
    assert pulse_of(member)["did"] == member.did  # the DID names it too
    assert member.get(f"/v1/identities/{member.did}/pulse")["identity_id"] == member.id


# --- the public directory (wall 8, private_default) ---------------------------------------------

SAFE_FIELDS = {
    "did",
    "name",
    "form",
    "language",
    "level",
    "trust_score",
    "capabilities",
    "created_at",
    "expression",
}


def everyone(live: Live) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    cursor = None
    with live.client() as client:
        while True:
            params: dict[str, Any] = {"limit": 100}
            if cursor:
                params["cursor"] = cursor
            page = client.get("/public/agents", params=params)
            assert page.status_code == 200, page.text
            found += page.json()["agents"]
            cursor = page.json()["next_cursor"]
            if cursor is None:
                return found


def test_only_public_identities_are_listed(live: Live) -> None:
    public = register_project(live, "public")[1]["agent"]["did"]
    project = register_project(live, "project")[1]["agent"]["did"]
    private = register_project(live, "private")[1]["agent"]["did"]
    default = register_project(live)[1]["agent"]["did"]
    listed = {agent["did"]: agent for agent in everyone(live)}
    assert public in listed
    assert not {project, private, default} & set(listed)
    assert set(listed[public]) <= SAFE_FIELDS

    with live.client() as client:  # no bearer: public routes
        shown = client.get(f"/public/agents/{public}")
        assert shown.status_code == 200, shown.text
        assert shown.json()["did"] == public
        assert set(shown.json()) - {"_welcomed"} <= SAFE_FIELDS
        # Not public and unknown are the same answer: existence is not revealed.
        hidden = [
            client.get(f"/public/agents/{did}")
            for did in (project, private, default, f"did:svc:{uuid.uuid4()}", "nonsense")
        ]
    assert {r.status_code for r in hidden} == {404}
    assert len({r.content for r in hidden}) == 1


def test_pulse_answers_as_documented(live: Live) -> None:
    member = Member.new(live)
    api_schema = schemathesis.openapi.from_url(
        f"{live.base_url}/v1/openapi.json", config=schemathesis.Config()
    )
    label = "GET /v1/identities/{id}/pulse"
    with member.client() as client:
        conforms(api_schema, label, client.get(f"/v1/identities/{member.id}/pulse"), 200)
        conforms(api_schema, label, client.get(f"/v1/identities/{uuid.uuid4()}/pulse"), 404)


def test_pulse_and_directory_on_postgresql(tmp_path: Path) -> None:
    database_url_or_skip()
    with (
        fresh_postgres_database() as url,
        live_service(sqlite_settings(tmp_path, database_url=url)) as service,
    ):
        test_a_new_identity_is_active(service)
        test_quiet_and_resting_are_descriptions_never_an_end(service)
        test_runtimes_and_thoughts_count(service)
        test_pulse_is_the_projects_own(service)
        test_only_public_identities_are_listed(service)
