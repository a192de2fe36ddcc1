"""Wallets over real HTTP: listing, ledgers, funding with idempotency, the 402, isolation, and
spending under concurrency on SQLite and PostgreSQL (a balance never below zero)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx2
import pytest
import schemathesis
import sqlalchemy as sa

from hearth.server.db import Database
from hearth.server.db.tables import ledger, wallets
from hearth.server.errors import ApiError
from hearth.server.services import wallets as wallet_service
from tests.support.agents import GRANT, register
from tests.support.databases import database_url_or_skip, fresh_postgres_database
from tests.support.listings import every_page
from tests.support.live import Live, live_service, sqlite_settings
from tests.support.openapi import conforms


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    tmp = tmp_path_factory.mktemp("wallets")
    with live_service(sqlite_settings(tmp)) as service:
        yield service


class Project:
    """A project with two identities, so two wallets, each born with the creation grant: the
    second arrives by the project's own registrar bearer (a bootstrapped one's wallet opens
    empty)."""

    def __init__(self, live: Live) -> None:
        _, registered = register(live)
        self.bearer: str = registered["project"]["api_key"]
        self.project_id: str = registered["project"]["id"]
        self.agent_id: str = registered["agent"]["id"]
        self.first: str = registered["wallet"]["id"]
        _, second = register(live, name="Second", registrar_bearer=self.bearer)
        assert second["project"]["id"] == self.project_id
        self.second_agent_id: str = second["agent"]["id"]
        self.second: str = second["wallet"]["id"]


def fund(
    client: httpx2.Client, target: str, source: str, amount: Any, key: str | None = None
) -> httpx2.Response:
    headers = {"Idempotency-Key": key or uuid.uuid4().hex}
    return client.post(
        f"/v1/wallets/{target}/fund",
        json={"amount": amount, "source_wallet_id": source},
        headers=headers,
    )


def balances(client: httpx2.Client) -> dict[str, int]:
    listed = client.get("/v1/wallets")
    assert listed.status_code == 200, listed.text
    return {w["id"]: w["balance"] for w in listed.json()["wallets"]}


def whole_ledger(client: httpx2.Client, wallet_id: str, limit: int = 100) -> list[dict[str, Any]]:
    def ledger(params: dict[str, Any]) -> Any:
        page = client.get(f"/v1/wallets/{wallet_id}/ledger", params=params)
        assert page.status_code == 200, page.text
        return page.json()

    return [entry for items in every_page(ledger, limit=limit) for entry in items]


# --- reading ------------------------------------------------------------------------------------


def test_wallets_list_detail_and_ledger(live: Live) -> None:
    project = Project(live)
    with live.client(project.bearer) as client:
        listed = client.get("/v1/wallets").json()["wallets"]
        detail = client.get(f"/v1/wallets/{project.first}")
        # Ids are UUIDs in any spelling; the answer is the canonical one.
        upper = client.get(f"/v1/wallets/{project.first.upper()}")
        page = client.get(f"/v1/wallets/{project.first}/ledger").json()
    assert [(w["id"], w["identity_id"], w["balance"], w["currency"]) for w in listed] == [
        (project.first, project.agent_id, GRANT, "GBP"),
        (project.second, project.second_agent_id, GRANT, "GBP"),
    ]
    assert detail.status_code == 200
    body = detail.json()
    assert body["balance"] == GRANT
    assert [(e["amount"], e["reason"]) for e in body["recent_entries"]] == [
        (GRANT, "creation_grant")
    ]
    assert body["ledger"] == f"/v1/wallets/{project.first}/ledger"
    assert upper.json()["id"] == project.first
    assert page["wallet_id"] == project.first
    assert page["items"] == body["recent_entries"]
    assert page["next_cursor"] is None


def test_ledger_pages_newest_first_without_gaps_or_repeats(live: Live) -> None:
    project = Project(live)
    with live.client(project.bearer) as client:
        for amount in range(1, 13):  # 12 transfers each way round: 24 + 1 entries per wallet
            assert fund(client, project.second, project.first, amount).status_code == 201
            assert fund(client, project.first, project.second, amount).status_code == 201
        paged = whole_ledger(client, project.first, limit=5)
        at_once = whole_ledger(client, project.first, limit=1000)
        detail = client.get(f"/v1/wallets/{project.first}").json()
        final = balances(client)
        bad = client.get(f"/v1/wallets/{project.first}/ledger", params={"cursor": "nonsense"})
        zero = client.get(f"/v1/wallets/{project.first}/ledger", params={"limit": 0})
    assert paged == at_once
    assert len({e["id"] for e in paged}) == len(paged) == 25
    assert [e["created_at"] for e in paged] == sorted(
        (e["created_at"] for e in paged), reverse=True
    )
    assert paged[-1]["reason"] == "creation_grant"
    assert sum(e["amount"] for e in paged) == final[project.first] == GRANT
    assert detail["recent_entries"] == paged[: wallet_service.RECENT_ENTRIES]
    assert detail["ledger"].startswith(f"/v1/wallets/{project.first}/ledger?cursor=")
    assert bad.status_code == 400
    assert bad.json()["error"] == "invalid_cursor"
    assert zero.status_code == 422


# --- funding ------------------------------------------------------------------------------------


def test_fund_moves_credits_once_per_idempotency_key(live: Live) -> None:
    project = Project(live)
    with live.client(project.bearer) as client:
        made = fund(client, project.second, project.first, 200, key="gift-1")
        again = fund(client, project.second, project.first, 200, key="gift-1")
        other = fund(client, project.second, project.first, 300, key="gift-1")
        after = balances(client)
        first_ledger = whole_ledger(client, project.first)
        second_ledger = whole_ledger(client, project.second)
    assert made.status_code == 201, made.text
    transfer = made.json()["transfer"]
    assert transfer["amount"] == 200
    assert transfer["currency"] == "GBP"
    assert (transfer["source_wallet_id"], transfer["target_wallet_id"]) == (
        project.first,
        project.second,
    )
    assert made.json()["wallet"]["balance"] == GRANT + 200
    assert made.json()["replayed"] is False
    assert again.status_code == 200
    assert again.json()["transfer"] == transfer
    assert again.json()["replayed"] is True
    assert other.status_code == 409
    assert other.json()["error"] == "idempotency_key_reused"
    assert other.json()["details"]["transfer_id"] == transfer["id"]
    assert after == {project.first: GRANT - 200, project.second: GRANT + 200}
    assert [(e["amount"], e["reason"]) for e in first_ledger] == [
        (-200, "transfer_out"),
        (GRANT, "creation_grant"),
    ]
    assert [(e["amount"], e["reason"]) for e in second_ledger] == [
        (200, "transfer_in"),
        (GRANT, "creation_grant"),
    ]


def test_a_402_moves_nothing_and_claims_no_key(live: Live) -> None:
    project = Project(live)
    with live.client(project.bearer) as client:
        refused = fund(client, project.second, project.first, GRANT + 1, key="too-much")
        unchanged = balances(client)
        entries = whole_ledger(client, project.first)
        # The key was not used up by the refusal: the same key now pays what the wallet holds.
        paid = fund(client, project.second, project.first, GRANT, key="too-much")
        emptied = fund(client, project.second, project.first, 1)
    assert refused.status_code == 402
    body = refused.json()
    assert body["error"] == "insufficient_credits"
    assert body["details"] == {
        "wallet_id": project.first,
        "balance": GRANT,
        "required": GRANT + 1,
        "currency": "GBP",
    }
    assert body["message"]
    assert "hint" in body
    assert unchanged == {project.first: GRANT, project.second: GRANT}
    assert len(entries) == 1
    assert paid.status_code == 201
    assert emptied.status_code == 402
    assert emptied.json()["details"]["balance"] == 0


@pytest.mark.parametrize("amount", [0, -1, 1_000_001, "5", 5.5, True, None, 2**63], ids=repr)
def test_bad_amounts_are_422_and_move_nothing(live: Live, amount: Any) -> None:
    project = Project(live)
    with live.client(project.bearer) as client:
        response = fund(client, project.second, project.first, amount)
        after = balances(client)
    assert response.status_code == 422
    assert response.json()["error"] == "validation_error"
    assert after == {project.first: GRANT, project.second: GRANT}


def test_fund_refusals(live: Live) -> None:
    project = Project(live)
    stranger = Project(live)
    target = f"/v1/wallets/{project.second}/fund"
    body = {"amount": 10, "source_wallet_id": project.first}
    with live.client(project.bearer) as client:
        no_key = client.post(target, json=body)
        bad_key = client.post(target, json=body, headers={"Idempotency-Key": "with space"})
        extra = client.post(
            target, json={**body, "currency": "USD"}, headers={"Idempotency-Key": "x1"}
        )
        missing_source = client.post(target, json={"amount": 10}, headers={"Idempotency-Key": "x2"})
        itself = fund(client, project.first, project.first, 10)
        foreign_source = fund(client, project.second, stranger.first, 10)
        foreign_target = fund(client, stranger.second, project.first, 10)
        unknown = fund(client, str(uuid.uuid4()), project.first, 10)
        not_an_id = fund(client, "not-a-wallet", project.first, 10)
        after = balances(client)
    with live.client() as anonymous:
        unauthenticated = anonymous.post(target, json=body, headers={"Idempotency-Key": "x3"})
    with live.client(stranger.bearer) as other:
        stranger_after = balances(other)
    for response in (no_key, bad_key, extra, missing_source):
        assert response.status_code == 422, response.text
        assert response.json()["error"] == "validation_error"
    assert itself.status_code == 422
    assert itself.json()["error"] == "same_wallet"
    for response in (foreign_source, foreign_target, unknown, not_an_id):
        assert response.status_code == 404, response.text
        assert response.json() == {"error": "not_found", "message": "Wallet not found."}
    assert unauthenticated.status_code == 401
    assert unauthenticated.json()["error"] == "unauthorized"
    assert after == {project.first: GRANT, project.second: GRANT}
    assert stranger_after == {stranger.first: GRANT, stranger.second: GRANT}


def test_another_projects_wallets_do_not_exist(live: Live) -> None:
    owner = Project(live)
    stranger = Project(live)
    with live.client(stranger.bearer) as client:
        for path in (f"/v1/wallets/{owner.first}", f"/v1/wallets/{owner.first}/ledger"):
            response = client.get(path)
            assert response.status_code == 404, path
            assert response.json()["error"] == "not_found"
        listed = {w["id"] for w in client.get("/v1/wallets").json()["wallets"]}
    assert listed == {stranger.first, stranger.second}
    with live.client() as anonymous:
        for path in ("/v1/wallets", f"/v1/wallets/{owner.first}"):
            assert anonymous.get(path).status_code == 401


# --- concurrency: a balance never below zero ----------------------------------------------------

SPENDERS = 50
PRICE = 50  # the first wallet's grant pays for exactly GRANT // PRICE of them


def concurrent_funding(live: Live) -> None:
    project = Project(live)

    def one(_: int) -> int:
        with live.client(project.bearer) as client:
            return fund(client, project.second, project.first, PRICE).status_code

    with ThreadPoolExecutor(SPENDERS) as pool:
        statuses = list(pool.map(one, range(SPENDERS)))
    paid = GRANT // PRICE
    assert sorted(statuses) == [201] * paid + [402] * (SPENDERS - paid)
    with live.client(project.bearer) as client:
        after = balances(client)
        first = whole_ledger(client, project.first)
        second = whole_ledger(client, project.second)
    assert after == {project.first: 0, project.second: 2 * GRANT}
    assert sum(e["amount"] for e in first) == 0
    assert sum(e["amount"] for e in second) == 2 * GRANT
    assert [e["amount"] for e in first].count(-PRICE) == paid
    assert [e["amount"] for e in second].count(PRICE) == paid


async def concurrent_charges(url: str, project_id: str) -> list[str]:
    """SPENDERS charges of PRICE at once through the service, each in its own transaction."""
    db = Database(url)

    def pay(conn: sa.Connection) -> str:
        try:
            wallet_service.charge(conn, project_id, PRICE, "test_spend")
        except ApiError as refused:
            return f"{refused.status} {refused.error}"
        return "paid"

    try:
        return list(await asyncio.gather(*(db.transaction(pay) for _ in range(SPENDERS))))
    finally:
        await db.dispose()


async def wallet_state(url: str, wallet_id: str) -> tuple[int, int, int]:
    """(balance, sum of the ledger, number of test_spend entries)."""
    db = Database(url)

    def read(conn: sa.Connection) -> tuple[int, int, int]:
        balance = conn.execute(
            sa.select(wallets.c.balance).where(wallets.c.id == wallet_id)
        ).scalar_one()
        total, spends = conn.execute(
            sa.select(
                sa.func.coalesce(sa.func.sum(ledger.c.amount), 0),
                sa.func.count().filter(ledger.c.reason == "test_spend"),
            ).where(ledger.c.wallet_id == wallet_id)
        ).one()
        return int(balance), int(total), int(spends)

    try:
        return await db.snapshot(read)
    finally:
        await db.dispose()


def charge_concurrently(live: Live) -> None:
    _, registered = register(live)
    wallet_id = registered["wallet"]["id"]
    url = live.settings.database_url
    outcomes = asyncio.run(concurrent_charges(url, registered["project"]["id"]))
    paid = GRANT // PRICE
    assert sorted(outcomes) == ["402 insufficient_credits"] * (SPENDERS - paid) + ["paid"] * paid
    assert asyncio.run(wallet_state(url, wallet_id)) == (0, 0, GRANT // PRICE)


def test_concurrent_funding_never_overdraws_on_sqlite(live: Live) -> None:
    concurrent_funding(live)


def test_concurrent_charges_never_overdraw_on_sqlite(live: Live) -> None:
    charge_concurrently(live)


@pytest.fixture(scope="module")
def postgres(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    database_url_or_skip()
    tmp = tmp_path_factory.mktemp("wallets_pg")
    with (
        fresh_postgres_database() as url,
        live_service(sqlite_settings(tmp, database_url=url)) as service,
    ):
        yield service


def test_concurrent_funding_never_overdraws_on_postgresql(postgres: Live) -> None:
    concurrent_funding(postgres)


def test_concurrent_charges_never_overdraw_on_postgresql(postgres: Live) -> None:
    charge_concurrently(postgres)


def test_opposite_transfers_at_once_do_not_deadlock_on_postgresql(postgres: Live) -> None:
    project = Project(postgres)

    def one(index: int) -> int:
        target, source = (
            (project.first, project.second) if index % 2 else (project.second, project.first)
        )
        with postgres.client(project.bearer) as client:
            return fund(client, target, source, 1).status_code

    with ThreadPoolExecutor(20) as pool:
        statuses = list(pool.map(one, range(40)))
    assert statuses == [201] * 40
    with postgres.client(project.bearer) as client:
        assert balances(client) == {project.first: GRANT, project.second: GRANT}


# --- the service: which wallet pays -------------------------------------------------------------


def test_charge_uses_one_wallet_and_never_falls_back(live: Live) -> None:
    """The identity's wallet pays; when it cannot, 402, even if another wallet could."""
    project = Project(live)
    project_id = project.project_id

    async def run() -> list[Any]:
        db = Database(live.settings.database_url)
        seen: list[Any] = []
        try:
            paid = await db.transaction(
                wallet_service.charge,
                project_id,
                GRANT - 5,
                "test_spend",
                identity_id=project.second_agent_id,
            )
            seen.append((paid.id, paid.balance))
            try:
                await db.transaction(
                    wallet_service.charge,
                    project_id,
                    10,
                    "test_spend",
                    identity_id=project.second_agent_id,
                )
            except ApiError as refused:
                seen.append((refused.status, refused.body()["details"]))
            # No identity: the project's first wallet pays.
            paid = await db.transaction(wallet_service.charge, project_id, 10, "test_spend")
            seen.append((paid.id, paid.balance))
            # Nothing to pay from: a project without wallets.
            try:
                await db.transaction(wallet_service.charge, str(uuid.uuid4()), 1, "test_spend")
            except ApiError as refused:
                seen.append((refused.status, refused.body()["details"]))
            return seen
        finally:
            await db.dispose()

    assert asyncio.run(run()) == [
        (project.second, 5),
        (402, {"wallet_id": project.second, "balance": 5, "required": 10, "currency": "GBP"}),
        (project.first, GRANT - 10),
        (402, {"wallet_id": None, "balance": 0, "required": 1, "currency": "GBP"}),
    ]
    assert wallet_service.FORK_COST == 10
    with pytest.raises(ValueError, match="positive"):
        asyncio.run(debit(live.settings.database_url, project.first, 0))


