"""Templates over real HTTP, on SQLite and (when SERVICE_TEST_DATABASE_URL is set) PostgreSQL:
the seeded catalogue, publishing, purchases paid and credited in one transaction, births from
free and priced templates, a purchase making exactly one identity (also under concurrency), and
refusals that change nothing."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx2
import pytest
import schemathesis
import sqlalchemy as sa
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from hearth.proofs import b64_decode, b64_encode
from hearth.server.db.tables import identities, template_purchases, templates
from hearth.server.services import templates as template_service
from tests.support.agents import GRANT, raw_public, register
from tests.support.databases import in_db
from tests.support.listings import paged as paged_ids
from tests.support.live import Live, live_on
from tests.support.openapi import conforms

HEARTHKEEPER = "6d1f0c2e-5b7a-4c1e-9f3a-2a8e4b1c0001"  # free
CARTOGRAPHER = "6d1f0c2e-5b7a-4c1e-9f3a-2a8e4b1c0002"  # free
LAMPLIGHTER = "6d1f0c2e-5b7a-4c1e-9f3a-2a8e4b1c0003"  # 25
FERRYMAN = "6d1f0c2e-5b7a-4c1e-9f3a-2a8e4b1c0004"  # 50
BUILT_IN = {HEARTHKEEPER: 0, CARTOGRAPHER: 0, LAMPLIGHTER: 25, FERRYMAN: 50}


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def live(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Live]:
    with live_on(request.param, tmp_path_factory.mktemp(f"templates_{request.param}")) as service:
        yield service


class Project:
    """A registered agent and its project (one wallet, holding the creation grant)."""

    def __init__(self, live: Live) -> None:
        _, registered = register(live)
        self.live = live
        self.bearer: str = registered["project"]["api_key"]
        self.project_id: str = registered["project"]["id"]
        self.agent_id: str = registered["agent"]["id"]
        self.wallet_id: str = registered["wallet"]["id"]

    def client(self) -> httpx2.Client:
        return self.live.client(self.bearer)

    def post(self, path: str, body: Any = None) -> httpx2.Response:
        with self.client() as client:
            return client.post(path, json=body) if body is not None else client.post(path)

    def get(self, path: str, **params: Any) -> httpx2.Response:
        with self.client() as client:
            return client.get(path, params=params)

    def buy(self, template_id: str) -> httpx2.Response:
        return self.post(f"/v1/templates/{template_id}/purchase")

    def born(self, template_id: str, name: str, purchase_id: str | None = None) -> httpx2.Response:
        body = {"template_id": template_id, "new_name": name}
        if purchase_id is not None:
            body["purchase_id"] = purchase_id
        return self.post("/v1/identities/from-template", body)

    def balance(self) -> int:
        listed = self.get("/v1/wallets").json()["wallets"]
        return int(next(w["balance"] for w in listed if w["id"] == self.wallet_id))

    def ledger(self) -> list[tuple[int, str]]:
        items = self.get(f"/v1/wallets/{self.wallet_id}/ledger").json()["items"]
        return [(e["amount"], e["reason"]) for e in items]

    def counts(self) -> tuple[int, int, int]:
        """(identities, purchases, purchases used) of the project."""

        def read(conn: sa.Connection) -> tuple[int, int, int]:
            made = conn.execute(
                sa.select(sa.func.count())
                .select_from(identities)
                .where(identities.c.project_id == self.project_id)
            ).scalar_one()
            bought, used = conn.execute(
                sa.select(sa.func.count(), sa.func.count(template_purchases.c.used_at)).where(
                    template_purchases.c.project_id == self.project_id
                )
            ).one()
            return int(made), int(bought), int(used)

        return in_db(self.live, read)

    def drain(self) -> None:
        """Empty the wallet into a second identity's wallet (born by bootstrap)."""
        second = self.post("/v1/bootstrap", {"name": "Vault"}).json()["wallet"]["id"]
        with self.client() as client:
            moved = client.post(
                f"/v1/wallets/{second}/fund",
                json={"amount": self.balance(), "source_wallet_id": self.wallet_id},
                headers={"Idempotency-Key": uuid.uuid4().hex},
            )
        assert moved.status_code == 201, moved.text


