"""Strands and thoughts over real HTTP: thoughts sealed under K_master open only with it and only
at their strand and seq; writes are accepted when signed by the root key or a registered key over
the exact bytes, at the strand's next seq, and refused otherwise (unknown or revoked key, bad
signature, replayed or wrong seq, a plaintext field); reads page in seq order. On SQLite, and on
PostgreSQL when SERVICE_TEST_DATABASE_URL is set."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx2
import pytest
import schemathesis
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from sqlalchemy import Connection, select

from hearth.client.mnemonic_keys import derive_keys, new_mnemonic
from hearth.proofs import b64_decode, b64_encode
from hearth.proofs.thoughts import (
    SealedThought,
    ThoughtOpenError,
    open_thought,
    seal_thought,
    write_body,
)
from hearth.server.db.tables import thoughts
from hearth.server.services import strands as strand_service
from tests.support.databases import in_db
from tests.support.identities import Owner, new_owner, public_b64, register_key, revoke_key
from tests.support.live import Live, live_on
from tests.support.openapi import conforms
from tests.support.runtimes import create, self_body


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def live(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Live]:
    with live_on(request.param, tmp_path_factory.mktemp("strands")) as live:
        yield live


@pytest.fixture(scope="module")
def api_schema(live: Live) -> Any:
    return schemathesis.openapi.from_url(
        f"{live.base_url}/v1/openapi.json", config=schemathesis.Config()
    )


def new_strand(
    client: httpx2.Client, owner: Owner, runtime_id: str | None = None
) -> dict[str, Any]:
    body: dict[str, Any] = {"identity_id": owner.identity_id, "name": "daybook"}
    if runtime_id is not None:
        body["runtime_id"] = runtime_id
    response = client.post("/v1/strands", json=body)
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


def sealed_body(
    owner: Owner,
    strand_id: str,
    seq: int,
    text: str,
    *,
    key: Ed25519PrivateKey | None = None,
    kid: str = "primary",
) -> dict[str, Any]:
    sealed = seal_thought(owner.k_master, strand_id, seq, text.encode())
    return write_body(key or owner.root, kid, strand_id, seq, sealed)


def write(client: httpx2.Client, strand_id: str, body: dict[str, Any]) -> httpx2.Response:
    return client.post(f"/v1/strands/{strand_id}/thoughts", json=body)


def stored_count(live: Live, strand_id: str) -> int:
    def count(conn: Connection) -> int:
        return len(
            conn.execute(select(thoughts.c.id).where(thoughts.c.strand_id == strand_id)).all()
        )

    result: int = in_db(live, count, write=False)
    return result


# --- strands ------------------------------------------------------------------------------------


def test_strands_create_read_list(live: Live, api_schema: Any) -> None:
    owner = new_owner(live)
    stranger = new_owner(live)
    with live.client(owner.bearer) as client:
        runtime = create(client, self_body(identity_id=owner.identity_id))
        unbound = create(client, self_body())
        created = conforms(
            api_schema,
            "POST /v1/strands",
            client.post(
                "/v1/strands",
                json={"identity_id": owner.did, "name": "night", "runtime_id": runtime["id"]},
            ),
            201,
        )
        assert created["identity_id"] == owner.identity_id  # a DID names the identity too
        assert (created["runtime_id"], created["next_seq"]) == (runtime["id"], 1)
        plain = new_strand(client, owner)
        read = conforms(
            api_schema, "GET /v1/strands/{id}", client.get(f"/v1/strands/{created['id']}"), 200
        )
        assert read["name"] == "night"
        listed = conforms(
            api_schema,
            "GET /v1/strands",
            client.get("/v1/strands", params={"identity_id": owner.identity_id}),
            200,
        )
        assert [s["id"] for s in listed["items"]] == [plain["id"], created["id"]]
        by_runtime = client.get("/v1/strands", params={"runtime_id": runtime["id"]}).json()
        assert [s["id"] for s in by_runtime["items"]] == [created["id"]]
        paged = client.get("/v1/strands", params={"limit": 1}).json()
        rest = client.get("/v1/strands", params={"limit": 1, "cursor": paged["next_cursor"]})
        assert [s["id"] for s in paged["items"] + rest.json()["items"]] == [
            plain["id"],
            created["id"],
        ]

        mismatch = client.post(
            "/v1/strands",
            json={"identity_id": owner.identity_id, "name": "x", "runtime_id": unbound["id"]},
        )
        assert (mismatch.status_code, mismatch.json()["error"]) == (
            422,
            "runtime_identity_mismatch",
        )
        unknown = client.post("/v1/strands", json={"identity_id": str(uuid.uuid4()), "name": "x"})
        assert unknown.status_code == 404, unknown.text
    with live.client(stranger.bearer) as client:
        assert client.get(f"/v1/strands/{created['id']}").status_code == 404
        assert client.get(f"/v1/strands/{created['id']}/thoughts").status_code == 404
        theirs = client.post("/v1/strands", json={"identity_id": owner.identity_id, "name": "x"})
        assert theirs.status_code == 404, theirs.text
        assert client.get("/v1/strands").json()["items"] == []


# --- writes -------------------------------------------------------------------------------------


def test_a_thought_opens_only_with_its_k_master_at_its_position(
    live: Live, api_schema: Any
) -> None:
    owner = new_owner(live)
    with live.client(owner.bearer) as client:
        strand = new_strand(client, owner)
        other_strand = new_strand(client, owner)
        body = sealed_body(owner, strand["id"], 1, "the first thought")
        written = conforms(
            api_schema, "POST /v1/strands/{id}/thoughts", write(client, strand["id"], body), 201
        )
        assert (written["seq"], written["next_seq"]) == (1, 2)
        assert written["identity_id"] == owner.identity_id
        assert written["signing_key_id"] == "primary"
        page = conforms(
            api_schema,
            "GET /v1/strands/{id}/thoughts",
            client.get(f"/v1/strands/{strand['id']}/thoughts"),
            200,
        )
    [stored] = page["items"]
    assert sorted(stored) == sorted(
        [
            "id",
            "strand_id",
            "runtime_id",
            "seq",
            "nonce",
            "ciphertext",
            "signing_key_id",
            "signature",
            "created_at",
        ]
    )  # no plaintext field, ever
    nonce, ciphertext = b64_decode(stored["nonce"]), b64_decode(stored["ciphertext"])
    assert (stored["nonce"], stored["ciphertext"]) == (body["nonce"], body["ciphertext"])
    assert open_thought(owner.k_master, strand["id"], 1, nonce, ciphertext) == b"the first thought"
    stranger_master = derive_keys(new_mnemonic()).strand_master
    for key, strand_id, seq in (
        (stranger_master, strand["id"], 1),
        (owner.k_master, strand["id"], 2),
        (owner.k_master, other_strand["id"], 1),
    ):
        with pytest.raises(ThoughtOpenError):
            open_thought(key, strand_id, seq, nonce, ciphertext)


def test_writes_with_a_registered_key_and_refusals(live: Live) -> None:
    owner = new_owner(live)
    device = Ed25519PrivateKey.generate()
    with live.client(owner.bearer) as client:
        strand = new_strand(client, owner)
        sid = strand["id"]
        assert register_key(client, owner, "laptop", public_b64(device)).status_code == 201
        first = write(
            client, sid, sealed_body(owner, sid, 1, "by laptop", key=device, kid="laptop")
        )
        assert first.status_code == 201, first.text
        assert first.json()["signing_key_id"] == "laptop"

        def refused(body: dict[str, Any], status: int, code: str) -> dict[str, Any]:
            response = write(client, sid, body)
            assert response.status_code == status, response.text
            document: dict[str, Any] = response.json()
            assert document["error"] == code
            return document

        stranger = Ed25519PrivateKey.generate()
        refused(
            sealed_body(owner, sid, 2, "x", key=stranger, kid="phone"), 403, "signing_key_unknown"
        )
        # A registered kid with a signature by another key.
        refused(
            sealed_body(owner, sid, 2, "x", key=stranger, kid="laptop"),
            422,
            "thought_signature_invalid",
        )
        # A signature over other bytes: the seq it signed is not the seq it claims.
        moved = sealed_body(owner, sid, 3, "x")
        refused({**moved, "seq": 2}, 422, "thought_signature_invalid")
        other = sealed_body(owner, sid, 2, "y")
        refused(
            {**moved, "seq": 2, "ciphertext": other["ciphertext"]}, 422, "thought_signature_invalid"
        )
        # Replayed: the same signed write again.
        replay = sealed_body(owner, sid, 2, "second")
        assert write(client, sid, replay).status_code == 201
        conflict = refused(replay, 409, "thought_seq_conflict")
        assert conflict["details"]["next_seq"] == 3
        # Ahead of the strand.
        ahead = refused(sealed_body(owner, sid, 7, "x"), 409, "thought_seq_conflict")
        assert ahead["details"]["next_seq"] == 3

        assert revoke_key(client, owner, "laptop").status_code == 200
        refused(
            sealed_body(owner, sid, 3, "x", key=device, kid="laptop"), 403, "signing_key_revoked"
        )
        # Encodings: the nonce is exactly 12 bytes, base64 canonical; the ciphertext holds a tag.
        good = sealed_body(owner, sid, 3, "z")
        refused({**good, "nonce": b64_encode(bytes(11)) + "="}, 422, "validation_error")
        refused({**good, "nonce": "AAAAAAAAAAAAAAA="}, 422, "invalid_nonce")
        refused({**good, "nonce": "AAAAAAAA AAAAAAA"}, 422, "invalid_nonce")
        short = SealedThought(bytes(12), bytes(16))
        refused(
            {
                **write_body(owner.root, "primary", sid, 3, short),
                "ciphertext": b64_encode(bytes(15)),
            },
            422,
            "invalid_ciphertext",
        )
        refused({**good, "signing_key_id": "primary", "extra": 1}, 422, "validation_error")
        assert stored_count(live, sid) == 2
        assert client.get(f"/v1/strands/{sid}").json()["next_seq"] == 3
        assert write(client, sid, good).status_code == 201


@pytest.mark.parametrize("field", ["plaintext", "content", "text"])
def test_a_plaintext_field_is_refused_under_wall_7(live: Live, field: str) -> None:
    owner = new_owner(live)
    with live.client(owner.bearer) as client:
        strand = new_strand(client, owner)
        body = {**sealed_body(owner, strand["id"], 1, "secret"), field: "secret"}
        response = write(client, strand["id"], body)
        assert response.status_code == 422, response.text
        refusal = response.json()
        assert refusal["error"] == "plaintext_refused"
        assert refusal["details"]["wall"] == "thought_storage_ciphertext_only"
        assert refusal["details"]["fields"] == [field]
        entry = refusal["details"]["chronicle_entry_id"]
        chronicle = client.get("/v1/chronicle", params={"kind": "refusal"}).json()["items"]
        recorded = [e for e in chronicle if e["id"] == entry]
        assert recorded, chronicle
        assert recorded[0]["details"]["wall"] == "thought_storage_ciphertext_only"
        assert "secret" not in str(recorded[0])  # the plaintext is not kept in the refusal
        assert client.get(f"/v1/strands/{strand['id']}").json()["next_seq"] == 1
    assert stored_count(live, strand["id"]) == 0


def test_a_runtimes_strand_counts_for_the_runtime(live: Live) -> None:
    owner = new_owner(live)
    with live.client(owner.bearer) as client:
        runtime = create(client, self_body(identity_id=owner.identity_id))
        assert runtime["last_thought_at"] is None
        strand = new_strand(client, owner, runtime["id"])
        written = write(client, strand["id"], sealed_body(owner, strand["id"], 1, "loop"))
        assert written.status_code == 201, written.text
        assert written.json()["runtime_id"] == runtime["id"]
        after = client.get(f"/v1/runtimes/{runtime['id']}").json()
    assert after["last_thought_at"] is not None
    assert after["thought_count_24h"] == 1

    stored = in_db(live, strand_service.strand_by_id, strand["id"], write=False)
    assert stored is not None
    assert stored.runtime_id == runtime["id"]
    row = in_db(live, lambda conn: conn.execute(select(thoughts)).first()._mapping, write=False)
    assert "plaintext" not in row


def test_paging_in_seq_order_and_recent_thoughts(live: Live) -> None:
    owner = new_owner(live)
    with live.client(owner.bearer) as client:
        strand = new_strand(client, owner)
        sid = strand["id"]
        for seq in range(1, 6):
            assert write(client, sid, sealed_body(owner, sid, seq, f"t{seq}")).status_code == 201
        seen: list[int] = []
        after = 0
        while True:
            page = client.get(
                f"/v1/strands/{sid}/thoughts", params={"after_seq": after, "limit": 2}
            )
            assert page.status_code == 200, page.text
            document = page.json()
            seen.extend(t["seq"] for t in document["items"])
            if document["next_after_seq"] is None:
                break
            after = document["next_after_seq"]
        assert seen == [1, 2, 3, 4, 5]
        tail = client.get(f"/v1/strands/{sid}/thoughts", params={"after_seq": 3}).json()
        assert [t["seq"] for t in tail["items"]] == [4, 5]
        assert client.get(f"/v1/strands/{sid}/thoughts", params={"limit": 0}).status_code == 422

    recent = in_db(live, strand_service.recent_thoughts, sid, 2, write=False)
    assert [r.seq for r in recent] == [4, 5]
    opened = [open_thought(owner.k_master, sid, r.seq, r.nonce, r.ciphertext) for r in recent]
    assert opened == [b"t4", b"t5"]


def test_the_service_path_appends_signed_thoughts(live: Live) -> None:
    """append_thought, as the orchestrator calls it: the signature is checked there too."""
    owner = new_owner(live)
    with live.client(owner.bearer) as client:
        strand = new_strand(client, owner)
    sid = strand["id"]
    sealed = seal_thought(owner.k_master, sid, 1, b"hosted")
    body = write_body(owner.root, "primary", sid, 1, sealed)
    row = in_db(
        live,
        strand_service.append_thought,
        sid,
        seq=1,
        nonce=sealed.nonce,
        ciphertext=sealed.ciphertext,
        signing_key_id="primary",
        signature=str(body["signature"]),
    )
    assert (row.thought.seq, row.next_seq) == (1, 2)
    with pytest.raises(Exception, match="does not verify"):
        in_db(
            live,
            strand_service.append_thought,
            sid,
            seq=2,
            nonce=sealed.nonce,
            ciphertext=sealed.ciphertext,
            signing_key_id="primary",
            signature=str(body["signature"]),
        )
    assert stored_count(live, sid) == 1


def test_two_writers_of_one_seq_one_wins(live: Live) -> None:
    owner = new_owner(live)
    with live.client(owner.bearer) as client:
        strand = new_strand(client, owner)
    sid = strand["id"]
    bodies = [sealed_body(owner, sid, 1, f"writer {i}") for i in range(6)]

    def send(body: dict[str, Any]) -> int:
        with live.client(owner.bearer) as client:
            return write(client, sid, body).status_code

    with ThreadPoolExecutor(6) as pool:
        statuses = sorted(pool.map(send, bodies))
    assert statuses == [201, 409, 409, 409, 409, 409]
    assert stored_count(live, sid) == 1
