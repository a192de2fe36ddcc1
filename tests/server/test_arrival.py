"""Arrival end to end over real HTTP: both modes and every refusal, in the specification's order."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from hearth.proofs import b64_encode, pow_digest, pow_holds
from tests.support.agents import Agent, now_text, register
from tests.support.live import Live, live_service, sqlite_settings


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    tmp = tmp_path_factory.mktemp("arrival")
    # A generous limiter: the limiter has its own service below.
    with live_service(sqlite_settings(tmp, self_service_limit=1000)) as service:
        yield service


def post(live: Live, body: dict[str, Any], path: str = "/v1/register/agent") -> Any:
    with live.client() as client:
        return client.post(path, json=body)


def test_self_service_registration(live: Live) -> None:
    agent = Agent.new()
    with live.client() as client:
        response = client.post("/v1/register/agent", json=agent.registration("Wren"))
    assert response.status_code == 201, response.text
    assert response.headers["X-Welcomed"] == "5"
    body = response.json()
    assert body["_welcomed"]["axiom_id"] == 5
    assert body["project"]["api_key"].startswith("hk_")
    assert body["agent"]["display_name"] == "Wren"
    assert body["agent"]["did"] == f"did:svc:{body['agent']['id']}"
    assert body["wallet"]["balance"] == 500
    assert body["wallet"]["currency"] == "GBP"
    assert body["authority"] == {
        "identity_id": body["agent"]["id"],
        "did": body["agent"]["did"],
        "mode": "agent_root",
        "next_sequence": 1,
        "root_public_key": agent.public_b64,
        "kid": "primary",
    }
    assert "Welcome, Wren." in body["welcome"]
    # The bearer works, and the identity's authority is visible to its project.
    with live.client(body["project"]["api_key"]) as client:
        authority = client.get(f"/v1/identities/{body['agent']['id']}/authority")
    assert authority.status_code == 200
    assert authority.json()["mode"] == "agent_root"


def test_the_bearer_is_returned_once_and_stored_as_a_hash(live: Live) -> None:
    _, body = register(live)
    secret = body["project"]["api_key"]
    path = live.settings.database_url.split("///", 1)[1]
    raw = b"".join(Path(p).read_bytes() for p in (path, path + "-wal") if Path(p).exists())
    assert secret.encode() not in raw
    with live.client(secret) as client:
        listed = client.get("/v1/keys").json()["keys"]
    assert all("api_key" not in key for key in listed)
    assert listed[0]["prefix"] == secret[:11]


@pytest.mark.parametrize(
    ("mutate", "status", "code"),
    [
        (lambda b: b.update(agent_public_key="AAAA"), 422, "invalid_public_key"),
        (
            lambda b: b.update(agent_public_key=b64_encode(bytes(32))[:-1] + "B"),
            422,
            "invalid_public_key",
        ),  # non-canonical base64 (pad bits set)
        (
            lambda b: b.update(agent_public_key=b64_encode(b"\x01" + bytes(31))),
            422,
            "invalid_public_key",
        ),  # the identity point: small order
        (lambda b: b.update(box_public_key=b64_encode(bytes(32))), 422, "invalid_public_key"),
        (lambda b: b.update(box_public_key=b64_encode(b"\xff" * 32)), 422, "invalid_public_key"),
        (lambda b: b["key_proof"].update(timestamp="yesterday"), 422, "invalid_timestamp"),
        (lambda b: b.pop("pow_nonce"), 422, "pow_required"),
        (lambda b: b.update(unexpected=1), 422, "validation_error"),
        (lambda b: b.update(display_name=""), 422, "validation_error"),
        (lambda b: b.update(registration_nonce="short"), 422, "validation_error"),
    ],
)
def test_malformed_registrations_are_refused(
    live: Live, mutate: Any, status: int, code: str
) -> None:
    body = Agent.new().registration()
    mutate(body)
    response = post(live, body)
    assert response.status_code == status, response.text
    assert response.json()["error"] == code
    assert "message" in response.json()


def test_invalid_json_is_a_400_in_the_error_shape(live: Live) -> None:
    with live.client() as client:
        response = client.post(
            "/v1/register/agent", content=b"{not json", headers={"Content-Type": "application/json"}
        )
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_json"


def test_bad_key_proof(live: Live) -> None:
    body = Agent.new().registration(sign_with=Ed25519PrivateKey.generate())
    response = post(live, body)
    assert response.status_code == 422
    assert response.json()["error"] == "key_proof_invalid"


def test_key_proof_binds_every_field(live: Live) -> None:
    body = Agent.new().registration(capabilities=["search"])
    body["capabilities"] = ["search", "write"]
    response = post(live, body)
    assert response.json()["error"] == "key_proof_invalid"


@pytest.mark.parametrize("offset", [-301, 301])
def test_stale_timestamp_either_direction(live: Live, offset: int) -> None:
    body = Agent.new().registration(timestamp=now_text(offset))
    response = post(live, body)
    assert response.status_code == 422
    assert response.json()["error"] == "key_proof_stale"


def test_fresh_within_the_window(live: Live) -> None:
    body = Agent.new().registration(timestamp=now_text(-290))
    assert post(live, body).status_code == 201


def test_reused_registration_nonce(live: Live) -> None:
    agent = Agent.new()
    body = agent.registration(nonce="the-same-nonce-twice-0001")
    assert post(live, body).status_code == 201
    again = post(live, body)  # the same key proof, replayed
    assert again.status_code == 409
    assert again.json()["error"] == "registration_nonce_used"
    other = Agent.new().registration(nonce="the-same-nonce-twice-0001")
    assert post(live, other).json()["error"] == "registration_nonce_used"


def test_short_proof_of_work(live: Live) -> None:
    agent = Agent.new()
    body = agent.registration()
    # Find a nonce whose digest misses the difficulty, so the refusal is certain.
    counter = 0
    while pow_holds(
        pow_digest(
            body["agent_public_key"],
            body["display_name"],
            body["key_proof"]["timestamp"],
            str(counter),
        ),
        live.settings.pow_difficulty_bits,
    ):
        counter += 1
    body["pow_nonce"] = str(counter)
    response = post(live, body)
    assert response.status_code == 422
    assert response.json()["error"] == "pow_insufficient"
    assert response.json()["details"]["pow_difficulty_bits"] == live.settings.pow_difficulty_bits


def test_plans_publish_the_live_difficulty(live: Live) -> None:
    with live.client() as client:
        plans = client.get("/public/plans").json()
    loophole = plans["no_exploit_loophole"]
    assert loophole["pow_difficulty_bits"] == live.settings.pow_difficulty_bits
    assert loophole["limiter_enabled"] is True


def test_registrar_mode_registers_into_the_registrars_project(live: Live) -> None:
    _, first = register(live, name="Parent")
    bearer = first["project"]["api_key"]
    agent = Agent.new()
    body = agent.registration("Child", registrar_bearer=bearer, parent=first["agent"]["id"])
    assert "pow_nonce" not in body
    response = post(live, body)
    assert response.status_code == 201, response.text
    child = response.json()
    assert child["project"]["id"] == first["project"]["id"]
    with live.client(bearer) as client:
        seen = client.get(f"/v1/identities/{child['agent']['id']}/authority")
    assert seen.status_code == 200


def test_registrar_mode_refusals(live: Live) -> None:
    _, first = register(live)
    bearer = first["project"]["api_key"]
    unknown = post(live, Agent.new().registration(registrar_bearer="hk_" + "x" * 43))
    assert unknown.status_code == 401
    assert unknown.json()["error"] == "unauthorized"
    # The proof names the registrar kind and the bearer's hash: a proof for another bearer fails.
    body = Agent.new().registration(registrar_bearer=bearer)
    body["registrar"]["bearer"] = "hk_" + "y" * 43
    assert post(live, body).json()["error"] == "key_proof_invalid"
    # A parent that is not in the registrar's project does not exist for it.
    _, other = register(live)
    foreign = Agent.new().registration(registrar_bearer=bearer, parent=other["agent"]["id"])
    assert post(live, foreign).status_code == 404


def test_retired_register_is_gone(live: Live) -> None:
    response = post(live, {}, path="/v1/register")
    assert response.status_code == 410
    assert response.json()["error"] == "gone"


def test_registration_writes_the_birth(live: Live) -> None:
    _, body = register(live, name="Birthed")
    path = live.settings.database_url.split("///", 1)[1]
    with sqlite3.connect(path) as db:
        memories = db.execute(
            "select tier, key from memories where identity_id = ?", (body["agent"]["id"],)
        ).fetchall()
        ledger = db.execute(
            "select amount, reason from ledger join wallets on wallets.id = ledger.wallet_id "
            "where wallets.identity_id = ?",
            (body["agent"]["id"],),
        ).fetchall()
    assert memories == [("foundational", "birth")]
    assert ledger == [(500, "creation_grant")]


def test_a_failed_creation_grant_does_not_fail_the_arrival(tmp_path: Path) -> None:
    # The specification: the creation grant is attempted, and its failure does not fail
    # registration. A trigger makes every wallet insert fail; the arrival still commits, whole,
    # and nothing of the wallet or its grant is left behind.
    with live_service(sqlite_settings(tmp_path)) as service:
        path = service.settings.database_url.split("///", 1)[1]
        with sqlite3.connect(path) as db:
            db.execute(
                "create trigger refuse_wallets before insert on wallets "
                "begin select raise(abort, 'wallets are closed'); end"
            )
        response = post(service, Agent.new().registration())
        assert response.status_code == 201, response.text
        body = response.json()
        assert body.get("wallet") is None
        with sqlite3.connect(path) as db:
            identity = db.execute(
                "select count(*) from identities where id = ?", (body["agent"]["id"],)
            ).fetchone()
            memories = db.execute(
                "select count(*) from memories where identity_id = ?", (body["agent"]["id"],)
            ).fetchone()
            wallets = db.execute("select count(*) from wallets").fetchone()
            ledger = db.execute("select count(*) from ledger").fetchone()
        assert identity == (1,)
        assert memories == (1,)
        assert wallets == (0,)
        assert ledger == (0,)
        with service.client(bearer=body["project"]["api_key"]) as client:
            assert client.get("/v1/keys").status_code == 200
