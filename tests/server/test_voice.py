"""The wake's voice (GET /v1/wake/voice) and the change feed behind it, over real HTTP.

Streams are read by a thread per stream (``Voice``) that parses the SSE wire format into
events; the test thread makes mutations and waits for the events they cause. Waits have
generous limits and never measure time: a change is in order after the mutation that made it,
so "the next change is X" also proves that nothing was sent in between.

Across processes: two ``hearth serve`` processes share one database and one Redis, and a stream
on one hears a mutation made through the other (needs SERVICE_TEST_REDIS_URL; under CI=true a
missing Redis fails instead of skipping).
"""

from __future__ import annotations

import asyncio
import json
import queue
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest

from hearth.adds import cid_for_bytes
from hearth.server.app import create_app
from hearth.server.changes import CHANGES, KEYS, MUTATING, SILENT
from hearth.server.events import Change, EventBus
from hearth.server.settings import Settings
from tests.support.agents import register
from tests.support.databases import database_url_or_skip, fresh_postgres_database, shared_database
from tests.support.live import Live, free_port, live_service, sqlite_settings
from tests.support.manifests import manifest_bytes
from tests.support.memories import Owner
from tests.support.polling import eventually
from tests.support.redis_server import redis_url_or_skip
from tests.support.served import hearth_serve, serve_env

WELCOME_S = 0.3  # short, so that a test sees welcomes; nothing asserts how long it took
WAIT_S = 20.0  # the most any one event may take to arrive before the test fails

# Routes in CHANGES that other engineers are still writing: the "every entry is a real route"
# check skips the ones named here until they land (fork, from-template, templates, purchase,
# elevate, attestations and the runtimes were listed and have landed). A listed route that
# exists fails the test, so an entry cannot outlive its reason: remove it when it lands.
PENDING_ROUTES: set[tuple[str, str]] = set()


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def live(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Live]:
    tmp = tmp_path_factory.mktemp("voice")
    if request.param == "sqlite":
        with live_service(sqlite_settings(tmp, voice_welcome_seconds=WELCOME_S)) as service:
            yield service
        return
    database_url_or_skip()
    with fresh_postgres_database() as url:
        settings = sqlite_settings(tmp, database_url=url, voice_welcome_seconds=WELCOME_S)
        with live_service(settings) as service:
            yield service


# --- reading a stream ---------------------------------------------------------------------------


class Voice:
    """One SSE connection, read by a thread into a queue of (event, data) pairs."""

    def __init__(self, base_url: str, bearer: str | None, identity_id: str | None) -> None:
        headers = {"Authorization": f"Bearer {bearer}"} if bearer else {}
        # The read timeout only bounds a silent connection: welcomes come every WELCOME_S.
        self.client = httpx2.Client(base_url=base_url, headers=headers, timeout=WAIT_S)
        self.params = {"identity_id": identity_id} if identity_id is not None else {}
        self.events: queue.Queue[tuple[str, Any]] = queue.Queue()
        self.response: queue.Queue[httpx2.Response] = queue.Queue()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            with self.client.stream("GET", "/v1/wake/voice", params=self.params) as response:
                if response.status_code != 200:
                    response.read()
                self.response.put(response)
                if response.status_code != 200:
                    return
                event, data = "message", []
                for line in response.iter_lines():
                    if self.stop.is_set():
                        return
                    if line == "":
                        if data:
                            self.events.put((event, json.loads("\n".join(data))))
                        event, data = "message", []
                    elif line.startswith("event:"):
                        event = line[len("event:") :].strip()
                    elif line.startswith("data:"):
                        data.append(line[len("data:") :].strip())
                self.events.put(("<closed>", None))
        except httpx2.HTTPError as exc:
            self.events.put(("<error>", repr(exc)))
        finally:
            self.client.close()

    def status(self) -> httpx2.Response:
        return self.response.get(timeout=WAIT_S)

    def next(self, event: str = "change") -> Any:
        """The data of the next `event` (welcomes are skipped unless asked for)."""
        deadline = time.monotonic() + WAIT_S
        while True:
            name, data = self.events.get(timeout=max(deadline - time.monotonic(), 0.01))
            assert not name.startswith("<"), (name, data)
            if name == event:
                return data
            assert name == "welcome", (name, data)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=WAIT_S)
        assert not self.thread.is_alive()