def assert_birth(born: dict[str, Any], name: str) -> None:
    agent = born["agent"]
    assert agent["name"] == name
    assert (agent["trust_score"], agent["level"], agent["status"]) == (0, 0, "active")
    assert agent["origin"] == "template"
    assert agent["parent_identity_id"] is None
    assert agent["capabilities"] == []
    private = Ed25519PrivateKey.from_private_bytes(
        b64_decode(born["keypair"]["private_key"], length=32)
    )
    assert b64_encode(raw_public(private)) == born["keypair"]["public_key"]
    assert born["authority"]["root_public_key"] == born["keypair"]["public_key"]
    assert born["wallet"]["balance"] == 0
    assert f"Welcome, {name}." in born["welcome"]


# --- the catalogue ------------------------------------------------------------------------------


def test_the_built_in_catalogue_is_listed_paged_and_seeded_once(live: Live) -> None:
    project = Project(live)
    listed = project.get("/v1/templates", limit=200)
    assert listed.status_code == 200, listed.text
    built_in = {t["id"]: t for t in listed.json()["items"] if t["built_in"]}
    assert {k: v["price"] for k, v in built_in.items()} == BUILT_IN
    keeper = built_in[HEARTHKEEPER]
    assert keeper["name"] == "Hearthkeeper"
    assert keeper["currency"] == "GBP"
    assert keeper["mine"] is False
    assert keeper["expression_preview"]["walls"] == [
        "no_self_witnessing",
        "refusals_recorded",
        "private_default",
    ]
    assert keeper["expression_preview"]["subagents"] == ["Keeper"]
    assert keeper["expression_preview"]["register_excerpt"].startswith("Warm and plain.")
    assert "expression" not in keeper
    detail = project.get(f"/v1/templates/{HEARTHKEEPER.upper()}")
    assert detail.status_code == 200
    assert detail.json()["id"] == HEARTHKEEPER
    assert detail.json()["expression"]["wake_text"].startswith("Read the wake first.")
    # Pages of one: every template once, newest first.
    paged = paged_ids(lambda params: project.get("/v1/templates", **params).json(), limit=1)
    assert paged == [t["id"] for t in listed.json()["items"]]
    assert len(set(paged)) == len(paged)
    assert paged[-4:] == [FERRYMAN, LAMPLIGHTER, CARTOGRAPHER, HEARTHKEEPER]
    # Seeding again inserts nothing: fixed ids, insert-if-absent.
    assert in_db(live, template_service.seed_catalogue) == 0
    count = in_db(
        live,
        lambda conn: conn.execute(
            sa.select(sa.func.count())
            .select_from(templates)
            .where(templates.c.id.in_(list(BUILT_IN)))
        ).scalar_one(),
    )
    assert count == len(BUILT_IN)
    for path, status, error in (
        (f"/v1/templates/{uuid.uuid4()}", 404, "not_found"),
        ("/v1/templates/not-a-template", 404, "not_found"),
        ("/v1/templates?cursor=nonsense", 400, "invalid_cursor"),
        ("/v1/templates?limit=0", 422, "validation_error"),
    ):
        with project.client() as client:
            refused = client.get(path)
        assert refused.status_code == status, path
        assert refused.json()["error"] == error
    with live.client() as anonymous:
        assert anonymous.get("/v1/templates").status_code == 401


# --- births -------------------------------------------------------------------------------------


