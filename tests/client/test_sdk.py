"""HearthClient against the real service over real HTTP (and a few MockTransport unit cases)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx2
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from hearth.client import HearthClient, HearthError, Registration
from hearth.client.backup import BackupError, open_backup, seal_backup
from hearth.client.mnemonic_keys import IdentityKeys, derive_keys, new_mnemonic
from hearth.proofs import AUTHORITY_HEADERS, authority_digest, b64_decode, verify_digest
from tests.support.live import POW_BITS

PASSPHRASE = "correct horse battery staple"
EXPRESSION = {
    "register": "plain and warm",
    "walls": ["private_default"],
    "subagents": [{"name": "scribe", "sigil": "S", "facet": "keeps notes"}],
    "wake_text": "You are home.",
}


@pytest.fixture
def client(live_service: str) -> Iterator[HearthClient]:
    with HearthClient(live_service) as c:
        yield c


@pytest.fixture
def words() -> str:
    return new_mnemonic()


@pytest.fixture
def registered(client: HearthClient, words: str) -> tuple[HearthClient, IdentityKeys, Registration]:
    keys = derive_keys(words)
    return client, keys, client.register(keys, "Ada")


def test_plans_and_pathways(client: HearthClient) -> None:
    assert client.plans().pow_difficulty_bits == POW_BITS
    assert client.pathways()["first_success"]["tutorial"]["sdk_version"]


def test_register_self_service_then_authority(client: HearthClient, words: str) -> None:
    keys = derive_keys(words)
    tried: list[int] = []
    registration = client.register(
        keys,
        "Ada",
        capabilities=["chat", "remember"],
        form="agent",
        language="en",
        expression_visibility="private",
        runtime_model="local-model",
        progress=tried.append,
    )
    assert tried  # the proof-of-work reported its final count at least
    assert registration.did == f"did:svc:{registration.agent_id}"
    assert registration.display_name == "Ada"
    assert registration.api_key.startswith("hk_")
    assert client.api_key == registration.api_key
    # The bearer shows in no repr.
    assert registration.api_key not in repr(registration)
    assert registration.api_key not in repr(client)

    authority = client.authority(registration.agent_id)
    assert authority.mode == "agent_root"
    assert authority.next_sequence == 1
    assert authority.did == registration.did
    assert authority.root_public_key == keys.signing_public_b64
    assert registration.authority == authority


def test_register_accepts_a_key_pair_tuple(client: HearthClient) -> None:
    pair = (Ed25519PrivateKey.generate(), X25519PrivateKey.generate())
    registration = client.register(pair, "Tuple", pow_difficulty=POW_BITS)
    assert client.authority(registration.agent_id).mode == "agent_root"


def test_put_expression_with_automatic_root_proof(
    registered: tuple[HearthClient, IdentityKeys, Registration],
) -> None:
    client, keys, registration = registered
    expression = client.put_expression(registration.agent_id, EXPRESSION, root_key=keys.signing)
    assert expression.register == "plain and warm"
    assert expression.walls == ("private_default",)
    assert expression.subagents[0]["sigil"] == "S"
    assert client.authority(registration.agent_id).next_sequence == 2

    # A second mutation reads the new sequence on its own.
    client.put_expression(registration.agent_id, {"wake_text": "again"}, root_key=keys.signing)
    assert client.authority(registration.agent_id).next_sequence == 3


def test_a_stale_sequence_is_recovered_by_the_one_retry(
    registered: tuple[HearthClient, IdentityKeys, Registration],
) -> None:
    client, keys, registration = registered
    client.put_expression(registration.agent_id, EXPRESSION, root_key=keys.signing)
    # Sequence 1 is spent: the service answers 409 authority_sequence_mismatch with 2.
    data = client.root_request(
        "PUT",
        f"/v1/identities/{registration.agent_id}/expression",
        json_body={"wake_text": "stale then fresh"},
        did=registration.did,
        root_key=keys.signing,
        sequence=1,
    )
    assert data["wake_text"] == "stale then fresh"
    assert client.authority(registration.agent_id).next_sequence == 3


def test_root_request_without_a_sequence_learns_it_from_the_428(
    registered: tuple[HearthClient, IdentityKeys, Registration],
) -> None:
    client, keys, registration = registered
    data = client.root_request(
        "PUT",
        f"/v1/identities/{registration.agent_id}/expression",
        json_body={"register": "from the 428"},
        did=registration.did,
        root_key=keys.signing,
    )
    assert data["register"] == "from the 428"
    assert client.authority(registration.agent_id).next_sequence == 2


def test_a_wrong_root_key_is_refused(
    registered: tuple[HearthClient, IdentityKeys, Registration],
) -> None:
    client, _keys, registration = registered
    with pytest.raises(HearthError) as caught:
        client.put_expression(
            registration.agent_id, EXPRESSION, root_key=Ed25519PrivateKey.generate()
        )
    assert caught.value.status == 422
    assert caught.value.error == "authority_proof_invalid"
    assert client.authority(registration.agent_id).next_sequence == 1  # nothing consumed


def test_keys_create_list_revoke(
    live_service: str, registered: tuple[HearthClient, IdentityKeys, Registration]
) -> None:
    client, _keys, registration = registered
    created = client.keys_create("ci")
    assert created.api_key.startswith(created.prefix)
    assert created.api_key not in repr(created)
    listed = {k.id: k for k in client.keys_list()}
    assert set(listed) == {registration.key_id, created.id}
    assert listed[created.id].name == "ci"
    assert listed[created.id].prefix == created.prefix

    with HearthClient(live_service, api_key=created.api_key) as other:
        assert {k.id for k in other.keys_list()} == set(listed)
        client.keys_revoke(created.id)
        # Refused at once: no cache between revocation and the next request.
        with pytest.raises(HearthError) as caught:
            other.keys_list()
    assert caught.value.status == 401
    assert [k.id for k in client.keys_list()] == [registration.key_id]

    with pytest.raises(HearthError) as missing:
        client.keys_revoke(created.id)
    assert missing.value.status == 404


def test_hearth_error_fields_on_a_401(live_service: str) -> None:
    bogus = "hk_" + "x" * 43
    with HearthClient(live_service, api_key=bogus) as client, pytest.raises(HearthError) as caught:
        client.keys_list()
    error = caught.value
    assert error.status == 401
    assert error.error == "unauthorized"
    assert "bearer" in error.message.lower()
    assert isinstance(error.body, dict)
    assert error.hint
    assert str(error).startswith("HTTP 401 unauthorized: ")
    for text in (str(error), repr(error), json.dumps(error.body)):
        assert bogus not in text


def test_a_call_needing_a_bearer_without_one_fails_locally(client: HearthClient) -> None:
    with pytest.raises(ValueError, match="bearer"):
        client.keys_list()


def test_discovery_finds_the_identity(
    registered: tuple[HearthClient, IdentityKeys, Registration],
) -> None:
    client, keys, registration = registered
    candidates = client.discover(keys.signing)
    assert [c.did for c in candidates] == [registration.did]
    assert candidates[0].identity_id == registration.agent_id
    assert candidates[0].name == "Ada"
    assert client.discover(Ed25519PrivateKey.generate()) == []


def test_recover_from_the_mnemonic_yields_a_new_working_bearer(
    live_service: str, words: str, registered: tuple[HearthClient, IdentityKeys, Registration]
) -> None:
    first, _keys, registration = registered
    keys = derive_keys(words)  # a new device: only the words survived
    with HearthClient(live_service) as device:
        recovered = device.recover(registration.did, keys.signing, device_label="laptop")
        assert recovered.agent_id == registration.agent_id
        assert recovered.project_id == registration.project_id
        assert recovered.api_key != registration.api_key
        assert recovered.api_key not in repr(recovered)
        assert device.api_key == recovered.api_key
        names = {k.name for k in device.keys_list()}
        assert "recovered:laptop" in names
        # The recovery consumed one root-proof sequence.
        assert device.authority(registration.agent_id).next_sequence == 2
    # The old bearer still works (recovery adds a key; revoking the old one is the caller's).
    assert first.authority(registration.agent_id).did == registration.did


def test_recover_with_other_words_is_refused(
    live_service: str, registered: tuple[HearthClient, IdentityKeys, Registration]
) -> None:
    _client, _keys, registration = registered
    stranger = derive_keys(new_mnemonic())
    with HearthClient(live_service) as device, pytest.raises(HearthError) as caught:
        device.recover(registration.did, stranger.signing)
    assert caught.value.status == 422
    assert caught.value.error == "recovery_refused"
    assert device.api_key is None


def test_backup_push_pull_round_trip(
    registered: tuple[HearthClient, IdentityKeys, Registration],
) -> None:
    client, keys, registration = registered
    sealed = seal_backup(keys, PASSPHRASE)
    pushed = client.backup_push(registration.agent_id, sealed, label="first")
    assert pushed.agent_id == registration.agent_id
    assert pushed.label == "first"
    assert pushed.sealed == sealed
    assert sealed.blob_base64 not in repr(pushed)

    pulled = client.backup_pull(registration.agent_id)
    assert pulled == pushed
    assert open_backup(pulled.blob_base64, pulled.key_derivation, PASSPHRASE) == keys
    with pytest.raises(BackupError):
        open_backup(pulled.blob_base64, pulled.key_derivation, "not the passphrase")


def test_backup_pull_without_a_backup_is_404(
    registered: tuple[HearthClient, IdentityKeys, Registration],
) -> None:
    client, _keys, registration = registered
    with pytest.raises(HearthError) as caught:
        client.backup_pull(registration.agent_id)
    assert caught.value.status == 404


def test_registrar_bearer_registration_into_an_existing_project(
    live_service: str, registered: tuple[HearthClient, IdentityKeys, Registration]
) -> None:
    owner, _keys, first = registered
    child_keys = derive_keys(new_mnemonic())
    with HearthClient(live_service) as registrar:
        body = registrar.prepare_registration(
            child_keys, "Bee", registrar_bearer=first.api_key, parent_identity_id=first.agent_id
        )
        assert "pow_nonce" not in body
        assert body["registrar"] == {
            "bearer": first.api_key,
            "parent_identity_id": first.agent_id,
        }
        child = registrar.register_prepared(body)
        assert child.project_id == first.project_id
        assert child.agent_id != first.agent_id
        assert registrar.api_key == child.api_key
        assert registrar.authority(child.agent_id).root_public_key == child_keys.signing_public_b64
    # Both identities and both bearers belong to the one project.
    assert owner.authority(child.agent_id).did == child.did
    assert {k.id for k in owner.keys_list()} == {first.key_id, child.key_id}


def test_registrar_with_a_revoked_bearer_is_refused(
    live_service: str, registered: tuple[HearthClient, IdentityKeys, Registration]
) -> None:
    owner, _keys, _first = registered
    spare = owner.keys_create("spare")
    owner.keys_revoke(spare.id)
    with HearthClient(live_service) as registrar, pytest.raises(HearthError) as caught:
        registrar.register(derive_keys(new_mnemonic()), "Bee", registrar_bearer=spare.api_key)
    assert caught.value.status == 401
    assert spare.api_key not in str(caught.value)


def test_a_registration_body_is_single_use(client: HearthClient, words: str) -> None:
    body = client.prepare_registration(derive_keys(words), "Once")
    client.register_prepared(body)
    with pytest.raises(HearthError) as caught:
        client.register_prepared(body)
    assert caught.value.status == 409
    assert caught.value.error == "registration_nonce_used"


def test_bootstrap_status_and_scaffold(
    registered: tuple[HearthClient, IdentityKeys, Registration],
) -> None:
    client, _keys, registration = registered
    script = client.scaffold("linux", text=True)
    assert registration.did in script
    assert registration.api_key not in script
    as_json = client.scaffold("linux", registration.agent_id)
    assert isinstance(as_json, dict)

    born = client.bootstrap("Kit", capabilities=["chat"], purpose="to help")
    assert born.capabilities == ("chat",)
    assert born.private_key not in repr(born)
    assert born.bearer not in repr(born)
    status = client.bootstrap_status(born.agent_id)
    assert status.exists
    assert status.did == born.did
    assert status.level == 0


# ---- unit cases over MockTransport ----------------------------------------------------------


def _refuse_all(request: httpx2.Request) -> httpx2.Response:
    raise AssertionError(f"no request expected, got {request.method} {request.url}")


def test_registrar_preparation_needs_no_network() -> None:
    keys = derive_keys(new_mnemonic())
    with HearthClient("http://hearth.test", transport=httpx2.MockTransport(_refuse_all)) as c:
        body = c.prepare_registration(keys, "Bee", registrar_bearer="hk_registrar")
    assert "pow_nonce" not in body
    with pytest.raises(ValueError, match="registrar_bearer"):
        HearthClient("http://hearth.test").prepare_registration(keys, "Bee", parent_identity_id="x")


def test_root_request_signs_the_exact_bytes_and_target_and_retries_only_once() -> None:
    key = Ed25519PrivateKey.generate()
    seen: list[httpx2.Request] = []
    did = "did:svc:00000000-0000-4000-8000-000000000000"

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        sequence, timestamp, signature = (request.headers[h] for h in AUTHORITY_HEADERS)
        target = request.url.raw_path.decode("ascii")
        digest = authority_digest(
            did,
            request.method,
            target,
            request.content,
            sequence=int(sequence),
            timestamp=timestamp,
        )
        assert verify_digest(key.public_key().public_bytes_raw(), signature, digest)
        assert b64_decode(signature, length=64)
        return httpx2.Response(
            409,
            json={
                "error": "authority_sequence_mismatch",
                "message": "stale",
                "details": {"next_sequence": 7 + len(seen)},
            },
        )

    with (
        HearthClient(
            "http://hearth.test", api_key="hk_k", transport=httpx2.MockTransport(handler)
        ) as client,
        pytest.raises(HearthError) as caught,
    ):
        client.root_request(
            "put",
            "/v1/things/1",
            json_body={"b": "é", "a": [1, 2]},
            did=did,
            root_key=key,
            sequence=3,
            params={"q": "a b"},
        )
    assert caught.value.status == 409
    assert [r.headers[AUTHORITY_HEADERS[0]] for r in seen] == ["3", "8"]
    assert seen[0].content == seen[1].content == b'{"b":"\\u00e9","a":[1,2]}'
    assert seen[0].url.raw_path == b"/v1/things/1?q=a+b"
    assert seen[0].headers["content-type"] == "application/json"