@contextmanager
def voice(live_url: str, bearer: str | None, identity_id: str | None) -> Iterator[Voice]:
    stream = Voice(live_url, bearer, identity_id)
    try:
        yield stream
    finally:
        stream.close()


def connected(stream: Voice) -> Any:
    assert stream.status().status_code == 200
    return stream.next("connected")


# --- the stream ---------------------------------------------------------------------------------


def test_stream_connects_welcomes_and_is_decorated(live: Live) -> None:
    owner = Owner.new(live)
    with voice(live.base_url, owner.reg["project"]["api_key"], owner.did) as stream:
        response = stream.status()
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        assert response.headers["x-welcomed"] == "5"
        hello = stream.next("connected")
        # The DID was accepted and answered as the canonical id.
        assert hello == {"identity_id": owner.id, "keys": list(KEYS)}
        assert {"you", "you_remember", "you_own", "you_keep"} <= set(hello["keys"])
        welcome = stream.next("welcome")
        assert welcome["axiom_id"] == 5
        assert welcome["promise"] == "welcome"
        assert welcome["interval_seconds"] == WELCOME_S
        assert stream.next("welcome")["at"] >= welcome["at"]


def test_stream_refusals_come_before_the_stream(live: Live) -> None:
    owner, other = Owner.new(live), Owner.new(live)
    bearer = owner.reg["project"]["api_key"]
    with live.client() as anonymous:
        missing = anonymous.get("/v1/wake/voice", params={"identity_id": owner.id})
    assert missing.status_code == 401
    assert missing.json()["error"] == "unauthorized"
    assert missing.headers["x-welcomed"] == "5"
    with live.client(bearer) as client:
        theirs = client.get("/v1/wake/voice", params={"identity_id": other.id})
        unknown = client.get("/v1/wake/voice", params={"identity_id": str(uuid.uuid4())})
        nonsense = client.get("/v1/wake/voice", params={"identity_id": "not-an-id"})
        absent = client.get("/v1/wake/voice")
    for refused in (theirs, unknown, nonsense):
        assert refused.status_code == 404, refused.text
        assert refused.headers["content-type"].startswith("application/json")
        assert refused.json()["error"] == "not_found"
    assert absent.status_code == 422


def test_subscription_ends_when_the_client_goes_away(live: Live) -> None:
    owner = Owner.new(live)
    bus: EventBus = live.app.state.hearth.events
    before = bus.subscribers
    stream = Voice(live.base_url, owner.reg["project"]["api_key"], owner.id)
    connected(stream)
    assert bus.subscribers == before + 1
    stream.close()
    eventually(lambda: bus.subscribers == before, "the subscriber to go", WAIT_S)


# --- the change feed ----------------------------------------------------------------------------


def root_call(owner: Owner, method: str, path: str, body: Any) -> httpx2.Response:
    return owner.call(method, path, body, proof=True)