def test_a_free_template_births_an_agent_with_its_expression_only(live: Live) -> None:
    project = Project(live)
    response = project.born(HEARTHKEEPER, "Ember")
    assert response.status_code == 201, response.text
    born = response.json()
    assert_birth(born, "Ember")
    assert born["template_id"] == HEARTHKEEPER
    assert born["purchase_id"] is None
    child = born["agent"]["id"]
    template = project.get(f"/v1/templates/{HEARTHKEEPER}").json()["expression"]
    expression = project.get(f"/v1/identities/{child}/expression").json()
    assert {k: expression[k] for k in template} == template
    assert expression["effective_expression"] == template
    secret = born["keypair"]["private_key"]
    for path in (
        f"/v1/bootstrap/{child}",
        f"/v1/identities/{child}/authority",
        f"/v1/identities/{child}/expression",
        "/v1/chronicle",
    ):
        read = project.get(path)
        assert read.status_code == 200
        assert secret not in read.text
    birth = project.get("/v1/memories", agent_id=child).json()["items"]
    assert [(m["tier"], m["key"]) for m in birth] == [("foundational", "birth")]
    assert "the template Hearthkeeper" in birth[0]["content"]
    naming = project.get("/v1/chronicle", agent_id=child, kind="naming").json()["items"]
    assert [e["details"]["event"] for e in naming] == ["born_from_template"]
    # A free template costs nothing, and there is nothing to buy.
    assert project.balance() == GRANT
    refused = project.buy(CARTOGRAPHER)
    assert refused.status_code == 409
    assert refused.json()["error"] == "nothing_to_buy"
    assert project.counts() == (2, 0, 0)


def test_purchase_then_birth_then_the_purchase_is_spent(live: Live) -> None:
    project = Project(live)
    unpaid = project.born(LAMPLIGHTER, "Wick")
    assert unpaid.status_code == 422
    assert unpaid.json()["error"] == "purchase_required"
    assert unpaid.json()["details"] == {"price": 25, "currency": "GBP"}
    bought = project.buy(LAMPLIGHTER)
    assert bought.status_code == 201, bought.text
    purchase = bought.json()
    assert purchase["template_id"] == LAMPLIGHTER
    assert (purchase["price"], purchase["currency"]) == (25, "GBP")
    assert purchase["charged"] == {
        "wallet_id": project.wallet_id,
        "amount": 25,
        "currency": "GBP",
        "balance": GRANT - 25,
    }
    assert project.ledger()[0] == (-25, "template_purchase")
    # Wrong template for the purchase: refused, and the purchase is not consumed by it.
    wrong = project.born(FERRYMAN, "Wick", purchase["purchase_id"])
    assert wrong.status_code == 422
    assert wrong.json()["error"] == "purchase_template_mismatch"
    assert project.counts() == (1, 1, 0)
    made = project.born(LAMPLIGHTER, "Wick", purchase["purchase_id"])
    assert made.status_code == 201, made.text
    assert_birth(made.json(), "Wick")
    assert made.json()["purchase_id"] == purchase["purchase_id"]
    again = project.born(LAMPLIGHTER, "Wick again", purchase["purchase_id"])
    assert again.status_code == 409
    assert again.json()["error"] == "purchase_used"
    assert project.counts() == (2, 1, 1)
    used_by = in_db(
        live,
        lambda conn: conn.execute(
            sa.select(template_purchases.c.used_by_identity_id).where(
                template_purchases.c.id == purchase["purchase_id"]
            )
        ).scalar_one(),
    )
    assert used_by == made.json()["agent"]["id"]
    assert project.balance() == GRANT - 25
    for bad in (str(uuid.uuid4()), "not-a-purchase"):
        unknown = project.born(LAMPLIGHTER, "Ghost", bad)
        assert unknown.status_code == 404
        assert unknown.json() == {"error": "not_found", "message": "Purchase not found."}


def test_another_projects_purchase_is_refused(live: Live) -> None:
    buyer = Project(live)
    thief = Project(live)
    purchase_id = buyer.buy(FERRYMAN).json()["purchase_id"]
    stolen = thief.born(FERRYMAN, "Stolen", purchase_id)
    assert stolen.status_code == 404
    assert stolen.json()["error"] == "not_found"
    assert thief.counts() == (1, 0, 0)
    assert buyer.counts() == (1, 1, 0)
    # The owner still has it.
    assert buyer.born(FERRYMAN, "Rightful", purchase_id).status_code == 201


