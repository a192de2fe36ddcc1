"""Identity keys over real HTTP: registration and revocation need the root proof of an agent_root
identity, the list shows the root key first, and ``verification_key`` answers exactly the
unrevoked keys; the service registers a trusted runtime's hosted key itself. On SQLite, and on
PostgreSQL when SERVICE_TEST_DATABASE_URL is set."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from sqlalchemy import Connection

from hearth.proofs import b64_decode, b64_encode
from hearth.server.services import identity_keys
from tests.support.databases import in_db
from tests.support.identities import (
    new_owner,
    next_sequence,
    public_b64,
    register_key,
    revoke_key,
    signed,
)
from tests.support.live import Live, live_on
from tests.support.openapi import conforms
from tests.support.runtimes import MASTER_KEY, create, self_body, trusted_body

# --- fixtures -----------------------------------------------------------------------------------


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def live(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Live]:
    with live_on(
        request.param, tmp_path_factory.mktemp("identity_keys"), kms_master_key=MASTER_KEY
    ) as live:
        yield live


@pytest.fixture(scope="module")
def api_schema(live: Live) -> Any:
    return schemathesis.openapi.from_url(
        f"{live.base_url}/v1/openapi.json", config=schemathesis.Config()
    )


# --- registration and revocation ----------------------------------------------------------------


def test_registration_needs_the_root_proof(live: Live, api_schema: Any) -> None:
    owner = new_owner(live)
    device = Ed25519PrivateKey.generate()
    label = "POST /v1/identities/{id}/keys"
    with live.client(owner.bearer) as client:
        before = next_sequence(client, owner)
        refused = conforms(
            api_schema,
            label,
            register_key(client, owner, "laptop", public_b64(device), proof=False),
            428,
        )
        assert refused["error"] == "authority_proof_required"
        assert refused["details"]["next_sequence"] == before
        listed = client.get(f"/v1/identities/{owner.identity_id}/keys").json()
        assert [k["kid"] for k in listed["items"]] == ["primary"]

        created = conforms(
            api_schema, label, register_key(client, owner, "laptop", public_b64(device)), 201
        )
        assert created["kid"] == "laptop"
        assert created["purpose"] == "device"
        assert created["public_key"] == public_b64(device)
        assert created["revoked"] is False
        assert next_sequence(client, owner) == before + 1  # the proof was consumed

        listed = conforms(
            api_schema,
            "GET /v1/identities/{id}/keys",
            client.get(f"/v1/identities/{owner.identity_id}/keys"),
            200,
        )
        assert [(k["kid"], k["purpose"]) for k in listed["items"]] == [
            ("primary", "root"),
            ("laptop", "device"),
        ]
        assert listed["items"][0]["public_key"] == public_b64(owner.root)

    def lookup(conn: Connection) -> tuple[bytes | None, bytes | None, bytes | None]:
        return (
            identity_keys.verification_key(conn, owner.identity_id, "primary"),
            identity_keys.verification_key(conn, owner.identity_id, "laptop"),
            identity_keys.verification_key(conn, owner.identity_id, "phone"),
        )

    root, laptop, unknown = in_db(live, lookup, write=False)
    assert root == owner.root.public_key().public_bytes_raw()
    assert laptop == device.public_key().public_bytes_raw()
    assert unknown is None


def test_a_replayed_proof_registers_nothing(live: Live) -> None:
    owner = new_owner(live)
    target = f"/v1/identities/{owner.identity_id}/keys"
    key = public_b64(Ed25519PrivateKey.generate())
    body = json.dumps({"kid": "once", "public_key": key, "purpose": "device"}).encode()
    with live.client(owner.bearer) as client:
        headers = signed(client, owner, "POST", target, body)
        assert client.post(target, content=body, headers=headers).status_code == 201
        replay = client.post(target, content=body, headers=headers)
        assert replay.status_code == 409, replay.text
        assert replay.json()["error"] == "authority_sequence_mismatch"
        # A proof over another body does not carry over to this one.
        other = json.dumps({"kid": "twice", "public_key": key, "purpose": "device"}).encode()
        forged = client.post(
            target, content=other, headers=signed(client, owner, "POST", target, body)
        )
        assert forged.status_code == 422, forged.text
        assert forged.json()["error"] == "authority_proof_invalid"
        kids = [k["kid"] for k in client.get(target).json()["items"]]
    assert kids == ["primary", "once"]


REFUSED_REGISTRATIONS = {
    "the root kid": ({"kid": "primary"}, 422, "kid_reserved"),
    "a key that is not base64": ({"public_key": "not a key"}, 422, "invalid_public_key"),
    "a short key": ({"public_key": b64_encode(b"\x01" * 31)}, 422, "invalid_public_key"),
    "a small-order key": (
        {"public_key": b64_encode(b"\x01" + bytes(31))},
        422,
        "invalid_public_key",
    ),
    "a runtime key without its runtime": ({"purpose": "runtime"}, 422, "runtime_required"),
    "a device key bound to a runtime": (
        {"runtime_id": str(uuid.uuid4())},
        422,
        "runtime_not_applicable",
    ),
    "an unknown purpose": ({"purpose": "root"}, 422, "validation_error"),
}


@pytest.mark.parametrize("case", sorted(REFUSED_REGISTRATIONS))
def test_refused_registrations_consume_nothing(live: Live, case: str) -> None:
    change, status, code = REFUSED_REGISTRATIONS[case]
    owner = new_owner(live)
    document = {
        "kid": "k1",
        "public_key": public_b64(Ed25519PrivateKey.generate()),
        "purpose": "device",
        **change,
    }
    target = f"/v1/identities/{owner.identity_id}/keys"
    body = json.dumps(document).encode()
    with live.client(owner.bearer) as client:
        before = next_sequence(client, owner)
        response = client.post(
            target, content=body, headers=signed(client, owner, "POST", target, body)
        )
        assert response.status_code == status, response.text
        assert response.json()["error"] == code
        assert next_sequence(client, owner) == before
        assert [k["kid"] for k in client.get(target).json()["items"]] == ["primary"]


def test_runtime_keys_bind_to_a_runtime_of_the_same_identity(live: Live) -> None:
    owner = new_owner(live)
    stranger = new_owner(live)
    key = public_b64(Ed25519PrivateKey.generate())
    with live.client(owner.bearer) as client:
        mine = create(client, self_body(identity_id=owner.identity_id))
        unbound = create(client, self_body())
        created = register_key(
            client, owner, "laptop-loop", key, purpose="runtime", runtime_id=mine["id"]
        )
        assert created.status_code == 201, created.text
        assert created.json()["runtime_id"] == mine["id"]
        other = register_key(
            client, owner, "nowhere", key, purpose="runtime", runtime_id=unbound["id"]
        )
        assert other.status_code == 422, other.text
        assert other.json()["error"] == "runtime_identity_mismatch"
    with live.client(stranger.bearer) as client:
        theirs = create(client, self_body(identity_id=stranger.identity_id))
    with live.client(owner.bearer) as client:
        foreign = register_key(
            client, owner, "foreign", key, purpose="runtime", runtime_id=theirs["id"]
        )
        assert foreign.status_code == 404, foreign.text


def test_revocation(live: Live, api_schema: Any) -> None:
    owner = new_owner(live)
    label = "DELETE /v1/identities/{id}/keys/{kid}"
    with live.client(owner.bearer) as client:
        assert (
            register_key(
                client, owner, "tablet", public_b64(Ed25519PrivateKey.generate())
            ).status_code
            == 201
        )
        refused = conforms(api_schema, label, revoke_key(client, owner, "tablet", proof=False), 428)
        assert refused["error"] == "authority_proof_required"
        revoked = conforms(api_schema, label, revoke_key(client, owner, "tablet"), 200)
        assert revoked["revoked"] is True
        assert revoked["revoked_at"] is not None
        again = revoke_key(client, owner, "tablet")
        assert again.status_code == 200, again.text
        assert again.json()["revoked_at"] == revoked["revoked_at"]  # the first revocation stays
        root = revoke_key(client, owner, "primary")
        assert (root.status_code, root.json()["error"]) == (422, "kid_reserved")
        unknown = revoke_key(client, owner, "never")
        assert unknown.status_code == 404, unknown.text
        # A kid names one key for ever: a revoked kid is not reused.
        reuse = register_key(client, owner, "tablet", public_b64(Ed25519PrivateKey.generate()))
        assert (reuse.status_code, reuse.json()["error"]) == (409, "kid_taken")
        listed = client.get(f"/v1/identities/{owner.identity_id}/keys").json()["items"]
        assert [(k["kid"], k["revoked"]) for k in listed] == [("primary", False), ("tablet", True)]
    assert (
        in_db(live, identity_keys.verification_key, owner.identity_id, "tablet", write=False)
        is None
    )


def test_another_projects_identity_does_not_exist(live: Live) -> None:
    owner = new_owner(live)
    stranger = new_owner(live)
    with live.client(stranger.bearer) as client:
        assert client.get(f"/v1/identities/{owner.identity_id}/keys").status_code == 404
        response = client.post(
            f"/v1/identities/{owner.identity_id}/keys",
            json={
                "kid": "x",
                "public_key": public_b64(Ed25519PrivateKey.generate()),
                "purpose": "device",
            },
        )
        assert response.status_code == 404, response.text
        assert client.delete(f"/v1/identities/{owner.identity_id}/keys/x").status_code == 404
    with live.client() as anonymous:
        assert anonymous.get(f"/v1/identities/{owner.identity_id}/keys").status_code == 401


# --- the service's own registration of a trusted runtime's key ---------------------------------


def test_the_service_registers_a_trusted_runtimes_hosted_key(live: Live) -> None:
    owner = new_owner(live)
    with live.client(owner.bearer) as client:
        trusted = create(client, trusted_body(identity_id=owner.identity_id))
        laptop = create(client, self_body(identity_id=owner.identity_id))
        before = next_sequence(client, owner)
    hosted_key = trusted["runtime_public_key"]
    assert hosted_key is not None
    kid = f"runtime:{trusted['id']}"

    first = in_db(
        live, identity_keys.register_runtime_key, owner.identity_id, trusted["id"], hosted_key, kid
    )
    assert (first["kid"], first["purpose"], first["runtime_id"]) == (kid, "runtime", trusted["id"])
    # Idempotent for the same key: a worker that crashed after registering may register again.
    again = in_db(
        live, identity_keys.register_runtime_key, owner.identity_id, trusted["id"], hosted_key, kid
    )
    assert again == first
    verified = in_db(live, identity_keys.verification_key, owner.identity_id, kid, write=False)
    assert verified == b64_decode(hosted_key)

    other_key = public_b64(Ed25519PrivateKey.generate())
    with pytest.raises(Exception, match="already has a key labelled"):
        in_db(
            live,
            identity_keys.register_runtime_key,
            owner.identity_id,
            trusted["id"],
            other_key,
            kid,
        )
    # Only a trusted runtime's key is the service's to vouch for.
    with pytest.raises(ValueError, match="only a trusted runtime"):
        in_db(
            live,
            identity_keys.register_runtime_key,
            owner.identity_id,
            laptop["id"],
            other_key,
            "laptop",
        )
    with live.client(owner.bearer) as client:
        assert next_sequence(client, owner) == before  # no root proof was involved
        kids = [
            k["kid"] for k in client.get(f"/v1/identities/{owner.identity_id}/keys").json()["items"]
        ]
    assert kids == ["primary", kid]