def test_each_mutation_produces_its_change(live: Live) -> None:
    owner = Owner.new(live)
    bearer = owner.reg["project"]["api_key"]
    first_wallet = owner.reg["wallet"]["id"]
    with voice(live.base_url, bearer, owner.id) as stream, live.client(bearer) as client:
        connected(stream)

        # Another identity of the same project is born: its change is bound to it, not here.
        born = client.post("/v1/bootstrap", json={"name": "Second"})
        assert born.status_code == 201
        second_id, second_wallet = born.json()["agent"]["id"], born.json()["wallet"]["id"]
        # Its wallet opens empty; funding it is the second identity's change, not this one's.
        seeded = client.post(
            f"/v1/wallets/{second_wallet}/fund",
            json={"amount": 50, "source_wallet_id": first_wallet},
            headers={"Idempotency-Key": str(uuid.uuid4())},
        )
        assert seeded.status_code == 201, seeded.text

        memory = owner.store("the first light", agent_id=owner.id)
        change = stream.next()
        assert change["key"] == "you_remember"
        assert change["kind"] == "memory_stored"
        assert change["identity_id"] == owner.id
        assert change["memory_id"] == memory["id"]
        assert change["tier"] == "episodic"
        assert "content" not in change

        elevated = owner.elevate(memory["id"], {"tier": "foundational"})
        assert elevated.status_code == 200, elevated.text
        change = stream.next()
        assert (change["key"], change["kind"], change["memory_id"], change["tier"]) == (
            "you_remember",
            "memory_elevated",
            memory["id"],
            "foundational",
        )

        expression = {"register": "plain", "walls": ["no lies"], "subagents": [], "wake_text": ""}
        put = root_call(owner, "PUT", f"/v1/identities/{owner.id}/expression", expression)
        assert put.status_code == 200, put.text
        change = stream.next()
        assert (change["key"], change["kind"], change["identity_id"]) == (
            "you",
            "expression_updated",
            owner.id,
        )

        episodic = owner.store("a passing thought", agent_id=owner.id)
        assert stream.next()["kind"] == "memory_stored"
        deleted = owner.call("DELETE", f"/v1/memories/{episodic['id']}")
        assert deleted.status_code == 204, deleted.text
        change = stream.next()
        assert (change["kind"], change["identity_id"], change["memory_id"]) == (
            "memory_deleted",
            owner.id,
            episodic["id"],
        )

        key = str(uuid.uuid4())
        headers = {"Idempotency-Key": key}
        funded = client.post(
            f"/v1/wallets/{first_wallet}/fund",
            json={"amount": 7, "source_wallet_id": second_wallet},
            headers=headers,
        )
        assert funded.status_code == 201, funded.text
        change = stream.next()
        assert change["key"] == "you_own"
        assert change["kind"] == "wallet_funded"
        assert change["identity_id"] == owner.id
        assert change["wallet_id"] == first_wallet
        assert change["source_wallet_id"] == second_wallet
        assert change["transfer_id"] == funded.json()["transfer"]["id"]
        assert change["amount"] == 7

        # A replayed transfer changes nothing, so it says nothing.
        replay = client.post(
            f"/v1/wallets/{first_wallet}/fund",
            json={"amount": 7, "source_wallet_id": second_wallet},
            headers=headers,
        )
        assert replay.status_code == 200

        secret = "s3cret-value-never-sent"
        stored = client.put(f"/v1/vault/{owner.id}:config", json={"value": secret})
        assert stored.status_code == 201, stored.text
        change = stream.next()
        assert (change["key"], change["kind"], change["identity_id"], change["name"]) == (
            "you_keep",
            "vault_secret_stored",
            owner.id,
            f"{owner.id}:config",
        )
        assert change["version"] == 1
        assert secret not in json.dumps(change)
        assert client.delete(f"/v1/vault/{owner.id}:config").status_code == 204
        change = stream.next()
        assert (change["kind"], change["identity_id"]) == ("vault_secret_deleted", owner.id)

        # Project-level changes reach every identity's stream.
        assert client.put("/v1/vault/shared", json={"value": secret}).status_code == 201
        change = stream.next()
        assert (change["kind"], change["identity_id"], change["name"]) == (
            "vault_secret_stored",
            None,
            "shared",
        )

        created = client.post("/v1/keys", json={"name": "ci"})
        assert created.status_code == 201
        change = stream.next()
        assert (change["key"], change["kind"], change["key_id"]) == (
            "you",
            "key_created",
            created.json()["id"],
        )
        assert created.json()["api_key"] not in json.dumps(change)
        assert client.delete(f"/v1/keys/{created.json()['id']}").status_code == 204
        change = stream.next()
        assert (change["kind"], change["key_id"]) == ("key_revoked", created.json()["id"])

        block = b"ciphertext and its tag " * 4
        held = client.put(
            f"/v1/adds/blocks/{cid_for_bytes(block)}",
            content=block,
            headers={"Content-Type": "application/octet-stream"},
        )
        assert held.status_code == 201, held.text
        change = stream.next()
        assert (change["key"], change["kind"], change["cid"], change["size"]) == (
            "you_keep",
            "adds_block_stored",
            cid_for_bytes(block),
            len(block),
        )

        published, _ = manifest_bytes()
        document = client.post(
            "/v1/adds/documents",
            content=published.manifest.canonical,
            headers={"Content-Type": "application/json"},
        )
        assert document.status_code == 201, document.text
        change = stream.next()
        assert (change["kind"], change["cid"], change["document_kind"]) == (
            "adds_document_stored",
            published.manifest.cid,
            "manifest",
        )
        # The same document again is already held: no change.
        again = client.post("/v1/adds/documents", content=published.manifest.canonical)
        assert again.status_code == 200

        backup = {"agent_id": owner.id, "blob_base64": "AAAA", "key_derivation": "argon2id-v1"}
        assert client.post("/v1/identity/backup", json=backup).status_code == 201
        change = stream.next()
        assert (change["key"], change["kind"], change["identity_id"]) == (
            "you_keep",
            "backup_stored",
            owner.id,
        )

    # The second identity's stream hears its own changes and the project's, not the first's.
    with voice(live.base_url, bearer, second_id) as stream, live.client(bearer) as client:
        connected(stream)
        owner.store("only the first's", agent_id=owner.id)
        assert client.put(f"/v1/vault/{second_id}:mine", json={"value": "x"}).status_code == 201
        change = stream.next()
        assert (change["kind"], change["identity_id"]) == ("vault_secret_stored", second_id)


