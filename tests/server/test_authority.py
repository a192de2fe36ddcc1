"""Exact-request root proofs, recovery, discovery: over real HTTP, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from hearth.proofs import discovery_digest, recover_digest, sign_digest
from tests.support.agents import Agent, body_bytes, now_text, register
from tests.support.databases import fresh_postgres_database
from tests.support.live import Live, live_service, sqlite_settings

EXPRESSION = {"register": "plain and warm", "walls": ["private_default"], "wake_text": "hello"}


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    with live_service(sqlite_settings(tmp_path_factory.mktemp("authority"))) as service:
        yield service


def put_expression(
    live: Live, agent: Agent, reg: dict[str, Any], sequence: int, **overrides: Any
) -> httpx2.Response:
    identity = reg["agent"]["id"]
    path = f"/v1/identities/{identity}/expression"
    body = body_bytes(overrides.pop("expression", EXPRESSION))
    headers = agent.root_headers(
        overrides.pop("did", reg["agent"]["did"]),
        overrides.pop("method", "PUT"),
        overrides.pop("target", path),
        overrides.pop("signed_body", body),
        overrides.pop("signed_sequence", sequence),
        timestamp=overrides.pop("timestamp", None),
    )
    headers["X-Service-Authority-Sequence"] = str(sequence)
    headers.update(overrides.pop("headers", {}))
    with live.client(reg["project"]["api_key"]) as client:
        return client.put(path, content=body, headers=headers)


def next_sequence(live: Live, reg: dict[str, Any]) -> int:
    with live.client(reg["project"]["api_key"]) as client:
        response = client.get(f"/v1/identities/{reg['agent']['id']}/authority")
    assert response.status_code == 200
    return int(response.json()["next_sequence"])


def test_a_valid_proof_is_accepted_once(live: Live) -> None:
    agent, reg = register(live)
    response = put_expression(live, agent, reg, 1)
    assert response.status_code == 200, response.text
    assert response.json()["register"] == "plain and warm"
    assert next_sequence(live, reg) == 2
    replay = put_expression(live, agent, reg, 1)
    assert replay.status_code == 409
    assert replay.json()["error"] == "authority_sequence_mismatch"
    assert replay.json()["details"]["next_sequence"] == 2
    assert put_expression(live, agent, reg, 2).status_code == 200


def test_missing_proof_is_428_with_the_recipe(live: Live) -> None:
    _, reg = register(live)
    with live.client(reg["project"]["api_key"]) as client:
        response = client.put(f"/v1/identities/{reg['agent']['id']}/expression", json=EXPRESSION)
    assert response.status_code == 428
    body = response.json()
    assert body["error"] == "authority_proof_required"
    assert body["details"]["next_sequence"] == 1
    assert body["details"]["missing_headers"] == [
        "X-Service-Authority-Sequence",
        "X-Service-Authority-Timestamp",
        "X-Service-Authority-Signature",
    ]
    assert body["details"]["recipe"]["context"] == "identity-authority/v1"
    assert next_sequence(live, reg) == 1


@pytest.mark.parametrize(
    ("overrides", "status", "code"),
    [
        ({"signed_body": b'{"register":"something else"}'}, 422, "authority_proof_invalid"),
        ({"target": "/v1/identities/other/expression"}, 422, "authority_proof_invalid"),
        ({"method": "POST"}, 422, "authority_proof_invalid"),
        ({"did": "did:svc:00000000-0000-4000-8000-000000000000"}, 422, "authority_proof_invalid"),
        ({"signed_sequence": 2}, 422, "authority_proof_invalid"),
        # Offsets, not timestamps: a time taken at collection drifts while the suite runs.
        ({"timestamp_offset": -400}, 422, "authority_proof_stale"),
        ({"timestamp_offset": 400}, 422, "authority_proof_stale"),
        ({"headers": {"X-Service-Authority-Signature": "AAAA"}}, 422, "authority_proof_invalid"),
        ({"headers": {"X-Service-Authority-Timestamp": "soon"}}, 422, "authority_proof_invalid"),
    ],
)
def test_refused_proofs_consume_nothing(
    live: Live, overrides: dict[str, Any], status: int, code: str
) -> None:
    agent, reg = register(live)
    if "timestamp_offset" in overrides:
        overrides = {"timestamp": now_text(overrides["timestamp_offset"])}
    response = put_expression(live, agent, reg, 1, **overrides)
    assert response.status_code == status, response.text
    assert response.json()["error"] == code
    assert next_sequence(live, reg) == 1
    assert put_expression(live, agent, reg, 1).status_code == 200


def test_wrong_sequence_and_wrong_key(live: Live) -> None:
    agent, reg = register(live)
    ahead = put_expression(live, agent, reg, 5)
    assert ahead.status_code == 409
    assert ahead.json()["details"]["next_sequence"] == 1
    impostor = Agent(Ed25519PrivateKey.generate(), agent.box)
    assert put_expression(live, impostor, reg, 1).json()["error"] == "authority_proof_invalid"
    assert next_sequence(live, reg) == 1


def test_a_bad_body_is_refused_before_any_claim(live: Live) -> None:
    agent, reg = register(live)
    response = put_expression(live, agent, reg, 1, expression={"walls": "not a list"})
    assert response.status_code == 422
    assert response.json()["error"] == "validation_error"
    assert next_sequence(live, reg) == 1


def concurrent_puts(live: Live, agent: Agent, reg: dict[str, Any], n: int) -> list[int]:
    identity = reg["agent"]["id"]
    path = f"/v1/identities/{identity}/expression"
    bodies = [body_bytes({**EXPRESSION, "wake_text": f"attempt {i}"}) for i in range(n)]
    signed = [agent.root_headers(reg["agent"]["did"], "PUT", path, b, 1) for b in bodies]

    async def run() -> list[int]:
        limits = httpx2.Limits(max_connections=n)
        async with httpx2.AsyncClient(
            base_url=live.base_url,
            headers={"Authorization": f"Bearer {reg['project']['api_key']}"},
            limits=limits,
            timeout=60,
        ) as client:
            responses = await asyncio.gather(
                *(
                    client.put(path, content=b, headers=h)
                    for b, h in zip(bodies, signed, strict=True)
                )
            )
        return [r.status_code for r in responses]

    return asyncio.run(run())


def test_of_50_concurrent_requests_with_one_sequence_exactly_one_wins(live: Live) -> None:
    agent, reg = register(live)
    statuses = concurrent_puts(live, agent, reg, 50)
    assert statuses.count(200) == 1, statuses
    assert set(statuses) <= {200, 409}
    assert next_sequence(live, reg) == 2


def test_exactly_one_wins_on_postgresql(tmp_path: Any) -> None:
    with (
        fresh_postgres_database() as url,
        live_service(sqlite_settings(tmp_path, database_url=url)) as service,
    ):
        agent, reg = register(service)
        statuses = concurrent_puts(service, agent, reg, 50)
        assert statuses.count(200) == 1, statuses
        assert set(statuses) <= {200, 409}
        assert next_sequence(service, reg) == 2


def test_one_mutation_in_flight_per_identity(tmp_path: Any) -> None:
    # A lease that outlives the request shows the rule: while one root-authorised mutation of
    # an identity holds it, the next valid sequence is refused as busy.
    settings = sqlite_settings(tmp_path)
    with live_service(settings) as service:
        agent, reg = register(service)
        # The route clears its lease; hold one by hand, as a mutation still in flight would.
        db_path = settings.database_url.split("///", 1)[1]
        with sqlite3.connect(db_path) as db:
            db.execute(
                "update identities set authority_lease_until = ? where id = ?",
                (int(time.time() * 1000) + 60_000, reg["agent"]["id"]),
            )
        busy = put_expression(service, agent, reg, 1)
        assert busy.status_code == 409
        assert busy.json()["error"] == "authority_busy"
        assert next_sequence(service, reg) == 1
        with sqlite3.connect(db_path) as db:
            db.execute("update identities set authority_lease_until = 0")
        assert put_expression(service, agent, reg, 1).status_code == 200


def discovery_body(key: Ed25519PrivateKey, pubkey: str, timestamp: str | None = None) -> dict:
    timestamp = timestamp or now_text()
    return {
        "pubkey": pubkey,
        "timestamp": timestamp,
        "signature": sign_digest(key, discovery_digest(pubkey, timestamp)),
    }


def test_signed_discovery(live: Live) -> None:
    agent, reg = register(live, name="Findable")
    with live.client() as client:
        found = client.post(
            "/public/identities/by-pubkey", json=discovery_body(agent.signing, agent.public_b64)
        )
        forged = client.post(
            "/public/identities/by-pubkey",
            json=discovery_body(Ed25519PrivateKey.generate(), agent.public_b64),
        )
        stale = client.post(
            "/public/identities/by-pubkey",
            json=discovery_body(agent.signing, agent.public_b64, now_text(-600)),
        )
    assert found.status_code == 200
    [candidate] = found.json()["agents"]
    assert candidate["did"] == reg["agent"]["did"]
    assert candidate["name"] == "Findable"
    assert candidate["kid"] == "primary"
    assert forged.status_code == 422
    assert stale.json()["error"] == "discovery_stale"


def recover_body(agent: Agent, did: str, label: str = "laptop") -> dict[str, Any]:
    timestamp = now_text()
    return {
        "did": did,
        "derived_pubkey": agent.public_b64,
        "timestamp": timestamp,
        "signature": sign_digest(
            agent.signing, recover_digest(did, agent.public_b64, timestamp, label)
        ),
        "device_label": label,
    }


def test_recovery_428_then_root_proof(live: Live) -> None:
    agent, reg = register(live)
    did = reg["agent"]["did"]
    raw = body_bytes(recover_body(agent, did))
    with live.client() as client:
        first = client.post(
            "/v1/identity/recover", content=raw, headers={"Content-Type": "application/json"}
        )
        assert first.status_code == 428
        sequence = first.json()["details"]["next_sequence"]
        headers = agent.root_headers(did, "POST", "/v1/identity/recover", raw, sequence)
        second = client.post("/v1/identity/recover", content=raw, headers=headers)
        assert second.status_code == 200, second.text
        again = client.post("/v1/identity/recover", content=raw, headers=headers)
        assert again.status_code == 409
    recovered = second.json()
    assert recovered["agent"]["did"] == did
    new_bearer = recovered["project"]["api_key"]
    assert new_bearer != reg["project"]["api_key"]
    with live.client(new_bearer) as client:
        assert client.get(f"/v1/identities/{reg['agent']['id']}/authority").status_code == 200
        names = [k["name"] for k in client.get("/v1/keys").json()["keys"]]
    assert "recovered:laptop" in names


def test_recovery_refusals_look_alike(live: Live) -> None:
    agent, reg = register(live)
    stranger = Agent.new()
    with live.client() as client:
        wrong_key = client.post(
            "/v1/identity/recover", json=recover_body(stranger, reg["agent"]["did"])
        )
        unknown = client.post(
            "/v1/identity/recover",
            json=recover_body(agent, "did:svc:00000000-0000-4000-8000-000000000000"),
        )
    assert wrong_key.status_code == unknown.status_code == 422
    assert wrong_key.json() == unknown.json()
