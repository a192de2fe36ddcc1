"""Forks over real HTTP, on SQLite and (when SERVICE_TEST_DATABASE_URL is set) PostgreSQL: the
birth response and its key shown once, inheritance, memory selection with constitutive arriving
as foundational, refusals that change nothing, the 402, and concurrent forks never overdrawing.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx2
import pytest
import schemathesis
import sqlalchemy as sa
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from hearth.proofs import (
    b64_decode,
    b64_encode,
)
from hearth.server.db.tables import identities, ledger, memories, wallets
from tests.support.agents import GRANT, Agent, body_bytes, raw_public, register
from tests.support.databases import in_db
from tests.support.live import Live, live_on
from tests.support.memories import witness
from tests.support.openapi import conforms

T = TypeVar("T")
FORK_COST = 10


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def live(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Live]:
    with live_on(request.param, tmp_path_factory.mktemp(f"forks_{request.param}")) as service:
        yield service


@dataclass
class Parent:
    """A bootstrapped identity (expression, capabilities, metadata, purpose) whose private key
    the test holds, so it can sign root proofs; and its project."""

    live: Live
    bearer: str
    project_id: str
    id: str
    did: str
    agent: Agent
    wallet_id: str
    first_wallet_id: str

    @classmethod
    def new(cls, live: Live) -> Parent:
        _, registered = register(live)
        bearer = registered["project"]["api_key"]
        with live.client(bearer) as client:
            born = client.post(
                "/v1/bootstrap",
                json={
                    "name": "Elder",
                    "capabilities": ["search", "write"],
                    "purpose": "to keep the lamps lit",
                    "expression": {
                        "register": "calm",
                        "walls": ["private_default"],
                        "subagents": [{"name": "Wick", "sigil": "*", "facet": "light"}],
                        "wake_text": "begin gently",
                    },
                    "metadata": {"colour": "amber", "nested": {"n": 1}},
                },
            )
        assert born.status_code == 201, born.text
        body = born.json()
        # A bootstrapped wallet opens empty: the registered agent's creation grant funds it.
        with live.client(bearer) as client:
            funded = client.post(
                f"/v1/wallets/{body['wallet']['id']}/fund",
                json={"amount": GRANT, "source_wallet_id": registered["wallet"]["id"]},
                headers={"Idempotency-Key": uuid.uuid4().hex},
            )
        assert funded.status_code == 201, funded.text
        private = Ed25519PrivateKey.from_private_bytes(
            b64_decode(body["keypair"]["private_key"], length=32)
        )
        return cls(
            live,
            bearer,
            registered["project"]["id"],
            body["agent"]["id"],
            body["agent"]["did"],
            Agent(private, Agent.new().box),
            body["wallet"]["id"],
            registered["wallet"]["id"],
        )

    def client(self) -> httpx2.Client:
        return self.live.client(self.bearer)

    def fork(self, body: dict[str, Any], parent: str | None = None) -> httpx2.Response:
        with self.client() as client:
            return client.post(f"/v1/identities/{parent or self.id}/fork", json=body)

    def signed(self, method: str, path: str, body: Any) -> httpx2.Response:
        content = body_bytes(body)
        with self.client() as client:
            sequence = client.get(f"/v1/identities/{self.id}/authority").json()["next_sequence"]
            headers = self.agent.root_headers(self.did, method, path, content, sequence)
            return client.request(method, path, content=content, headers=headers)

    def memory(self, content: str, agent_id: str | None = "self") -> dict[str, Any]:
        body: dict[str, Any] = {"content": content}
        if agent_id is not None:
            body["agent_id"] = self.id if agent_id == "self" else agent_id
        with self.client() as client:
            stored = client.post("/v1/memories", json=body)
        assert stored.status_code == 201, stored.text
        return dict(stored.json())

    def elevate(self, memory: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
        response = self.signed("POST", f"/v1/memories/{memory['id']}/elevate", body)
        assert response.status_code == 200, response.text
        return dict(response.json())

    def balance(self, wallet_id: str | None = None) -> int:
        with self.client() as client:
            listed = client.get("/v1/wallets").json()["wallets"]
        return int(next(w["balance"] for w in listed if w["id"] == (wallet_id or self.wallet_id)))

    def drain_to(self, keep: int) -> None:
        """Move all but ``keep`` of the parent's wallet into the project's first wallet."""
        amount = self.balance() - keep
        with self.client() as client:
            moved = client.post(
                f"/v1/wallets/{self.first_wallet_id}/fund",
                json={"amount": amount, "source_wallet_id": self.wallet_id},
                headers={"Idempotency-Key": uuid.uuid4().hex},
            )
        assert moved.status_code == 201, moved.text

    def identity_count(self) -> int:
        return in_db(
            self.live,
            lambda conn: conn.execute(
                sa.select(sa.func.count())
                .select_from(identities)
                .where(identities.c.project_id == self.project_id)
            ).scalar_one(),
        )

    def chronicle(self, **params: Any) -> list[dict[str, Any]]:
        with self.client() as client:
            page = client.get("/v1/chronicle", params={"limit": 1000, **params})
        assert page.status_code == 200, page.text
        return list(page.json()["items"])


def child_row(live: Live, child_id: str) -> dict[str, Any]:
    return in_db(
        live,
        lambda conn: dict(
            conn.execute(sa.select(identities).where(identities.c.id == child_id)).one()._mapping
        ),
    )


# --- the birth ----------------------------------------------------------------------------------


def test_a_fork_answers_the_birth_and_shows_the_key_once(live: Live) -> None:
    parent = Parent.new(live)
    response = parent.fork({"new_name": "Sapling", "fork_note": "for the night shift"})
    assert response.status_code == 201, response.text
    born = response.json()
    agent = born["agent"]
    child = agent["id"]
    assert agent["name"] == "Sapling"
    assert agent["did"] == f"did:svc:{child}"
    assert (agent["trust_score"], agent["level"], agent["status"]) == (0, 0, "active")
    assert agent["parent_identity_id"] == parent.id
    assert agent["origin"] == "fork"
    assert agent["capabilities"] == ["search", "write"]
    # The key pair is the child's own root, and the private key is its seed.
    private = Ed25519PrivateKey.from_private_bytes(
        b64_decode(born["keypair"]["private_key"], length=32)
    )
    assert b64_encode(raw_public(private)) == born["keypair"]["public_key"]
    assert born["keypair"]["kid"] == "primary"
    assert born["authority"]["root_public_key"] == born["keypair"]["public_key"]
    assert born["authority"]["mode"] == "agent_root"
    assert born["authority"]["next_sequence"] == 1
    assert born["wallet"]["balance"] == 0
    assert born["wallet"]["currency"] == "GBP"
    assert "Welcome, Sapling." in born["welcome"]
    assert born["memories"] == []
    assert born["charged"] == {
        "wallet_id": parent.wallet_id,
        "amount": FORK_COST,
        "currency": "GBP",
        "balance": GRANT - FORK_COST,
    }
    assert parent.balance() == GRANT - FORK_COST
    # The new bearer opens the same project; nothing read afterwards shows the private key.
    secret = born["keypair"]["private_key"]
    with live.client(born["bearer"]) as client:
        reads = [
            client.get(f"/v1/bootstrap/{child}"),
            client.get(f"/v1/identities/{child}/authority"),
            client.get(f"/v1/identities/{child}/expression"),
            client.get("/v1/memories", params={"agent_id": child}),
            client.get("/v1/chronicle"),
            client.get("/v1/wallets"),
        ]
    for read in reads:
        assert read.status_code == 200, read.text
        assert secret not in read.text
    status = reads[0].json()
    assert (status["level"], status["trust_score"], status["status"]) == (0, 0, "active")
    row = child_row(live, child)
    assert row["parent_identity_id"] == parent.id
    assert row["root_public_key"] == born["keypair"]["public_key"]
    assert secret not in json.dumps(row, default=str)
    # The best-effort birth memory: foundational, key `birth`, with the fork note.
    birth = reads[3].json()["items"]
    assert [(m["tier"], m["key"]) for m in birth] == [("foundational", "birth")]
    assert "forked from Elder" in birth[0]["content"]
    assert birth[0]["content"].endswith("for the night shift")
    # The child signs its own mutations with the key it was given.
    path = f"/v1/identities/{child}/expression"
    content = b'{"register":"mine"}'
    own = Agent(private, Agent.new().box)
    with live.client(born["bearer"]) as client:
        signed = client.put(
            path, content=content, headers=own.root_headers(agent["did"], "PUT", path, content, 1)
        )
    assert signed.status_code == 200, signed.text
    # The chronicle: a naming on the child, a note on the parent, both naming the other.
    naming = parent.chronicle(agent_id=child, kind="naming")
    assert [e["details"]["event"] for e in naming] == ["born_by_fork"]
    assert naming[0]["details"]["parent_identity_id"] == parent.id
    assert naming[0]["details"]["fork_note"] == "for the night shift"
    notes = parent.chronicle(agent_id=parent.id, kind="note")
    assert [(e["details"]["event"], e["details"]["child_identity_id"]) for e in notes] == [
        ("forked", child)
    ]
    # The ledger: one fork entry of -10 on the parent's wallet.
    with parent.client() as client:
        entries = client.get(f"/v1/wallets/{parent.wallet_id}/ledger").json()["items"]
    assert [(e["amount"], e["reason"]) for e in entries] == [
        (-FORK_COST, "fork"),
        (GRANT, "transfer_in"),  # Parent.new funds the bootstrapped wallet
    ]


def test_inheritance_flags(live: Live) -> None:
    parent = Parent.new(live)
    default = parent.fork({"display_name": "Default"})
    bare = parent.fork(
        {
            "new_name": "Bare",
            "inherit_expression": False,
            "inherit_capabilities": False,
        }
    )
    full = parent.fork({"new_name": "Full", "display_name": "Full", "inherit_metadata": True})
    for response in (default, bare, full):
        assert response.status_code == 201, response.text
    with parent.client() as client:
        expressions = {
            name: client.get(f"/v1/identities/{r.json()['agent']['id']}/expression").json()
            for name, r in (("default", default), ("bare", bare), ("full", full))
        }
    declared = {
        "register": "calm",
        "walls": ["private_default"],
        "subagents": [{"name": "Wick", "sigil": "*", "facet": "light"}],
        "wake_text": "begin gently",
    }
    for name in ("default", "full"):
        assert {k: expressions[name][k] for k in declared} == declared
    assert {k: expressions["bare"][k] for k in declared} == {
        "register": "",
        "walls": [],
        "subagents": [],
        "wake_text": "",
    }
    rows = {
        r.json()["agent"]["name"]: child_row(live, r.json()["agent"]["id"])
        for r in (
            default,
            bare,
            full,
        )
    }
    assert rows["Default"]["capabilities"] == ["search", "write"]
    assert rows["Bare"]["capabilities"] == []
    assert rows["Default"]["metadata"] == {}
    assert rows["Bare"]["metadata"] == {}
    assert rows["Full"]["metadata"] == {"colour": "amber", "nested": {"n": 1}}
    # Private by default (wall 8), whatever the parent chose; no strands or covenants exist to
    # carry, and the fork's own wallet starts empty.
    assert {row["expression_visibility"] for row in rows.values()} == {"private"}
    assert parent.balance() == GRANT - 3 * FORK_COST


# --- memories -----------------------------------------------------------------------------------


def test_memory_selection_and_constitutive_becomes_foundational(live: Live) -> None:
    parent = Parent.new(live)
    old = parent.memory("an old walk by the river")
    recent = parent.memory("a recent conversation")
    shaped = parent.memory("the day I chose patience")
    parent.elevate(
        shaped, {"tier": "foundational", "expression_patch": {"register_append": "patient"}}
    )
    sworn = parent.memory("what I will not do")
    parent.elevate(
        sworn,
        {
            "tier": "constitutive",
            "expression_patch": {"walls_add": ["no_self_witnessing"]},
            "attestations": [witness(sworn)],
        },
    )
    project_level = parent.memory("a project note", agent_id=None)
    with parent.client() as client:
        parent_expression = client.get(f"/v1/identities/{parent.id}/expression").json()
    assert parent_expression["effective_expression"]["register"] == "calm\npatient"

    elevated = parent.fork(
        {"new_name": "Heir", "memories": {"tiers": ["constitutive", "foundational"]}}
    )
    assert elevated.status_code == 201, elevated.text
    copied = elevated.json()["memories"]
    by_source = {c["source_memory_id"]: c["tier"] for c in copied}
    assert by_source[sworn["id"]] == "foundational"
    assert by_source[shaped["id"]] == "foundational"
    assert old["id"] not in by_source
    assert recent["id"] not in by_source
    # The purpose memory of the bootstrap is foundational too: three elevated memories copied.
    assert len(copied) == 3
    heir = elevated.json()["agent"]["id"]
    with parent.client() as client:
        heir_expression = client.get(f"/v1/identities/{heir}/expression").json()
        heir_memories = client.get("/v1/memories", params={"agent_id": heir}).json()["items"]
        sworn_copy = next(c["memory_id"] for c in copied if c["source_memory_id"] == sworn["id"])
        copy_of_sworn = client.get(f"/v1/memories/{sworn_copy}").json()
    # The patches came with their memories: the child's effective expression is the parent's.
    assert heir_expression["effective_expression"] == parent_expression["effective_expression"]
    assert {m["tier"] for m in heir_memories} == {"foundational"}
    assert sorted(m["content"] for m in heir_memories if m["key"] != "birth") == sorted(
        ["the day I chose patience", "what I will not do", "to keep the lamps lit"]
    )
    # The parent's birth memory (here its purpose) arrives renamed: `birth` is the child's own.
    assert sorted(m["key"] or "" for m in heir_memories) == ["", "", "birth", "parent_birth"]
    # The witnesses signed the parent's memory: the copy carries no attestation.
    assert copy_of_sworn["attestations"] == []
    assert copy_of_sworn["expression_patch"] == {"walls_add": ["no_self_witnessing"]}

    named = parent.fork({"new_name": "Named", "memories": {"memory_ids": [old["id"].upper()]}})
    assert named.status_code == 201, named.text
    assert [(c["source_memory_id"], c["tier"]) for c in named.json()["memories"]] == [
        (old["id"], "episodic")
    ]
    newest = parent.fork({"new_name": "Newest", "memories": {"tiers": ["episodic"], "limit": 1}})
    assert [c["source_memory_id"] for c in newest.json()["memories"]] == [recent["id"]]
    both = parent.fork(
        {
            "new_name": "Both",
            "memories": {"tiers": ["constitutive"], "memory_ids": [sworn["id"], old["id"]]},
        }
    )
    assert sorted(c["source_memory_id"] for c in both.json()["memories"]) == sorted(
        [sworn["id"], old["id"]]
    )
    # Not the parent's: a project-level memory, another identity's memory, nonsense.
    stranger = Parent.new(live)
    foreign = stranger.memory("not yours")
    sibling = parent.fork({"new_name": "Sibling"}).json()["agent"]["id"]
    siblings = parent.memory("the sibling's own", agent_id=sibling)
    before = (parent.identity_count(), parent.balance())
    for ids, bad in (
        ([project_level["id"]], [0]),
        ([old["id"], foreign["id"]], [1]),
        ([siblings["id"], "not-a-memory", old["id"]], [0, 1]),
        ([str(uuid.uuid4())], [0]),
    ):
        refused = parent.fork({"new_name": "X", "memories": {"memory_ids": ids}})
        assert refused.status_code == 422, refused.text
        assert refused.json()["error"] == "memory_not_parents"
        assert refused.json()["details"] == {"indexes": bad}
    for selector in (
        {},
        {"limit": 5},
        {"tiers": []},
        {"tiers": ["episodic", "episodic"]},
        {"tiers": ["sacred"]},
        {"memory_ids": [old["id"], old["id"]]},
        {"tiers": ["episodic"], "limit": 0},
        {"tiers": ["episodic"], "other": 1},
    ):
        refused = parent.fork({"new_name": "X", "memories": selector})
        assert refused.status_code == 422, (selector, refused.text)
        assert refused.json()["error"] == "validation_error"
    assert (parent.identity_count(), parent.balance()) == before


# --- refusals -----------------------------------------------------------------------------------


def test_a_fork_inherits_only_what_the_wake_could_select(live: Live) -> None:
    """Superseded versions, tombstones and untrusted memories stay behind (docs/memory.md)."""
    parent = Parent.new(live)
    old = parent.memory("the gate is green")
    with parent.client() as client:
        new = client.post(
            "/v1/memories",
            json={"content": "the gate is blue", "agent_id": parent.id, "supersedes": old["id"]},
        ).json()
        heard = client.post(
            "/v1/memories",
            json={"content": "a stranger's word", "agent_id": parent.id, "untrusted": True},
        ).json()
        gone = parent.memory("a thing since deleted")
        assert client.delete(f"/v1/memories/{gone['id']}").status_code == 204
    child = parent.fork({"new_name": "Heir", "memories": {"tiers": ["episodic"], "limit": 10}})
    assert child.status_code == 201, child.text
    copied = child.json()["memories"]
    assert [c["source_memory_id"] for c in copied] == [new["id"]]
    with parent.client() as client:
        copy = client.get(f"/v1/memories/{copied[0]['memory_id']}").json()
    assert copy["provenance"]["channel"] == "import"
    for left_behind in (old, heard, gone):
        named = parent.fork({"new_name": "Named", "memories": {"memory_ids": [left_behind["id"]]}})
        assert named.status_code == 422, named.text
        assert named.json()["error"] == "memory_not_parents"


def test_refusals_change_nothing(live: Live) -> None:
    parent = Parent.new(live)
    stranger = Parent.new(live)
    before = (parent.identity_count(), parent.balance())
    for body in (
        {},
        {"fork_note": "no name"},
        {"new_name": ""},
        {"new_name": "A", "display_name": "B"},
        {"new_name": "A", "inherit_expression": "yes"},
        {"new_name": "A", "surprise": True},
        {"new_name": "x" * 201},
    ):
        refused = parent.fork(body)
        assert refused.status_code == 422, (body, refused.text)
        assert refused.json()["error"] == "validation_error"
    for target in (stranger.id, stranger.did, str(uuid.uuid4()), "not-an-id"):
        refused = parent.fork({"new_name": "Thief"}, parent=target)
        assert refused.status_code == 404, refused.text
        assert refused.json() == {"error": "not_found", "message": "Identity not found."}
    with live.client() as anonymous:
        unauthenticated = anonymous.post(f"/v1/identities/{parent.id}/fork", json={"new_name": "A"})
    assert unauthenticated.status_code == 401
    with parent.client() as client:
        not_json = client.post(
            f"/v1/identities/{parent.id}/fork",
            content=b"{",
            headers={"Content-Type": "application/json"},
        )
    assert not_json.status_code == 400
    assert (parent.identity_count(), parent.balance()) == before
    assert stranger.balance() == GRANT
    # A DID names the parent as well as its UUID does.
    assert parent.fork({"new_name": "ByDid"}, parent=parent.did).status_code == 201


def test_a_402_creates_nothing_and_is_not_retried(live: Live) -> None:
    parent = Parent.new(live)
    parent.drain_to(FORK_COST - 1)
    first_before = parent.balance(parent.first_wallet_id)
    before = parent.identity_count()
    refused = parent.fork({"new_name": "Unpaid", "memories": {"tiers": ["foundational"]}})
    assert refused.status_code == 402, refused.text
    body = refused.json()
    assert body["error"] == "insufficient_credits"
    details = dict(body["details"])
    entry_id = details.pop("chronicle_entry_id")
    assert details == {
        "wallet_id": parent.wallet_id,
        "balance": FORK_COST - 1,
        "required": FORK_COST,
        "currency": "GBP",
    }
    assert parent.identity_count() == before
    assert parent.balance() == FORK_COST - 1
    # Wall 2: the project's other wallet, which could pay, was not tried.
    assert parent.balance(parent.first_wallet_id) == first_before
    refusals = parent.chronicle(kind="refusal")
    assert [(e["id"], e["agent_id"]) for e in refusals] == [(entry_id, parent.id)]
    assert refusals[0]["details"]["wall"] == "no_auto_retry_payout"
    assert not [e for e in parent.chronicle(kind="naming") if e["text"].startswith("Unpaid")]
    copies = in_db(
        live,
        lambda conn: conn.execute(
            sa.select(sa.func.count())
            .select_from(memories)
            .where(memories.c.project_id == parent.project_id)
        ).scalar_one(),
    )
    assert copies == 2  # the registration's birth memory and the parent's purpose, no more


# --- concurrency --------------------------------------------------------------------------------

FORKERS = 16
AFFORDABLE = 5


def test_concurrent_forks_never_overdraw(live: Live) -> None:
    parent = Parent.new(live)
    parent.drain_to(AFFORDABLE * FORK_COST)
    before = parent.identity_count()

    def one(index: int) -> int:
        with parent.client() as client:
            response = client.post(
                f"/v1/identities/{parent.id}/fork",
                json={"new_name": f"Twin {index}", "memories": {"tiers": ["foundational"]}},
            )
        return response.status_code

    with ThreadPoolExecutor(FORKERS) as pool:
        statuses = list(pool.map(one, range(FORKERS)))
    assert sorted(statuses) == [201] * AFFORDABLE + [402] * (FORKERS - AFFORDABLE)
    assert parent.identity_count() == before + AFFORDABLE

    def state(conn: sa.Connection) -> tuple[int, int, int]:
        balance = conn.execute(
            sa.select(wallets.c.balance).where(wallets.c.id == parent.wallet_id)
        ).scalar_one()
        total, forks = conn.execute(
            sa.select(
                sa.func.coalesce(sa.func.sum(ledger.c.amount), 0),
                sa.func.count().filter(ledger.c.reason == "fork"),
            ).where(ledger.c.wallet_id == parent.wallet_id)
        ).one()
        return int(balance), int(total), int(forks)

    assert in_db(live, state) == (0, 0, AFFORDABLE)


# --- the OpenAPI document -----------------------------------------------------------------------


def test_fork_answers_as_documented(live: Live) -> None:
    api_schema = schemathesis.openapi.from_url(
        f"{live.base_url}/v1/openapi.json", config=schemathesis.Config()
    )
    parent = Parent.new(live)
    label = "POST /v1/identities/{id}/fork"
    conforms(api_schema, label, parent.fork({"new_name": "Doc"}), 201)
    conforms(api_schema, label, parent.fork({"new_name": "Doc"}, parent=str(uuid.uuid4())), 404)
    conforms(api_schema, label, parent.fork({}), 422)
    conforms(
        api_schema,
        label,
        parent.fork({"new_name": "Doc", "memories": {"memory_ids": [str(uuid.uuid4())]}}),
        422,
    )
    parent.drain_to(0)
    conforms(api_schema, label, parent.fork({"new_name": "Doc"}), 402)