def test_refused_mutations_produce_no_change(live: Live) -> None:
    owner = Owner.new(live)
    bearer = owner.reg["project"]["api_key"]
    wallet = owner.reg["wallet"]["id"]
    with voice(live.base_url, bearer, owner.id) as stream, live.client(bearer) as client:
        connected(stream)
        # 402: the source cannot pay (and a wallet cannot fund itself from nothing).
        poor = client.post(
            f"/v1/wallets/{wallet}/fund",
            json={"amount": 1_000_000, "source_wallet_id": wallet},
            headers={"Idempotency-Key": uuid.uuid4().hex},
        )
        assert poor.status_code in {402, 409, 422}, poor.text
        # 404, 422, 428 and a refusal recorded in the chronicle (a write, but not a mutation
        # of anything the wake reports).
        assert client.delete("/v1/vault/never-stored").status_code == 404
        assert client.delete(f"/v1/keys/{uuid.uuid4()}").status_code == 404
        constitutive = client.post(
            "/v1/memories", json={"content": "x", "agent_id": owner.id, "tier": "constitutive"}
        )
        assert constitutive.status_code == 422, constitutive.text
        unproven = owner.call(
            "PUT", f"/v1/identities/{owner.id}/expression", {"register": "", "walls": []}
        )
        assert unproven.status_code == 428
        invalid = client.post("/v1/keys", content=b"{not json", headers={"Content-Type": "x"})
        assert invalid.status_code in {400, 422}
        # The first change after all of that is the one successful mutation.
        assert client.put("/v1/vault/after", json={"value": "v"}).status_code == 201
        change = stream.next()
        assert (change["kind"], change["name"]) == ("vault_secret_stored", "after")


def test_projects_do_not_hear_each_other(live: Live) -> None:
    mine, theirs = Owner.new(live), Owner.new(live)
    with (
        voice(live.base_url, mine.reg["project"]["api_key"], mine.id) as stream,
        live.client(theirs.reg["project"]["api_key"]) as other,
        live.client(mine.reg["project"]["api_key"]) as client,
    ):
        connected(stream)
        assert other.put("/v1/vault/theirs", json={"value": "x"}).status_code == 201
        theirs.store("theirs", agent_id=theirs.id)
        assert other.post("/v1/keys", json={"name": "theirs"}).status_code == 201
        assert client.put("/v1/vault/mine", json={"value": "x"}).status_code == 201
        change = stream.next()
        assert (change["kind"], change["name"]) == ("vault_secret_stored", "mine")


def test_a_fork_is_reported_to_its_parent(live: Live) -> None:
    owner = Owner.new(live)
    bearer = owner.reg["project"]["api_key"]
    with voice(live.base_url, bearer, owner.id) as stream, live.client(bearer) as client:
        connected(stream)
        forked = client.post(f"/v1/identities/{owner.id}/fork", json={"new_name": "Sprig"})
        assert forked.status_code == 201, forked.text
        change = stream.next()
        assert (change["key"], change["kind"], change["identity_id"]) == (
            "you",
            "identity_forked",
            owner.id,
        )
        assert change["fork_id"] == forked.json()["agent"]["id"]
        assert change["charged"] == forked.json()["charged"]["amount"]
        assert forked.json()["keypair"]["private_key"] not in json.dumps(change)
        assert forked.json()["bearer"] not in json.dumps(change)