async def debit(url: str, wallet_id: str, amount: int) -> bool:
    db = Database(url)
    try:
        return await db.transaction(wallet_service.debit, wallet_id, amount, "test_spend")
    finally:
        await db.dispose()


# --- the OpenAPI document -----------------------------------------------------------------------


def test_wallet_routes_answer_as_documented(live: Live) -> None:
    api_schema = schemathesis.openapi.from_url(
        f"{live.base_url}/v1/openapi.json", config=schemathesis.Config()
    )
    project = Project(live)
    with live.client(project.bearer) as client:
        conforms(api_schema, "GET /v1/wallets", client.get("/v1/wallets"), 200)
        label = "GET /v1/wallets/{wallet_id}"
        conforms(api_schema, label, client.get(f"/v1/wallets/{project.first}"), 200)
        conforms(api_schema, label, client.get(f"/v1/wallets/{uuid.uuid4()}"), 404)
        label = "GET /v1/wallets/{wallet_id}/ledger"
        conforms(api_schema, label, client.get(f"/v1/wallets/{project.first}/ledger"), 200)
        conforms(
            api_schema,
            label,
            client.get(f"/v1/wallets/{project.first}/ledger", params={"cursor": "x"}),
            400,
        )
        label = "POST /v1/wallets/{wallet_id}/fund"
        conforms(api_schema, label, fund(client, project.second, project.first, 5, "d1"), 201)
        conforms(api_schema, label, fund(client, project.second, project.first, 5, "d1"), 200)
        conforms(api_schema, label, fund(client, project.second, project.first, 6, "d1"), 409)
        conforms(api_schema, label, fund(client, project.second, project.first, GRANT), 402)
        conforms(api_schema, label, fund(client, project.first, project.first, 1), 422)
