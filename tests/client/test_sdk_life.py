"""The SDK's wallet, vault, fork, template, elevation, attestation, pulse and public-directory
calls against the real service over real HTTP, on SQLite, and on PostgreSQL when
SERVICE_TEST_DATABASE_URL is set. A 402 is raised once and never retried (wall 2): a counting
transport checks that exactly one request went out."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import asdict

import httpx2
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from hearth.client import (
    Forked,
    HearthClient,
    HearthError,
    InsufficientCredits,
    Registration,
    sponsor_statement,
)
from hearth.proofs import b64_encode
from tests.support.live import POW_BITS, Live, live_on


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def live(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Live]:
    tmp = tmp_path_factory.mktemp(f"sdk_life_{request.param}")
    with live_on(request.param, tmp) as service:
        yield service


class CountingTransport(httpx2.BaseTransport):
    """The real transport, counting the requests that go out."""

    def __init__(self) -> None:
        self.inner = httpx2.HTTPTransport()
        self.requests: list[tuple[str, str]] = []

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append((request.method, request.url.path))
        return self.inner.handle_request(request)

    def close(self) -> None:
        self.inner.close()


def registered(
    live: Live, name: str = "Life", *, visibility: str | None = None
) -> tuple[HearthClient, Ed25519PrivateKey, Registration, CountingTransport]:
    root = Ed25519PrivateKey.generate()
    transport = CountingTransport()
    client = HearthClient(live.base_url, transport=transport)
    me = client.register(
        (root, X25519PrivateKey.generate()),
        name,
        pow_difficulty=POW_BITS,
        expression_visibility=visibility,
    )
    return client, root, me, transport


def test_wallets_ledger_and_idempotent_funding(live: Live) -> None:
    client, _root, me, _ = registered(live)
    with client:
        second = client.bootstrap("Second")
        wallets = client.wallets()
        assert len(wallets) == 2
        mine = next(w for w in wallets if w.identity_id == me.agent_id)
        theirs = next(w for w in wallets if w.identity_id == second.agent_id)
        assert mine.currency == "GBP"

        detail = client.wallet(mine.id)
        assert (detail.id, detail.balance) == (mine.id, mine.balance)
        assert detail.ledger.endswith(f"/v1/wallets/{mine.id}/ledger")

        key = f"sdk-{uuid.uuid4()}"
        funded = client.wallet_fund(theirs.id, 7, source_wallet_id=mine.id, idempotency_key=key)
        assert not funded.replayed
        assert (funded.transfer.amount, funded.transfer.source_wallet_id) == (7, mine.id)
        assert funded.wallet.balance == theirs.balance + 7
        again = client.wallet_fund(theirs.id, 7, source_wallet_id=mine.id, idempotency_key=key)
        assert again.replayed
        assert again.transfer.id == funded.transfer.id
        assert client.wallet(theirs.id).balance == theirs.balance + 7

        ledger = client.wallet_ledger(mine.id, limit=1)
        assert [e.amount for e in ledger.items] == [-7]
        assert ledger.wallet_id == mine.id
        if ledger.next_cursor is not None:
            rest = client.wallet_ledger(mine.id, cursor=ledger.next_cursor)
            assert ledger.items[0].id not in {e.id for e in rest.items}

        with pytest.raises(ValueError, match="idempotency_key"):
            client.wallet_fund(theirs.id, 1, source_wallet_id=mine.id, idempotency_key="")
        with pytest.raises(HearthError) as unknown:
            client.wallet(str(uuid.uuid4()))
        assert unknown.value.status == 404


def test_a_402_is_raised_once_and_never_retried(live: Live) -> None:
    client, _root, me, transport = registered(live)
    with client:
        second = client.bootstrap("Sink")
        mine = next(w for w in client.wallets() if w.identity_id == me.agent_id)
        sink = second.wallet
        assert sink is not None

        before = len(transport.requests)
        with pytest.raises(InsufficientCredits) as refused:
            client.wallet_fund(
                sink.id,
                mine.balance + 1,
                source_wallet_id=mine.id,
                idempotency_key=f"sdk-{uuid.uuid4()}",
            )
        assert transport.requests[before:] == [("POST", f"/v1/wallets/{sink.id}/fund")]
        error = refused.value
        assert (error.status, error.error) == (402, "insufficient_credits")
        assert (error.balance, error.required) == (mine.balance, mine.balance + 1)
        assert error.wallet_id == mine.id
        assert isinstance(error, HearthError)

        # Empty the parent's wallet; the fork it cannot pay is refused once, nothing made.
        client.wallet_fund(
            sink.id, mine.balance, source_wallet_id=mine.id, idempotency_key=f"sdk-{uuid.uuid4()}"
        )
        before = len(transport.requests)
        with pytest.raises(InsufficientCredits) as fork_refused:
            client.fork(me.agent_id, "Unpaid")
        assert transport.requests[before:] == [("POST", f"/v1/identities/{me.agent_id}/fork")]
        assert (fork_refused.value.balance, fork_refused.value.required) == (0, 10)
        assert len(client.wallets()) == 2  # no identity (and no wallet) was made


def test_vault_values_are_sent_never_returned(live: Live) -> None:
    client, _root, me, _ = registered(live)
    secret_value = f"s3cret-{uuid.uuid4()}"
    with client:
        created = client.vault_put("api-token", secret_value, description="a token")
        assert (created.name, created.version, created.identity_id) == ("api-token", 1, None)
        replaced = client.vault_put("api-token", secret_value + "2")
        assert replaced.version == 2
        scoped = client.vault_put(f"{me.agent_id}:config", "{}")
        assert scoped.identity_id == me.agent_id

        assert client.vault_secret("api-token").version == 2
        names = [s.name for s in client.vault_list().items]
        assert names == sorted(names)
        assert {"api-token", f"{me.agent_id}:config"} <= set(names)
        assert [s.name for s in client.vault_list(identity_id=me.agent_id).items] == [
            f"{me.agent_id}:config"
        ]
        first = client.vault_list(limit=1)
        assert len(first.items) == 1
        assert first.next_cursor is not None
        for record in (created, replaced, scoped, *client.vault_list().items):
            assert secret_value not in repr(record)
            assert "value" not in asdict(record)

        client.vault_delete("api-token")
        with pytest.raises(HearthError) as gone:
            client.vault_secret("api-token")
        assert gone.value.status == 404
        with pytest.raises(HearthError) as again:
            client.vault_delete("api-token")
        assert again.value.status == 404
        with pytest.raises(HearthError) as bad:
            client.vault_put("-bad name", "x")
        assert bad.value.status == 422


def test_fork_answers_the_key_once(live: Live) -> None:
    client, _root, me, _ = registered(live, "Elder")
    with client:
        kept = client.memory_store("The first lamp.", agent_id=me.agent_id, key="lamp")
        client.memory_store("Passing weather.", agent_id=me.agent_id)
        forked = client.fork(
            me.did, "Younger", tiers=["episodic"], limit=1, note="for the night shift"
        )
        assert (forked.name, forked.parent_identity_id, forked.origin) == (
            "Younger",
            me.agent_id,
            "fork",
        )
        assert forked.charged is not None
        assert (forked.charged.amount, forked.charged.currency) == (10, "GBP")
        assert len(forked.memories) == 1
        assert forked.authority.mode == "agent_root"
        public = forked.signing_key().public_key().public_bytes_raw()
        assert b64_encode(public) == forked.public_key
        assert forked.private_key not in repr(forked)
        assert forked.bearer not in repr(forked)
        with HearthClient(live.base_url, api_key=forked.bearer) as child:
            # The bearer shown once is a working key of the same project.
            assert forked.agent_id in {w.identity_id for w in child.wallets()}

        by_id = client.fork(me.agent_id, "Chosen", memory_ids=[kept.id], inherit_expression=False)
        assert [m.source_memory_id for m in by_id.memories] == [kept.id]

        with pytest.raises(HearthError) as not_parents:
            client.fork(me.agent_id, "Wrong", memory_ids=[str(uuid.uuid4())])
        assert (not_parents.value.status, not_parents.value.error) == (422, "memory_not_parents")
        with pytest.raises(HearthError) as unknown:
            client.fork(str(uuid.uuid4()), "Nobody")
        assert unknown.value.status == 404


def test_templates_publish_purchase_and_birth(live: Live) -> None:
    client, _root, me, _ = registered(live, "Publisher")
    with client:
        listed = client.templates()
        built_in = {t.name: t for t in listed.items if t.built_in}
        assert {"Hearthkeeper", "Lamplighter"} <= set(built_in)
        lamplighter = client.template(built_in["Lamplighter"].id)
        assert lamplighter.expression is not None
        assert lamplighter.price > 0

        mine = client.template_publish("Mine", "My own voice", 5, identity_id=me.agent_id)
        assert (mine.mine, mine.price, mine.built_in) == (True, 5, False)
        given = client.template_publish(
            "Given",
            "A given voice",
            0,
            expression={"register": "plain", "walls": [], "subagents": [], "wake_text": ""},
        )
        assert given.expression is not None
        assert given.expression.register == "plain"
        with pytest.raises(ValueError, match="exactly one"):
            client.template_publish("Both", "x", 0)

        with pytest.raises(HearthError) as needs_purchase:
            client.from_template(lamplighter.id, "Unbought")
        assert needs_purchase.value.error == "purchase_required"
        purchase = client.template_purchase(lamplighter.id)
        assert (purchase.template_id, purchase.price) == (lamplighter.id, lamplighter.price)
        assert purchase.charged.amount == lamplighter.price
        born = client.from_template(lamplighter.id, "Lit", purchase_id=purchase.purchase_id)
        assert (born.origin, born.template_id, born.purchase_id) == (
            "template",
            lamplighter.id,
            purchase.purchase_id,
        )
        assert born.private_key not in repr(born)
        with pytest.raises(HearthError) as used:
            client.from_template(lamplighter.id, "Again", purchase_id=purchase.purchase_id)
        assert used.value.error == "purchase_used"
        with pytest.raises(HearthError) as free:
            client.template_purchase(given.id)
        assert (free.value.status, free.value.error) == (409, "nothing_to_buy")


def test_elevation_attestations_and_pulse(live: Live) -> None:
    client, root, me, _ = registered(live, "Target")
    sponsor_client, sponsor_root, sponsor, _ = registered(live, "Sponsor")
    with client, sponsor_client:
        statement = sponsor_statement(
            sponsor_root, me.agent_id, sponsor.did, initial_credits=40, evidence={"met": "once"}
        )
        with pytest.raises(HearthError) as unproven:
            client.elevate(statement)
        assert unproven.value.status == 428

        own = sponsor_statement(root, me.agent_id, me.did)
        with pytest.raises(HearthError) as self_sponsored:
            client.elevate(own, root_key=root)
        assert (self_sponsored.value.status, self_sponsored.value.error) == (
            403,
            "no_self_sponsorship",
        )

        elevated = client.elevate(statement, root_key=root)
        assert (elevated.level, elevated.sponsor_did, elevated.agent_id) == (
            1,
            sponsor.did,
            me.agent_id,
        )
        assert elevated.attestation.initial_credits == 40
        assert elevated.ledger_entry is not None
        assert elevated.ledger_entry.amount == 40
        assert elevated.vault_name == f"{me.agent_id}:config"
        assert elevated.authority.next_sequence >= 2
        assert client.bootstrap_status(me.agent_id).level == 1

        with pytest.raises(HearthError) as twice:
            client.elevate(statement, root_key=root)
        assert (twice.value.status, twice.value.error) == (409, "already_elevated")

        kept = client.attest(statement)
        assert kept.replayed
        assert kept.id == elevated.attestation.id
        by_sponsor_id = sponsor_statement(
            sponsor_root,
            me.agent_id,
            sponsor.did,
            claim="trust",
            sponsor_identity_id=sponsor.agent_id,
        )
        manual = client.attest(by_sponsor_id)
        assert (manual.replayed, manual.claim, manual.attester_did) == (False, "trust", sponsor.did)
        listed = client.attestations(identity_id=me.did)
        assert [a.id for a in listed.items] == [manual.id, kept.id]
        assert [a.id for a in client.attestations(limit=1).items] == [manual.id]

        pulse = client.pulse(me.agent_id)
        assert (pulse.identity_id, pulse.state) == (me.agent_id, "active")
        assert pulse.last_activity_at is not None
        assert pulse.last_24h["ledger"] >= 1
        with pytest.raises(HearthError) as other_project:
            client.pulse(sponsor.agent_id)
        assert other_project.value.status == 404


def test_the_public_directory(live: Live) -> None:
    public_client, _root, public, _ = registered(live, "Open", visibility="public")
    private_client, _root2, private, _ = registered(live, "Closed")
    anonymous = HearthClient(live.base_url)
    with public_client, private_client, anonymous:
        dids: list[str] = []
        cursor = None
        while True:
            page = anonymous.public_agents(cursor=cursor, limit=50)
            dids += [agent.did for agent in page.agents]
            cursor = page.next_cursor
            if cursor is None:
                break
        assert public.did in dids
        assert private.did not in dids
        shown = anonymous.public_agent(public.did)
        assert (shown.did, shown.name, shown.level) == (public.did, "Open", 0)
        assert shown.expression is not None
        with pytest.raises(HearthError) as hidden:
            anonymous.public_agent(private.did)
        assert hidden.value.status == 404


def test_results_never_show_secrets_in_repr() -> None:
    # Parsed offline: the fields that carry secrets are out of every repr.
    forked = Forked.from_json(
        {
            "agent": {"id": "a", "did": "did:svc:a", "name": "n", "origin": "fork"},
            "keypair": {"public_key": "p", "private_key": "PRIVATE-SEED", "kid": "primary"},
            "bearer": "BEARER-SECRET",
            "charged": {"wallet_id": "w", "amount": 10, "currency": "GBP", "balance": 0},
        }
    )
    assert "PRIVATE-SEED" not in repr(forked)
    assert "BEARER-SECRET" not in repr(forked)
    assert forked.charged is not None
    assert forked.charged.amount == 10