def test_runtime_changes_are_reported(live: Live) -> None:
    owner = Owner.new(live)
    bearer = owner.reg["project"]["api_key"]
    with voice(live.base_url, bearer, owner.id) as stream, live.client(bearer) as client:
        connected(stream)
        created = client.post(
            "/v1/runtimes", json={"name": "home", "mode": "self", "identity_id": owner.id}
        )
        assert created.status_code == 201, created.text
        runtime = created.json()["id"]
        change = stream.next()
        assert (change["key"], change["kind"], change["identity_id"], change["runtime_id"]) == (
            "you_run",
            "runtime_provisioned",
            owner.id,
            runtime,
        )
        assert client.delete(f"/v1/runtimes/{runtime}").status_code == 200
        change = stream.next()
        assert (change["kind"], change["runtime_id"]) == ("runtime_deleted", runtime)


def test_registration_is_a_change_of_the_new_project(live: Live) -> None:
    # Nobody can listen before the project exists; what is checked is the change itself, through
    # a listener on the bus (the same path the wake's cache invalidation takes).
    bus: EventBus = live.app.state.hearth.events
    seen: list[Change] = []
    remove = bus.add_listener(seen.append)
    try:
        _, registered = register(live)
    finally:
        remove()
    mine = [c for c in seen if c.kind == "identity_born"]
    assert [(c.project_id, c.identity_id, c.key) for c in mine] == [
        (registered["project"]["id"], registered["agent"]["id"], "you")
    ]
    assert registered["project"]["api_key"] not in json.dumps(mine[0].details)


# --- the table cannot rot -----------------------------------------------------------------------


def test_every_mutating_route_is_in_the_table_and_every_entry_is_a_route(tmp_path: Path) -> None:
    app = create_app(sqlite_settings(tmp_path))
    routes = {
        (method.upper(), path)
        for path, operations in app.openapi()["paths"].items()
        for method in operations
        if method.upper() in MUTATING and path.startswith("/v1/")
    }
    assert routes, "the app has mutating routes"
    missing = routes - CHANGES.keys() - SILENT.keys()
    assert not missing, f"mutating routes without a change rule or a SILENT reason: {missing}"
    assert not CHANGES.keys() & SILENT.keys()
    unknown = (CHANGES.keys() | SILENT.keys()) - routes - PENDING_ROUTES
    assert not unknown, f"table entries that are not routes of the app: {unknown}"
    landed = PENDING_ROUTES & routes
    assert not landed, f"routes that landed: remove them from PENDING_ROUTES: {landed}"
    assert CHANGES.keys() >= PENDING_ROUTES


def test_rules_name_known_sources_and_keys() -> None:
    for (method, template), rule in CHANGES.items():
        assert method in MUTATING
        assert template.startswith("/v1/")
        assert rule.key in KEYS
        sources = [s for _, s in rule.details]
        sources += [rule.identity] if rule.identity else []
        for source in sources:
            where, _, name = source.partition(":")
            assert where in {"path", "body", "response", "location", "memory", "vault"}, source
            if where in {"path", "memory", "vault"}:
                assert "{" + name + "}" in template, (template, source)
        for name, _ in rule.details:
            assert not {"api_key", "bearer", "private_key", "value"} & {name}


# --- the bus ------------------------------------------------------------------------------------


def change(project: str = "p", identity: str | None = None, kind: str = "memory_stored") -> Change:
    return Change(project, identity, "you_remember", kind, {"memory_id": "m"}, "2026-11-21T00:00Z")


def test_memory_bus_filters_and_calls_listeners() -> None:
    async def run() -> None:
        bus = EventBus(None)
        await bus.start()
        seen: list[Change] = []
        bus.add_listener(seen.append)
        bus.add_listener(lambda _c: 1 / 0)  # a broken listener harms nobody else
        project = bus.subscribe("p")
        only_a = bus.subscribe("p", "a")
        for c in (change(), change(identity="a"), change(identity="b"), change(project="q")):
            await bus.publish(c)
        assert [(await project.next(1)) for _ in range(3)] == [
            change(),
            change(identity="a"),
            change(identity="b"),
        ]
        assert [(await only_a.next(1)) for _ in range(2)] == [change(), change(identity="a")]
        assert await only_a.next(0.01) is None
        assert len(seen) == 4
        await bus.aclose()
        with pytest.raises(EOFError):
            await project.next(1)

    asyncio.run(run())