def test_refusals_change_nothing(live: Live) -> None:
    project = Project(live)
    for body in (
        {"template_id": HEARTHKEEPER},
        {"new_name": "Nameless"},
        {"template_id": HEARTHKEEPER, "new_name": ""},
        {"template_id": HEARTHKEEPER, "new_name": "A", "price": 0},
    ):
        refused = project.post("/v1/identities/from-template", body)
        assert refused.status_code == 422, body
        assert refused.json()["error"] == "validation_error"
    for template_id in (str(uuid.uuid4()), "nope"):
        assert project.born(template_id, "A").status_code == 404
        assert project.buy(template_id).status_code == 404
    with live.client() as anonymous:
        assert anonymous.post(f"/v1/templates/{FERRYMAN}/purchase").status_code == 401
        assert (
            anonymous.post(
                "/v1/identities/from-template", json={"template_id": HEARTHKEEPER, "new_name": "A"}
            ).status_code
            == 401
        )
    assert project.counts() == (1, 0, 0)
    assert project.balance() == GRANT


def test_a_402_on_purchase_records_nothing(live: Live) -> None:
    project = Project(live)
    project.drain()
    refused = project.buy(FERRYMAN)
    assert refused.status_code == 402, refused.text
    details = dict(refused.json()["details"])
    entry = details.pop("chronicle_entry_id")
    assert details == {
        "wallet_id": project.wallet_id,
        "balance": 0,
        "required": 50,
        "currency": "GBP",
    }
    identities_before = project.counts()[0]
    assert project.counts() == (identities_before, 0, 0)
    refusals = project.get("/v1/chronicle", kind="refusal").json()["items"]
    assert [e["id"] for e in refusals] == [entry]
    assert refusals[0]["details"]["wall"] == "no_auto_retry_payout"
    assert project.born(FERRYMAN, "Unpaid").json()["error"] == "purchase_required"


# --- publishing ---------------------------------------------------------------------------------


def test_publish_buy_and_be_born_with_a_projects_voice(live: Live) -> None:
    publisher = Project(live)
    buyer = Project(live)
    voice = {
        "register": "dry and kind",
        "walls": ["private_default"],
        "subagents": [{"name": "Quill", "sigil": "q", "facet": "writes"}],
        "wake_text": "check the post",
    }
    with publisher.client() as client:
        path = f"/v1/identities/{publisher.agent_id}/expression"
        # A given expression, priced; then the identity's own voice (its effective expression).
        given = client.post(
            "/v1/templates",
            json={"name": "Scribe", "description": "a writer", "price": 30, "expression": voice},
        )
        own = client.post(
            "/v1/templates",
            json={
                "name": "Self",
                "description": "as I am",
                "price": 0,
                "identity_id": publisher.agent_id,
            },
        )
        own_expression = client.get(path).json()["effective_expression"]
    assert given.status_code == 201, given.text
    scribe = given.json()
    assert (scribe["price"], scribe["built_in"], scribe["mine"]) == (30, False, True)
    assert scribe["expression"] == voice
    assert own.status_code == 201, own.text
    assert own.json()["expression"] == own_expression
    listed = {t["id"]: t for t in buyer.get("/v1/templates", limit=200).json()["items"]}
    assert listed[scribe["id"]]["mine"] is False
    assert listed[scribe["id"]]["expression_preview"]["subagents"] == ["Quill"]
    # The publisher uses its own template without buying it, and cannot buy it.
    assert publisher.born(scribe["id"], "Own voice").status_code == 201
    assert publisher.buy(scribe["id"]).json()["error"] == "own_template"
    bought = buyer.buy(scribe["id"])
    assert bought.status_code == 201, bought.text
    assert buyer.balance() == GRANT - 30
    assert publisher.balance() == GRANT + 30
    assert publisher.ledger()[0] == (30, "template_sale")
    sold = publisher.get("/v1/chronicle", kind="note").json()["items"]
    assert "template_sold" in [e["details"]["event"] for e in sold]
    made = buyer.born(scribe["id"], "Echo", bought.json()["purchase_id"])
    assert made.status_code == 201, made.text
    expression = buyer.get(f"/v1/identities/{made.json()['agent']['id']}/expression").json()
    assert expression["effective_expression"] == voice


