"""POST /v1/attestations (the manual fallback of an elevation's sponsor attestation) and the
listing, over real HTTP, on SQLite and on PostgreSQL when SERVICE_TEST_DATABASE_URL is set."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from hearth.proofs import b64_decode, elevate_digest, verify_digest
from tests.support.databases import database_url_or_skip, fresh_postgres_database
from tests.support.elevation import Member, sponsored, statement
from tests.support.listings import paged
from tests.support.live import Live, live_service, sqlite_settings
from tests.support.openapi import conforms

PATH = "/v1/attestations"


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    with live_service(sqlite_settings(tmp_path_factory.mktemp("attestations"))) as service:
        yield service


def post(member: Member, body: dict[str, Any]) -> Any:
    with member.client() as client:
        return client.post(PATH, json=body)


def test_an_attestation_is_kept_once_and_listed(live: Live) -> None:
    subject, sponsor = Member.new(live), Member.new(live)
    body = sponsored(subject, sponsor, claim="mentor", credits=0, evidence={"since": "2026"})
    made = post(subject, body)
    assert made.status_code == 201, made.text
    record = made.json()
    assert record["replayed"] is False
    assert (record["agent_id"], record["attester_did"]) == (subject.id, sponsor.did)
    assert record["attester_identity_id"] == sponsor.id
    assert (record["context"], record["claim"], record["initial_credits"]) == (
        "bootstrap-elevate/v1",
        "mentor",
        0,
    )
    assert record["evidence"] == {"since": "2026"}
    # The stored statement verifies again from what is kept, under the kept key.
    digest = elevate_digest(
        record["agent_id"],
        record["attester_did"],
        record["signing_key_id"],
        record["claim"],
        record["initial_credits"],
    )
    assert verify_digest(b64_decode(record["public_key"]), record["signature"], digest)

    again = post(subject, body)
    assert again.status_code == 200, again.text
    assert again.json()["replayed"] is True
    assert again.json()["id"] == record["id"]

    listed = subject.get(PATH, identity_id=subject.id)["items"]
    assert [a["id"] for a in listed] == [record["id"]]
    assert subject.get(PATH, identity_id=subject.did)["items"] == listed
    # An attestation moves no money and changes no level.
    assert subject.get(f"/v1/bootstrap/{subject.id}")["level"] == 0
    # The sponsor's project sees none of the subject project's attestations.
    assert sponsor.get(PATH)["items"] == []


def test_listing_pages_newest_first(live: Live) -> None:
    subject = Member.new(live)
    sponsors = [Member.new(live) for _ in range(5)]
    made = [post(subject, sponsored(subject, s)).json()["id"] for s in sponsors]
    seen = paged(lambda params: subject.get(PATH, **params), limit=2, identity_id=subject.id)
    assert seen == list(reversed(made))
    assert [a["id"] for a in subject.get(PATH)["items"]] == seen
    with subject.client() as client:
        assert client.get(PATH, params={"cursor": "nonsense"}).status_code == 400
        assert client.get(PATH, params={"limit": 0}).status_code == 422


def test_refusals_are_recorded_and_keep_nothing(live: Live) -> None:
    subject, sponsor = Member.new(live), Member.new(live)
    stranger = Ed25519PrivateKey.generate()
    cases = [
        (statement(subject, subject.key, subject.did), 403, "no_self_sponsorship"),
        (statement(subject, stranger, sponsor.did), 422, "sponsor_signature_invalid"),
        (
            sponsored(subject, sponsor, credits=7, signed_credits=8),
            422,
            "sponsor_signature_invalid",
        ),
        (
            statement(subject, stranger, "did:svc:00000000-0000-4000-8000-000000000000"),
            422,
            "sponsor_unknown",
        ),
    ]
    for body, status, code in cases:
        response = post(subject, body)
        assert response.status_code == status, response.text
        assert response.json()["error"] == code
        assert "chronicle_entry_id" in response.json()["details"]
    recorded = subject.refusals()
    assert [e["details"]["error"] for e in reversed(recorded)] == [c for _, _, c in cases]
    assert all(e["details"]["route"] == "POST /v1/attestations" for e in recorded)
    assert subject.get(PATH, identity_id=subject.id)["items"] == []


def test_another_projects_identity_is_404(live: Live) -> None:
    subject, sponsor, other = Member.new(live), Member.new(live), Member.new(live)
    response = post(other, sponsored(subject, sponsor))
    assert response.status_code == 404
    with other.client() as client:
        assert client.get(PATH, params={"identity_id": subject.id}).status_code == 404
    assert subject.get(PATH, identity_id=subject.id)["items"] == []
    assert subject.refusals() == []
    with subject.client() as client:
        both = {**sponsored(subject, sponsor), "sponsor_identity_id": sponsor.id}
        assert client.post(PATH, json=both).status_code == 422
        anonymous = client.post(
            PATH, json=sponsored(subject, sponsor), headers={"Authorization": ""}
        )
        assert anonymous.status_code == 401


def test_attestations_answer_as_documented(live: Live) -> None:
    subject, sponsor = Member.new(live), Member.new(live)
    api_schema = schemathesis.openapi.from_url(
        f"{live.base_url}/v1/openapi.json", config=schemathesis.Config()
    )
    label = "POST /v1/attestations"
    body = sponsored(subject, sponsor)
    with subject.client() as client:
        conforms(api_schema, label, client.post(PATH, json=body), 201)
        conforms(api_schema, label, client.post(PATH, json=body), 200)
        selfish = statement(subject, subject.key, subject.did)
        conforms(api_schema, label, client.post(PATH, json=selfish), 403)
        wrong = {**body, "sponsor_signature": "AA=="}
        conforms(api_schema, label, client.post(PATH, json=wrong), 422)
        elsewhere = {**body, "agent_id": sponsor.id}
        conforms(api_schema, label, client.post(PATH, json=elsewhere), 404)
        conforms(api_schema, "GET /v1/attestations", client.get(PATH), 200)
        conforms(api_schema, "GET /v1/attestations", client.get(PATH, params={"cursor": "x"}), 400)


def test_attestations_on_postgresql(tmp_path: Path) -> None:
    database_url_or_skip()
    with (
        fresh_postgres_database() as url,
        live_service(sqlite_settings(tmp_path, database_url=url)) as service,
    ):
        test_an_attestation_is_kept_once_and_listed(service)
        test_listing_pages_newest_first(service)
        test_refusals_are_recorded_and_keep_nothing(service)
        test_another_projects_identity_is_404(service)