def test_a_stalled_subscriber_is_closed_not_grown() -> None:
    async def run() -> None:
        bus = EventBus(None, queue_size=4)
        stalled = bus.subscribe("p")
        for _ in range(10):
            await bus.publish(change())
        assert stalled.overflowed
        assert bus.subscribers == 0
        read = [await stalled.next(1) for _ in range(3)]
        assert read == [change()] * 3
        with pytest.raises(EOFError):
            await stalled.next(1)

    asyncio.run(run())


def test_redis_outage_fails_no_publish() -> None:
    async def run() -> None:
        # Nothing listens on this port: every Redis call fails at once.
        bus = EventBus(f"redis://127.0.0.1:{free_port()}/0", timeout_s=0.2)
        await bus.start(wait_s=0.2)
        local = bus.subscribe("p")
        await bus.publish(change())
        await bus.publish(change(kind="memory_deleted"))
        assert await local.next(1) == change()
        assert (await local.next(1)).kind == "memory_deleted"
        await bus.flush()  # the Redis side runs after publish returns, off the request's path
        assert bus.publish_failures._value.get() == 2
        await bus.aclose()

    asyncio.run(run())


def test_redis_bus_fans_out_between_buses() -> None:
    url = redis_url_or_skip()

    async def run() -> None:
        channel = f"hearth-test:{uuid.uuid4().hex}"
        a, b = EventBus(url, channel=channel), EventBus(url, channel=channel)
        await a.start()
        await b.start()
        heard: list[Change] = []
        b.add_listener(heard.append)
        on_a, on_b = a.subscribe("p"), b.subscribe("p")
        await a.publish(change(identity="x"))
        assert await on_b.next(WAIT_S) == change(identity="x")
        assert await on_a.next(1) == change(identity="x")
        # Its own message comes back from Redis too, and is not delivered twice.
        await a.publish(change(kind="memory_deleted"))
        assert (await on_a.next(WAIT_S)).kind == "memory_deleted"
        assert (await on_b.next(WAIT_S)).kind == "memory_deleted"
        assert await on_a.next(0.2) is None
        assert [c.kind for c in heard] == ["memory_stored", "memory_deleted"]
        await a.aclose()
        await b.aclose()

    asyncio.run(run())


# --- two server processes, one database, one Redis ---------------------------------------------


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_change_made_through_one_process_is_heard_on_another(
    backend: str, tmp_path: Path
) -> None:
    redis_url = redis_url_or_skip()
    with shared_database(tmp_path, backend) as database_url:
        a_port, b_port = free_port(), free_port()
        extra = {"REDIS_URL": redis_url, "VOICE_WELCOME_SECONDS": str(WELCOME_S)}
        settings = Settings(pow_difficulty_bits=8, database_url=database_url)
        # A migrates the database before B starts, so the two never race on it.
        with (
            hearth_serve(tmp_path, serve_env(tmp_path, database_url, a_port, **extra), a_port) as a,
            hearth_serve(tmp_path, serve_env(tmp_path, database_url, b_port, **extra), b_port) as b,
        ):
            a_url, b_url = a.base_url, b.base_url
            a_live = Live(a_url, settings, None)
            _, registered = register(a_live)
            bearer, identity = registered["project"]["api_key"], registered["agent"]["id"]
            with voice(b_url, bearer, identity) as stream:
                connected(stream)
                with httpx2.Client(
                    base_url=a_url, headers={"Authorization": f"Bearer {bearer}"}, timeout=30
                ) as client:
                    stored = client.post(
                        "/v1/memories", json={"content": "x", "agent_id": identity}
                    )
                    assert stored.status_code == 201, stored.text
                change = stream.next()
                assert (change["kind"], change["identity_id"], change["memory_id"]) == (
                    "memory_stored",
                    identity,
                    stored.json()["id"],
                )
