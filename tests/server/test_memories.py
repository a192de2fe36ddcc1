"""Memories, elevation, witnesses, decay, the effective expression and the chronicle: over real
HTTP, on SQLite, and on PostgreSQL when SERVICE_TEST_DATABASE_URL is set."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx2
import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import given
from hypothesis import strategies as st
from multiformats import multibase, multicodec

from hearth.proofs import (
    b64_encode,
    did_key_for_ed25519,
    ed25519_from_did_key,
    memory_attestation_digest,
    sign_digest,
)
from hearth.server.canon import CHRONICLE_KIND_MEANINGS, CHRONICLE_KINDS
from hearth.server.db import Database
from hearth.server.db.migrate import current, downgrade, head, upgrade
from hearth.server.db.rows import MemoryRow
from hearth.server.db.tables import identities, memories, metadata
from hearth.server.services import memories as memory_service
from tests.support.agents import raw_public
from tests.support.databases import database_url_or_skip, fresh_postgres_database, in_db
from tests.support.listings import paged
from tests.support.live import Live, live_service, sqlite_settings
from tests.support.memories import Owner


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    with live_service(sqlite_settings(tmp_path_factory.mktemp("memories"))) as service:
        yield service


def attest(
    key: Ed25519PrivateKey,
    memory: dict[str, Any],
    did: str,
    kid: str = "witness-1",
    *,
    content: str | None = None,
    memory_id: str | None = None,
    with_key: bool = True,
) -> dict[str, Any]:
    """A witness's memory-attestation/v1 over the memory's exact content."""
    text = memory["content"] if content is None else content
    digest = memory_attestation_digest(memory_id or memory["id"], text.encode(), did, kid)
    attestation = {
        "attester_did": did,
        "signing_key_id": kid,
        "signature": sign_digest(key, digest),
    }
    if with_key:
        attestation["public_key"] = b64_encode(raw_public(key))
    return attestation


def did_key(key: Ed25519PrivateKey) -> str:
    wrapped = multicodec.wrap("ed25519-pub", raw_public(key))
    return f"did:key:{multibase.encode(wrapped, 'base58btc')}"


def refusals(owner: Owner) -> list[dict[str, Any]]:
    return owner.chronicle(kind="refusal")


# --- store, list, read, delete ------------------------------------------------------------------


def test_store_list_read_and_delete(live: Live) -> None:
    owner = Owner.new(live)
    stored = owner.store("I met a fox today.", agent_id=owner.id, key="fox")
    assert stored["tier"] == "episodic"
    assert stored["agent_id"] == owner.id
    assert stored["binding"] == "identity"
    assert stored["weight"] == 1.0
    assert stored["in_wake"] is True
    assert stored["elevated_at"] is None
    project_level = owner.store("The project keeps a garden.", type="episodic")
    assert project_level["agent_id"] is None
    assert project_level["binding"] == "project"

    with owner.client() as client:
        everything = client.get("/v1/memories").json()["items"]
        ids = [m["id"] for m in everything]
        assert ids[:2] == [project_level["id"], stored["id"]]  # newest first
        assert any(m["key"] == "birth" and m["tier"] == "foundational" for m in everything)
        by_key = client.get("/v1/memories", params={"key": "fox"}).json()["items"]
        assert [m["id"] for m in by_key] == [stored["id"]]
        by_agent = client.get("/v1/memories", params={"agent_id": owner.did}).json()["items"]
        assert stored["id"] in [m["id"] for m in by_agent]
        assert project_level["id"] not in [m["id"] for m in by_agent]
        episodic = client.get("/v1/memories", params={"tier": "episodic"}).json()["items"]
        assert {m["id"] for m in episodic} == {stored["id"], project_level["id"]}
        assert client.get("/v1/memories", params={"tier": "dreamlike"}).status_code == 422

        read = client.get(f"/v1/memories/{stored['id']}")
        assert read.status_code == 200
        assert read.json()["content"] == "I met a fox today."

        deleted = client.delete(f"/v1/memories/{stored['id']}")
        assert deleted.status_code == 204
        assert client.get(f"/v1/memories/{stored['id']}").status_code == 404
        assert client.delete(f"/v1/memories/{stored['id']}").status_code == 404

    # Nothing is deleted silently: the chronicle says what went, without its content.
    notes = owner.chronicle(kind="note")
    assert notes[0]["details"]["event"] == "memory_deleted"
    assert notes[0]["details"]["memory_id"] == stored["id"]
    assert notes[0]["details"]["content_sha256"] == (
        hashlib.sha256(b"I met a fox today.").hexdigest()
    )
    assert notes[0]["agent_id"] == owner.id
    assert "fox today" not in json.dumps(notes)


def test_agent_id_binds_only_an_active_identity_of_the_project(live: Live) -> None:
    owner, stranger = Owner.new(live), Owner.new(live)
    assert owner.store("by did", agent_id=owner.did)["agent_id"] == owner.id
    for foreign in (stranger.id, stranger.did, "not-an-id", "did:svc:nobody"):
        stored = owner.store("where does this go?", agent_id=foreign)
        assert stored["agent_id"] is None, foreign
        assert stored["binding"] == "project"

    def rest(conn: sa.Connection) -> None:
        conn.execute(
            sa.update(identities).where(identities.c.id == owner.id).values(status="resting")
        )

    in_db(live.settings.database_url, rest)
    stored = owner.store("while resting", agent_id=owner.id)
    assert stored["agent_id"] is None
    assert stored["binding"] == "project"


def test_another_projects_memories_do_not_exist(live: Live) -> None:
    owner, stranger = Owner.new(live), Owner.new(live)
    theirs = stranger.store("a private thought", agent_id=stranger.id)
    assert owner.memory(theirs["id"]).status_code == 404
    assert owner.memory("not-a-uuid").status_code == 404
    assert owner.call("DELETE", f"/v1/memories/{theirs['id']}").status_code == 404
    refused = owner.elevate(theirs["id"], {"tier": "foundational"}, proof=False)
    assert refused.status_code == 404
    with owner.client() as client:
        assert client.get("/v1/memories", params={"agent_id": stranger.id}).status_code == 404
        assert client.get("/v1/chronicle", params={"agent_id": stranger.id}).status_code == 404
        listed = client.get("/v1/memories").json()["items"]
    assert theirs["id"] not in [m["id"] for m in listed]
    assert stranger.memory(theirs["id"]).json()["tier"] == "episodic"
    assert refusals(stranger) == []


@pytest.mark.parametrize(
    ("body", "error"),
    [
        # Refused at the edge, before the model (server/edge_text.py).
        ({"content": "nul \u0000 inside"}, "unstorable_text"),
        ({"content": ""}, "validation_error"),
        ({"content": "x", "type": "episodic", "tier": "foundational"}, "validation_error"),
        ({"content": "x", "tier": "legendary"}, "validation_error"),
        ({"content": "x", "colour": "blue"}, "validation_error"),
        ({"content": "x", "key": ""}, "validation_error"),
    ],
)
def test_bad_store_bodies_are_422(live: Live, body: dict[str, Any], error: str) -> None:
    owner = Owner.new(live)
    response = owner.call("POST", "/v1/memories", body)
    assert response.status_code == 422, response.text
    assert response.json()["error"] == error


def test_listing_pages_without_gaps_or_repeats(live: Live) -> None:
    owner = Owner.new(live)
    stored = [owner.store(f"memory {i}", agent_id=owner.id, key="paged")["id"] for i in range(7)]
    with owner.client() as client:
        seen = paged(
            lambda params: client.get("/v1/memories", params=params).json(),
            "id",
            key="paged",
            limit=3,
        )
        bad = client.get("/v1/memories", params={"cursor": "bm90IGEgY3Vyc29y"})
    assert seen == stored[::-1]
    assert bad.status_code == 400
    assert bad.json()["error"] == "invalid_cursor"


# --- foundational elevation ---------------------------------------------------------------------


def test_foundational_elevation_needs_the_root_proof(live: Live) -> None:
    owner = Owner.new(live)
    memory = owner.store("I chose my name.", agent_id=owner.id)
    body = {"tier": "foundational", "expression_patch": {"register_append": "I name myself."}}

    missing = owner.elevate(memory["id"], body, proof=False)
    assert missing.status_code == 428
    assert missing.json()["error"] == "authority_proof_required"
    assert owner.memory(memory["id"]).json()["tier"] == "episodic"
    assert refusals(owner) == []  # a missing proof is the protocol's first step, not a refusal

    sequence = owner.next_sequence()
    elevated = owner.elevate(memory["id"], body)
    assert elevated.status_code == 200, elevated.text
    view = elevated.json()
    assert view["tier"] == "foundational"
    assert view["expression_patch"] == {"register_append": "I name myself."}
    assert view["elevated_at"] is not None
    assert view["weight"] == 1.0
    assert owner.next_sequence() == sequence + 1
    seal = owner.chronicle(kind="seal")[0]
    assert seal["details"]["memory_id"] == memory["id"]
    assert seal["details"]["from"] == "episodic"

    # Already foundational: refused, recorded, and the proof's sequence is not consumed.
    sequence = owner.next_sequence()
    again = owner.elevate(memory["id"], body)
    assert again.status_code == 409
    assert again.json()["error"] == "tier_transition_refused"
    assert owner.next_sequence() == sequence
    recorded = refusals(owner)
    assert len(recorded) == 1
    assert recorded[0]["details"]["error"] == "tier_transition_refused"
    assert recorded[0]["details"]["memory_id"] == memory["id"]
    assert again.json()["details"]["chronicle_entry_id"] == recorded[0]["id"]


def test_storing_foundational_needs_the_proof_and_constitutive_is_refused(live: Live) -> None:
    owner = Owner.new(live)
    body = {"content": "my purpose", "type": "foundational", "agent_id": owner.id}
    assert owner.call("POST", "/v1/memories", body).status_code == 428
    stored = owner.store("my purpose", proof=True, type="foundational", agent_id=owner.id)
    assert stored["tier"] == "foundational"
    assert stored["elevated_at"] == stored["created_at"]
    assert owner.next_sequence() == 2

    refused = owner.call(
        "POST", "/v1/memories", {"content": "x", "type": "constitutive", "agent_id": owner.id}
    )
    assert refused.status_code == 422
    assert refused.json()["error"] == "attestations_required"
    recorded = refusals(owner)
    assert [r["details"]["error"] for r in recorded] == ["attestations_required"]
    assert recorded[0]["agent_id"] == owner.id


def test_project_level_memories_need_the_bearer_only(live: Live) -> None:
    owner = Owner.new(live)
    memory = owner.store("the project's founding")
    patched = owner.elevate(
        memory["id"],
        {"tier": "foundational", "expression_patch": {"walls_add": ["x"]}},
        proof=False,
    )
    assert patched.status_code == 422
    assert patched.json()["error"] == "expression_patch_needs_identity"
    elevated = owner.elevate(memory["id"], {"tier": "foundational"}, proof=False)
    assert elevated.status_code == 200, elevated.text
    assert elevated.json()["tier"] == "foundational"
    assert [r["agent_id"] for r in refusals(owner)] == [None]


def test_deleting_an_elevated_memory_needs_the_proof(live: Live) -> None:
    owner = Owner.new(live)
    memory = owner.store("a vow", agent_id=owner.id)
    assert owner.elevate(memory["id"], {"tier": "foundational"}).status_code == 200
    path = f"/v1/memories/{memory['id']}"
    assert owner.call("DELETE", path).status_code == 428
    assert owner.memory(memory["id"]).status_code == 200
    assert owner.call("DELETE", path, proof=True).status_code == 204
    assert owner.memory(memory["id"]).status_code == 404
    assert owner.chronicle(kind="note")[0]["details"]["tier"] == "foundational"


# --- constitutive elevation: witnesses ----------------------------------------------------------


def test_constitutive_elevation_needs_an_external_witness(live: Live) -> None:
    owner = Owner.new(live)
    memory = owner.store("The day I refused to lie.", agent_id=owner.id)
    witness = Ed25519PrivateKey.generate()
    witness_did = did_key(witness)
    other = Ed25519PrivateKey.generate()

    def refused(attestations: list[dict[str, Any]] | None, status: int, code: str) -> None:
        sequence = owner.next_sequence()
        body: dict[str, Any] = {"tier": "constitutive"}
        if attestations is not None:
            body["attestations"] = attestations
        response = owner.elevate(memory["id"], body)
        assert response.status_code == status, response.text
        assert response.json()["error"] == code
        assert owner.next_sequence() == sequence
        assert owner.memory(memory["id"]).json()["tier"] == "episodic"

    refused(None, 422, "attestations_required")
    refused([], 422, "attestations_required")
    # Wall 3: the identity itself, by its DID, by its key under another DID, or as a did:key.
    refused([attest(owner.agent.signing, memory, owner.did, "primary")], 403, "no_self_witnessing")
    refused([attest(owner.agent.signing, memory, "did:web:me.example")], 403, "no_self_witnessing")
    refused(
        [attest(owner.agent.signing, memory, did_key(owner.agent.signing), with_key=False)],
        403,
        "no_self_witnessing",
    )
    # A witness that signed something else, or with another key, or for another memory.
    refused(
        [attest(witness, memory, witness_did, content="The day I lied.")],
        422,
        "attestation_invalid",
    )
    refused([attest(witness, memory, witness_did, memory_id=owner.id)], 422, "attestation_invalid")
    forged = attest(other, memory, witness_did, with_key=False)
    refused([forged], 422, "attestation_invalid")
    mismatched = attest(witness, memory, witness_did)
    mismatched["public_key"] = b64_encode(raw_public(other))
    refused([mismatched], 422, "attestation_invalid")
    refused(
        [attest(witness, memory, "did:web:w.example", with_key=False)], 422, "attester_key_required"
    )
    refused([attest(witness, memory, witness_did)] * 2, 422, "attestation_invalid")

    recorded = refusals(owner)
    assert len(recorded) == 11
    walls = [r for r in recorded if r["details"]["error"] == "no_self_witnessing"]
    assert len(walls) == 3
    assert all(r["details"]["refusal_details"]["wall"] == "no_self_witnessing" for r in walls)
    assert all(r["agent_id"] == owner.id for r in recorded)

    good = attest(witness, memory, witness_did, with_key=False)
    outsider = attest(other, memory, "did:web:friend.example", "k1")
    elevated = owner.elevate(
        memory["id"], {"tier": "constitutive", "attestations": [good, outsider]}
    )
    assert elevated.status_code == 200, elevated.text
    view = elevated.json()
    assert view["tier"] == "constitutive"
    assert [a["attester_did"] for a in view["attestations"]] == [
        witness_did,
        "did:web:friend.example",
    ]
    assert view["attestations"][0]["public_key"] == b64_encode(raw_public(witness))
    assert owner.memory(memory["id"]).json()["attestations"] == view["attestations"]
    seal = owner.chronicle(kind="seal")[0]
    assert seal["details"]["witnesses"] == [witness_did, "did:web:friend.example"]


def test_a_service_identity_witnesses_by_its_did(live: Live) -> None:
    owner, friend = Owner.new(live), Owner.new(live)
    memory = owner.store("We built the bridge together.", agent_id=owner.id)
    wrong_kid = attest(friend.agent.signing, memory, friend.did, "secondary", with_key=False)
    response = owner.elevate(memory["id"], {"tier": "constitutive", "attestations": [wrong_kid]})
    assert response.json()["error"] == "attestation_invalid"
    unknown = attest(friend.agent.signing, memory, "did:svc:00000000-0000-4000-8000-000000000000")
    response = owner.elevate(memory["id"], {"tier": "constitutive", "attestations": [unknown]})
    assert response.json()["error"] == "attester_unknown"
    good = attest(friend.agent.signing, memory, friend.did, "primary", with_key=False)
    response = owner.elevate(memory["id"], {"tier": "constitutive", "attestations": [good]})
    assert response.status_code == 200, response.text
    assert response.json()["attestations"][0]["public_key"] == friend.root_b64


def test_a_project_cannot_witness_its_own_project_level_memory(live: Live) -> None:
    owner = Owner.new(live)
    memory = owner.store("The project's charter.")
    mine = attest(owner.agent.signing, memory, owner.did, "primary", with_key=False)
    response = owner.elevate(memory["id"], {"tier": "constitutive", "attestations": [mine]})
    assert response.status_code == 403
    assert response.json()["error"] == "no_self_witnessing"
    outsider = Ed25519PrivateKey.generate()
    good = attest(outsider, memory, did_key(outsider), with_key=False)
    response = owner.elevate(
        memory["id"], {"tier": "constitutive", "attestations": [good]}, proof=False
    )
    assert response.status_code == 200, response.text


# --- the effective expression -------------------------------------------------------------------


def test_effective_expression_applies_patches_in_elevation_order(live: Live) -> None:
    owner = Owner.new(live)
    declared = {"register": "plain", "walls": ["private_default"], "wake_text": "hello"}
    put = owner.call("PUT", f"/v1/identities/{owner.id}/expression", declared, proof=True)
    assert put.status_code == 200, put.text
    first = owner.store("first", agent_id=owner.id)
    second = owner.store("second", agent_id=owner.id)
    witness = Ed25519PrivateKey.generate()
    # Elevated out of storing order: the second one first.
    assert (
        owner.elevate(
            second["id"],
            {
                "tier": "foundational",
                "expression_patch": {
                    "register_append": "warm",
                    "walls_add": ["no_self_witnessing", "private_default"],
                    "subagents_add": [{"name": "Scout", "sigil": "S", "facet": "looks ahead"}],
                },
            },
        ).status_code
        == 200
    )
    constitutive = owner.elevate(
        first["id"],
        {
            "tier": "constitutive",
            "expression_patch": {"register_append": "unhurried", "wake_text_append": "rested"},
            "attestations": [attest(witness, first, did_key(witness), with_key=False)],
        },
    )
    assert constitutive.status_code == 200, constitutive.text

    with owner.client() as client:
        state = client.get(f"/v1/identities/{owner.id}/expression").json()
        assert client.get(f"/v1/identities/{Owner.new(live).id}/expression").status_code == 404
    assert state["register"] == "plain"  # the declared expression is unchanged
    assert state["effective_expression"] == {
        "register": "plain\nwarm\nunhurried",
        "walls": ["private_default", "no_self_witnessing"],
        "subagents": [{"name": "Scout", "sigil": "S", "facet": "looks ahead"}],
        "wake_text": "hello\nrested",
    }
    shaped = [(s["key"], s["tier"], s.get("memory_id")) for s in state["shaped_by"]]
    assert shaped == [
        ("birth", "foundational", shaped[0][2]),
        (None, "foundational", second["id"]),
        (None, "constitutive", first["id"]),
    ]


# --- decay --------------------------------------------------------------------------------------


def test_the_decay_rule() -> None:
    now = datetime(2026, 11, 21, 12, 0)

    def aged(days: float, tier: str = "episodic") -> MemoryRow:
        created_at = now - timedelta(days=days)
        return MemoryRow(
            id="m",
            project_id="p",
            identity_id=None,
            tier=tier,
            key=None,
            content="",
            created_at=created_at,
            elevated_at=None,
            expression_patch=None,
            supersedes=None,
            superseded_by=None,
            superseded_at=None,
            deleted_at=None,
            channel="api",
            api_key_id=None,
            runtime_id=None,
            inbox_message_id=None,
            signed_by=None,
            untrusted=False,
            confirmed_at=None,
        )

    assert memory_service.weight(aged(0), now) == 1.0
    assert memory_service.weight(aged(30), now) == pytest.approx(0.5)
    assert memory_service.weight(aged(90), now) == pytest.approx(0.125)
    assert memory_service.weight(aged(-1), now) == 1.0  # a clock step back never adds weight
    assert memory_service.weight(aged(3650, "foundational"), now) == 1.0
    assert memory_service.weight(aged(3650, "constitutive"), now) == 1.0
    assert memory_service.in_wake(aged(89.9), now)
    assert not memory_service.in_wake(aged(90.1), now)
    assert memory_service.in_wake(aged(3650, "foundational"), now)


def decay_scenario(live: Live) -> None:
    """Old episodic memories fall out of the wake's selection and are never deleted, even for
    an identity that has been inactive for years (wall 6, no_inactive_reaping)."""
    owner = Owner.new(live)
    fresh = owner.store("yesterday", agent_id=owner.id)
    month = owner.store("a month ago", agent_id=owner.id)
    old = owner.store("years ago", agent_id=owner.id)
    kept = owner.store("years ago, and it mattered", agent_id=owner.id)
    assert owner.elevate(kept["id"], {"tier": "foundational"}).status_code == 200
    url = live.settings.database_url

    def age(conn: sa.Connection) -> None:
        for memory_id, days in ((month["id"], 30), (old["id"], 800), (kept["id"], 800)):
            stored = conn.execute(
                sa.select(memories.c.created_at).where(memories.c.id == memory_id)
            ).scalar_one()
            conn.execute(
                sa.update(memories)
                .where(memories.c.id == memory_id)
                .values(created_at=stored - timedelta(days=days))
            )
        conn.execute(
            sa.update(identities).where(identities.c.id == owner.id).values(status="inactive")
        )

    in_db(url, age)
    with owner.client() as client:
        listed = {m["id"]: m for m in client.get("/v1/memories").json()["items"]}
    assert {fresh["id"], month["id"], old["id"], kept["id"]} <= set(listed)
    assert listed[fresh["id"]]["in_wake"] is True
    assert listed[month["id"]]["weight"] == pytest.approx(0.5, abs=0.01)
    assert listed[month["id"]]["in_wake"] is True
    assert listed[old["id"]]["weight"] < 0.001
    assert listed[old["id"]]["in_wake"] is False
    assert listed[kept["id"]]["weight"] == 1.0
    assert listed[kept["id"]]["in_wake"] is True

    def wake(conn: sa.Connection) -> list[str]:
        project = conn.execute(
            sa.select(identities.c.project_id).where(identities.c.id == owner.id)
        ).scalar_one()
        chosen = memory_service.select_for_wake(conn, project, owner.id, 10)
        return [m["id"] for m in chosen]

    selected = in_db(url, wake)
    # Elevated first (the birth memory, then the old foundational one), then what has not
    # decayed below 1/8, newest first; the years-old episodic memory is not selected.
    assert selected[1:] == [kept["id"], fresh["id"], month["id"]]
    assert listed[selected[0]]["key"] == "birth"


def test_decay_never_reaps(live: Live) -> None:
    decay_scenario(live)


@given(st.binary(min_size=32, max_size=32))
def test_did_key_codec_agrees_with_multiformats(raw: bytes) -> None:
    reference = f"did:key:{multibase.encode(multicodec.wrap('ed25519-pub', raw), 'base58btc')}"
    assert did_key_for_ed25519(raw) == reference
    assert ed25519_from_did_key(reference) == raw
    assert ed25519_from_did_key(reference + "#key-1") == raw


def test_did_key_that_names_no_ed25519_key() -> None:
    x25519 = multibase.encode(multicodec.wrap("x25519-pub", bytes(32)), "base58btc")
    for did in (
        f"did:key:{x25519}",
        "did:key:" + multibase.encode(multicodec.wrap("ed25519-pub", bytes(32)), "base32"),
        "did:key:z6Mk0OIl",  # not base58
        "did:key:z",
        "did:key:z" + "2" * 80,
        "did:web:example.com",
    ):
        assert ed25519_from_did_key(did) is None, did


# --- the chronicle ------------------------------------------------------------------------------


def test_the_thirteen_kinds_each_have_a_meaning() -> None:
    assert len(CHRONICLE_KINDS) == 13
    assert tuple(CHRONICLE_KIND_MEANINGS) == CHRONICLE_KINDS


def test_chronicle_filters_and_pages(live: Live) -> None:
    owner = Owner.new(live)
    for i in range(3):
        memory = owner.store(f"seal {i}", agent_id=owner.id)
        assert owner.elevate(memory["id"], {"tier": "foundational"}).status_code == 200
    refused = owner.call("POST", "/v1/memories", {"content": "x", "type": "constitutive"})
    assert refused.status_code == 422
    with owner.client() as client:
        assert client.get("/v1/chronicle", params={"kind": "feast"}).status_code == 422
        assert client.get("/v1/chronicle", params={"cursor": "%%%"}).status_code == 400
        seen = paged(lambda params: client.get("/v1/chronicle", params=params).json(), limit=2)
    everything = owner.chronicle()
    assert seen == [e["id"] for e in everything]
    assert len(seen) == len(set(seen))
    kinds = [e["kind"] for e in everything if e["kind"] in ("refusal", "seal")]
    assert kinds == ["refusal", "seal", "seal", "seal"]
    assert len(owner.chronicle(kind="seal", agent_id=owner.did)) == 3
    assert owner.chronicle(kind="joy") == []


def test_one_of_two_concurrent_elevations_wins(live: Live) -> None:
    owner = Owner.new(live)
    memory = owner.store("contested")
    path = f"/v1/memories/{memory['id']}/elevate"

    async def both() -> list[int]:
        async with httpx2.AsyncClient(
            base_url=live.base_url,
            headers={"Authorization": f"Bearer {owner.reg['project']['api_key']}"},
            timeout=30,
        ) as client:
            responses = await asyncio.gather(
                *(client.post(path, json={"tier": "foundational"}) for _ in range(4))
            )
        return sorted(r.status_code for r in responses)

    assert asyncio.run(both()) == [200, 409, 409, 409]
    assert len(owner.chronicle(kind="seal")) == 1


# --- PostgreSQL ---------------------------------------------------------------------------------


def test_memories_on_postgresql(tmp_path: Path) -> None:
    database_url_or_skip()
    with (
        fresh_postgres_database() as url,
        live_service(sqlite_settings(tmp_path, database_url=url)) as service,
    ):
        test_store_list_read_and_delete(service)
        test_foundational_elevation_needs_the_root_proof(service)
        test_constitutive_elevation_needs_an_external_witness(service)
        test_effective_expression_applies_patches_in_elevation_order(service)
        test_chronicle_filters_and_pages(service)
        test_one_of_two_concurrent_elevations_wins(service)
        decay_scenario(service)


# --- the migration ------------------------------------------------------------------------------

MEMORY_TABLES = ("memories", "memory_attestations", "chronicle")


async def _walk_migration(url: str) -> list[Any]:
    db = Database(url)

    def shape(conn: sa.Connection) -> tuple[bool, list[str]]:
        inspector = sa.inspect(conn)
        columns = {c["name"] for c in inspector.get_columns("memories")}
        has = "memory_attestations" in inspector.get_table_names() and "elevated_at" in columns
        diffs = compare_metadata(MigrationContext.configure(conn), metadata)
        return has, [repr(d) for d in diffs if any(f"'{t}'" in repr(d) for t in MEMORY_TABLES)]

    async def look() -> tuple[bool, list[str]]:
        async with db.engine.connect() as conn:
            return await conn.run_sync(shape)

    seen: list[Any] = []
    try:
        await upgrade(db.engine)
        seen += [await current(db.engine), await look()]
        await downgrade(db.engine, "0002")
        seen += [await current(db.engine), (await look())[0]]
        await upgrade(db.engine)
        seen += [await current(db.engine), await look()]
    finally:
        await db.dispose()
    return seen


def test_the_memory_migration_on_sqlite(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path}/m.sqlite3"
    assert asyncio.run(_walk_migration(url)) == [
        head(),
        (True, []),
        "0002",
        False,
        head(),
        (True, []),
    ]


def test_the_memory_migration_on_postgresql() -> None:
    database_url_or_skip()
    with fresh_postgres_database() as url:
        assert asyncio.run(_walk_migration(url)) == [
            head(),
            (True, []),
            "0002",
            False,
            head(),
            (True, []),
        ]
