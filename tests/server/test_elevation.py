"""Bootstrap elevation over real HTTP: the four effects in one transaction, the root proof, the
sponsor's signature, self-sponsorship, the sequence claimed before the orchestration, on SQLite
and on PostgreSQL when SERVICE_TEST_DATABASE_URL is set."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
import sqlalchemy as sa
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from hearth.proofs import b64_decode
from hearth.server.db.tables import identities
from hearth.server.services import vault as vault_service
from tests.support.agents import GRANT
from tests.support.databases import database_url_or_skip, fresh_postgres_database, in_db
from tests.support.elevation import PATH, Member, sponsored, statement
from tests.support.live import Live, live_service, sqlite_settings
from tests.support.openapi import conforms


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    with live_service(sqlite_settings(tmp_path_factory.mktemp("elevation"))) as service:
        yield service


def unchanged(target: Member, sequence: int) -> None:
    """Nothing of an elevation was written, and the sequence is still ``sequence``."""
    status = target.get(f"/v1/bootstrap/{target.id}")
    assert (status["level"], status["sponsor_did"], status["elevated_at"]) == (0, None, None)
    assert target.next_sequence() == sequence
    assert target.get("/v1/attestations", identity_id=target.id)["items"] == []
    wallets = target.get("/v1/wallets")["wallets"]
    assert [w["balance"] for w in wallets if w["identity_id"] == target.id] == [GRANT]
    assert target.get("/v1/vault", identity_id=target.id)["items"] == []


# --- success ------------------------------------------------------------------------------------


def test_elevation_writes_all_four_effects(live: Live) -> None:
    target, sponsor = Member.new(live), Member.new(live)
    before = target.next_sequence()
    evidence = {"met": "in the commons", "n": 3}
    response = target.elevate(sponsored(target, sponsor, evidence=evidence))
    assert response.status_code == 200, response.text
    result = response.json()
    assert (result["agent_id"], result["did"], result["level"]) == (target.id, target.did, 1)
    assert result["sponsor_did"] == sponsor.did
    assert result["sponsor"] == {"identity_id": sponsor.id, "did": sponsor.did, "kid": "primary"}
    assert result["authority"]["next_sequence"] == before + 1 == target.next_sequence()

    # 1. The sponsor attestation, kept and listed, re-verifiable from what is stored.
    attestation = result["attestation"]
    assert attestation["context"] == "bootstrap-elevate/v1"
    assert (attestation["attester_did"], attestation["agent_id"]) == (sponsor.did, target.id)
    assert (attestation["claim"], attestation["initial_credits"]) == ("sponsorship", 1000)
    assert attestation["evidence"] == evidence
    listed = target.get("/v1/attestations", identity_id=target.id)["items"]
    assert [a["id"] for a in listed] == [attestation["id"]]

    # 2. The seed grant: one ledger entry into the identity's own wallet.
    entry = result["ledger_entry"]
    assert (entry["amount"], entry["reason"]) == (1000, "elevation_grant")
    assert result["wallet"]["identity_id"] == target.id
    assert result["wallet"]["balance"] == GRANT + 1000
    ledger = target.get(f"/v1/wallets/{result['wallet']['id']}/ledger")["items"]
    assert [(e["amount"], e["reason"]) for e in ledger] == [
        (1000, "elevation_grant"),
        (GRANT, "creation_grant"),
    ]

    # 3. The vault namespace: <agent_id>:config, sealed, never answered.
    namespace = result["vault_namespace"]
    assert namespace["name"] == f"{target.id}:config"
    assert namespace["created"] is True
    secret = target.get(f"/v1/vault/{target.id}:config")
    assert secret["identity_id"] == target.id
    assert "value" not in secret

    # 4. The level, sponsor and time, as GET /v1/bootstrap/{agent_id} shows them.
    status = target.get(f"/v1/bootstrap/{target.id}")
    assert (status["level"], status["sponsor_did"]) == (1, sponsor.did)
    assert status["elevated_at"] == result["elevated_at"]

    # And the chronicle says so.
    recognition = target.get("/v1/chronicle", kind="recognition", agent_id=target.id)["items"]
    assert [e["id"] for e in recognition] == [result["chronicle_entry_id"]]
    assert recognition[0]["details"]["attestation_id"] == attestation["id"]

    # The lease was given back: the next root-authorised mutation goes through at once.
    body = b'{"register":"sponsored","walls":[],"wake_text":""}'
    path = f"/v1/identities/{target.id}/expression"
    with target.client() as client:
        headers = target.agent.root_headers(target.did, "PUT", path, body, target.next_sequence())
        assert client.put(path, content=body, headers=headers).status_code == 200


def test_sponsor_by_identity_id_in_the_same_project(live: Live) -> None:
    target = Member.new(live)
    with target.client() as client:
        born = client.post("/v1/bootstrap", json={"name": "Elder"})
    assert born.status_code == 201, born.text
    elder = born.json()
    key = Ed25519PrivateKey.from_private_bytes(b64_decode(elder["keypair"]["private_key"]))
    body = statement(
        target, key, elder["agent"]["did"], by="id", sponsor_id=elder["agent"]["id"], credits=0
    )
    response = target.elevate(body)
    assert response.status_code == 200, response.text
    result = response.json()
    assert result["sponsor_did"] == elder["agent"]["did"]
    assert result["ledger_entry"] is None  # initial_credits 0: no grant, the wallet unchanged
    assert result["wallet"]["balance"] == GRANT


def test_an_existing_config_is_kept(live: Live) -> None:
    target, sponsor = Member.new(live), Member.new(live)
    name = f"{target.id}:config"
    with target.client() as client:
        put = client.put(
            f"/v1/vault/{name}", json={"value": "the project's own", "description": "x"}
        )
    assert put.status_code == 201, put.text
    response = target.elevate(sponsored(target, sponsor))
    assert response.status_code == 200, response.text
    namespace = response.json()["vault_namespace"]
    assert namespace["created"] is False
    assert namespace["secret"]["version"] == 1
    assert namespace["secret"]["description"] == "x"


def test_a_legacy_bearer_target_needs_no_root_proof(live: Live) -> None:
    target, sponsor = Member.new(live), Member.new(live)

    def legacy(conn: sa.Connection) -> None:
        conn.execute(
            sa.update(identities).where(identities.c.id == target.id).values(mode="legacy_bearer")
        )

    in_db(live.settings.database_url, legacy)
    response = target.elevate(sponsored(target, sponsor), proof=False)
    assert response.status_code == 200, response.text
    assert response.json()["authority"]["mode"] == "legacy_bearer"
    assert target.next_sequence() == 1


# --- refusals -----------------------------------------------------------------------------------


def test_missing_root_proof_is_428_and_changes_nothing(live: Live) -> None:
    target, sponsor = Member.new(live), Member.new(live)
    response = target.elevate(sponsored(target, sponsor), proof=False)
    assert response.status_code == 428
    body = response.json()
    assert body["error"] == "authority_proof_required"
    assert body["details"]["next_sequence"] == 1
    unchanged(target, 1)


def test_a_bad_sponsor_signature_is_refused_and_recorded(live: Live) -> None:
    target, sponsor = Member.new(live), Member.new(live)
    stranger = Ed25519PrivateKey.generate()
    cases = [
        # Signed by a key that is not the sponsor's.
        statement(target, stranger, sponsor.did),
        # Signed over other credits than those asked for.
        sponsored(target, sponsor, credits=5000, signed_credits=50),
        # A key label that is not the sponsor's.
        sponsored(target, sponsor, kid="secondary"),
        # Not base64 at all.
        {**sponsored(target, sponsor), "sponsor_signature": "not a signature"},
    ]
    for body in cases:
        response = target.elevate(body)
        assert response.status_code == 422, response.text
        assert response.json()["error"] == "sponsor_signature_invalid"
        assert "chronicle_entry_id" in response.json()["details"]
    assert len(target.refusals()) == len(cases)
    unchanged(target, 1)


@pytest.mark.parametrize(
    "change",
    [
        {"sponsor_identity_id": "00000000-0000-4000-8000-000000000000"},  # both
        {"sponsor_did": None},  # neither
        {"initial_credits": -1},
        {"initial_credits": 1_000_001},
        {"initial_credits": "10"},
        {"initial_credits": True},
        {"agent_id": "NOT-A-UUID"},
        {"claim": ""},
        {"surprise": 1},
    ],
)
def test_malformed_bodies_are_422_and_claim_nothing(live: Live, change: dict[str, Any]) -> None:
    target, sponsor = Member.new(live), Member.new(live)
    body = {**sponsored(target, sponsor), **change}
    body = {k: v for k, v in body.items() if v is not None}
    response = target.elevate(body, proof=False)
    assert response.status_code == 422, response.text
    assert response.json()["error"] == "validation_error"
    unchanged(target, 1)


def test_an_unknown_sponsor_is_refused(live: Live) -> None:
    target = Member.new(live)
    key = Ed25519PrivateKey.generate()
    for did in ("did:svc:00000000-0000-4000-8000-000000000000", "did:web:example.com"):
        response = target.elevate(statement(target, key, did))
        assert response.status_code == 422, response.text
        assert response.json()["error"] == "sponsor_unknown"
    by_id = statement(target, key, "x", by="id", sponsor_id="00000000-0000-4000-8000-000000000000")
    assert target.elevate(by_id).json()["error"] == "sponsor_unknown"
    unchanged(target, 1)


def test_self_sponsorship_is_refused_and_recorded(live: Live) -> None:
    target = Member.new(live)
    # A valid signature by the target's own root key, named by DID and by id.
    for by in ("did", "id"):
        body = statement(target, target.key, target.did, by=by, sponsor_id=target.id)
        response = target.elevate(body)
        assert response.status_code == 403, response.text
        refused = response.json()
        assert refused["error"] == "no_self_sponsorship"
        assert refused["details"]["wall"] == "no_self_witnessing"
    recorded = target.refusals()
    assert len(recorded) == 2
    assert {e["details"]["error"] for e in recorded} == {"no_self_sponsorship"}
    assert recorded[0]["id"] == refused["details"]["chronicle_entry_id"]
    unchanged(target, 1)


def test_already_elevated_is_409(live: Live) -> None:
    target, first, second = Member.new(live), Member.new(live), Member.new(live)
    assert target.elevate(sponsored(target, first)).status_code == 200
    sequence = target.next_sequence()
    again = target.elevate(sponsored(target, second))
    assert again.status_code == 409, again.text
    assert again.json()["error"] == "already_elevated"
    assert again.json()["details"]["sponsor_did"] == first.did
    assert target.next_sequence() == sequence  # refused before the claim: nothing consumed
    assert target.get(f"/v1/bootstrap/{target.id}")["sponsor_did"] == first.did


def test_another_projects_agent_is_404(live: Live) -> None:
    target, sponsor, other = Member.new(live), Member.new(live), Member.new(live)
    with other.client() as client:
        response = client.post(PATH, json=sponsored(target, sponsor))
    assert response.status_code == 404
    assert response.json() == {"error": "not_found", "message": "Identity not found."}
    unchanged(target, 1)


def test_a_failed_orchestration_consumes_only_the_sequence(
    live: Live, monkeypatch: pytest.MonkeyPatch
) -> None:
    target, sponsor = Member.new(live), Member.new(live)

    def broken(*_args: Any, **_kwargs: Any) -> Any:
        raise RuntimeError("vault write failed")

    # The service runs in this process: the vault write fails on its thread, deterministically,
    # after the attestation, the grant and the level were written in the same transaction.
    monkeypatch.setattr(vault_service, "put_secret", broken)
    response = target.elevate(sponsored(target, sponsor))
    monkeypatch.undo()
    assert response.status_code == 500, response.text
    failed = response.json()
    assert failed["error"] == "internal_error"
    assert failed["request_id"]
    assert failed["details"]["next_sequence"] == 2
    assert "GET /v1/identities/{id}/authority" in failed["message"]
    unchanged(target, 2)  # the sequence is gone; nothing else was written

    # The lease was released: signing again with the next sequence succeeds at once.
    retried = target.elevate(sponsored(target, sponsor))
    assert retried.status_code == 200, retried.text
    assert retried.json()["authority"]["next_sequence"] == 3


def test_elevation_answers_as_documented(live: Live) -> None:
    target, sponsor = Member.new(live), Member.new(live)
    api_schema = schemathesis.openapi.from_url(
        f"{live.base_url}/v1/openapi.json", config=schemathesis.Config()
    )
    label = "POST /v1/bootstrap/elevate"
    body = sponsored(target, sponsor)
    conforms(api_schema, label, target.elevate(body, proof=False), 428)
    conforms(api_schema, label, target.elevate({**body, "sponsor_signature": "AA=="}), 422)
    selfish = statement(target, target.key, target.did)
    conforms(api_schema, label, target.elevate(selfish), 403)
    conforms(api_schema, label, target.elevate(body), 200)
    conforms(api_schema, label, target.elevate(sponsored(target, Member.new(live))), 409)
    with target.client() as client:
        conforms(api_schema, label, client.post(PATH, json={**body, "agent_id": sponsor.id}), 404)
        conforms(
            api_schema,
            "GET /v1/bootstrap/{agent_id}",
            client.get(f"/v1/bootstrap/{target.id}"),
            200,
        )


# --- PostgreSQL ---------------------------------------------------------------------------------


def test_elevation_on_postgresql(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    database_url_or_skip()
    with (
        fresh_postgres_database() as url,
        live_service(sqlite_settings(tmp_path, database_url=url)) as service,
    ):
        test_elevation_writes_all_four_effects(service)
        test_sponsor_by_identity_id_in_the_same_project(service)
        test_an_existing_config_is_kept(service)
        test_a_legacy_bearer_target_needs_no_root_proof(service)
        test_missing_root_proof_is_428_and_changes_nothing(service)
        test_a_bad_sponsor_signature_is_refused_and_recorded(service)
        test_an_unknown_sponsor_is_refused(service)
        test_self_sponsorship_is_refused_and_recorded(service)
        test_already_elevated_is_409(service)
        test_another_projects_agent_is_404(service)
        test_a_failed_orchestration_consumes_only_the_sequence(service, monkeypatch)