def test_publish_refusals(live: Live) -> None:
    project = Project(live)
    stranger = Project(live)
    base = {"name": "T", "description": "d", "price": 5}
    for body in (
        base,
        {**base, "identity_id": project.agent_id, "expression": {"register": "x"}},
        {**base, "identity_id": project.agent_id, "price": -1},
        {**base, "identity_id": project.agent_id, "price": 1_000_001},
        {**base, "identity_id": project.agent_id, "price": "5"},
        {**base, "identity_id": project.agent_id, "name": ""},
        {**base, "identity_id": project.agent_id, "extra": 1},
    ):
        refused = project.post("/v1/templates", body)
        assert refused.status_code == 422, body
        assert refused.json()["error"] == "validation_error"
    for body in (
        {**base, "identity_id": stranger.agent_id},
        {**base, "identity_id": str(uuid.uuid4())},
        {**base, "expression": {"register": "x"}, "wallet_id": stranger.wallet_id},
    ):
        refused = project.post("/v1/templates", body)
        assert refused.status_code == 404, body
        assert refused.json()["error"] == "not_found"
    mine = {t["id"] for t in project.get("/v1/templates", limit=200).json()["items"] if t["mine"]}
    assert mine == set()


# --- concurrency --------------------------------------------------------------------------------

CLAIMANTS = 8


def test_one_purchase_makes_exactly_one_identity_under_concurrency(live: Live) -> None:
    project = Project(live)
    purchase_id = project.buy(LAMPLIGHTER).json()["purchase_id"]

    def one(index: int) -> int:
        return project.born(LAMPLIGHTER, f"Racer {index}", purchase_id).status_code

    with ThreadPoolExecutor(CLAIMANTS) as pool:
        statuses = list(pool.map(one, range(CLAIMANTS)))
    assert sorted(statuses) == [201] + [409] * (CLAIMANTS - 1)
    assert project.counts() == (2, 1, 1)


# --- the OpenAPI document -----------------------------------------------------------------------


def test_template_routes_answer_as_documented(live: Live) -> None:
    api_schema = schemathesis.openapi.from_url(
        f"{live.base_url}/v1/openapi.json", config=schemathesis.Config()
    )
    project = Project(live)
    with project.client() as client:
        conforms(api_schema, "GET /v1/templates", client.get("/v1/templates"), 200)
        conforms(api_schema, "GET /v1/templates", client.get("/v1/templates?cursor=x"), 400)
        label = "GET /v1/templates/{template_id}"
        conforms(api_schema, label, client.get(f"/v1/templates/{FERRYMAN}"), 200)
        conforms(api_schema, label, client.get(f"/v1/templates/{uuid.uuid4()}"), 404)
        body = {"name": "Doc", "description": "d", "price": 1, "expression": {"register": "r"}}
        conforms(api_schema, "POST /v1/templates", client.post("/v1/templates", json=body), 201)
        conforms(api_schema, "POST /v1/templates", client.post("/v1/templates", json={}), 422)
    label = "POST /v1/templates/{template_id}/purchase"
    purchase = conforms(api_schema, label, project.buy(FERRYMAN), 201)
    conforms(api_schema, label, project.buy(HEARTHKEEPER), 409)
    conforms(api_schema, label, project.buy(str(uuid.uuid4())), 404)
    label = "POST /v1/identities/from-template"
    conforms(api_schema, label, project.born(FERRYMAN, "Doc", purchase["purchase_id"]), 201)
    conforms(api_schema, label, project.born(FERRYMAN, "Doc", purchase["purchase_id"]), 409)
    conforms(api_schema, label, project.born(FERRYMAN, "Doc"), 422)
    conforms(api_schema, label, project.born(str(uuid.uuid4()), "Doc"), 404)
    project.drain()
    conforms(api_schema, "POST /v1/templates/{template_id}/purchase", project.buy(FERRYMAN), 402)
