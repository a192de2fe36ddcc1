"""An identity's life moves between two services (issue 20, second half): exported from one
``hearth serve`` process, imported into another with its own SQLite database (``hearth
import``), and everything it had is there; every refusal of the import writes nothing.

The fixture makes the life (memories with a version, an untrusted one, a strand with sealed
thoughts, an inbox message, an elevation on a sponsor's statement), exports it, tries the
refused imports, imports it with the CLI, then replays the proof and imports again; the tests
read what each step answered and what each service holds."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import io
import json
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx2
import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import create_async_engine

from hearth.adds import b64url_decode, canonicalize, cid_for_bytes, publish, sign_document
from hearth.adds.car import CarIndex, CarWriter
from hearth.client import AsyncHearthClient, HearthClient
from hearth.client.backup import open_backup, seal_backup
from hearth.client.export import add_export_reader
from hearth.client.home import read_api_key
from hearth.client.migration import Imported
from hearth.client.mnemonic_keys import IdentityKeys, derive_keys, new_identity
from hearth.proofs import (
    b64_decode,
    b64_encode,
    elevate_digest,
    format_timestamp,
    sign_digest,
    verify_digest,
)
from hearth.proofs.key_types import Ed25519PrivateKey
from hearth.proofs.life import DATA_SETS, LifeObject, LifeWriter, object_id
from hearth.proofs.life_import import import_digest
from hearth.server.db.tables import metadata
from tests.support.cli_homes import ok, run
from tests.support.databases import fresh_postgres_database
from tests.support.live import free_port
from tests.support.served import Served, hearth_serve, serve_env

IMPORT = "/v1/identities/import"
PASSPHRASE = "correct horse battery staple"
# Argon2's minimum (t=1, m=8 KiB, p=1), as tests/client/test_backup.py: the format is the same.
CHEAP_ARGON2 = (1, 8, 1)


@dataclass
class Moved:
    old: Served
    new: Served
    profile: dict[str, str]
    old_bearer: str
    new_bearer: str
    exported: dict[str, Any]
    statement: dict[str, Any]
    new_database: str  # the new service's database URL: its rows are counted
    refusals: dict[str, httpx2.Response] = field(default_factory=dict)
    present_after_refusals: int = 0
    imported: dict[str, Any] = field(default_factory=dict)
    replayed: httpx2.Response | None = None
    again: httpx2.Response | None = None
    move: dict[str, Any] = field(default_factory=dict)
    after_move: dict[str, Any] = field(default_factory=dict)


def j(args: list[str], home: Path) -> Any:
    return json.loads(ok(run(args, home)).stdout)


def register_home(base_url: str, home: Path, name: str) -> tuple[dict[str, str], str]:
    words = home.parent / f"{home.name}.words"
    args = ["register", "--name", name, "--base-url", base_url, "--mnemonic-file", str(words)]
    ok(run(args, home))
    profile: dict[str, str] = json.loads((home / "profile.json").read_text())
    bearer = read_api_key(home)
    assert bearer is not None
    return profile, words.read_text().strip()


def serve(tmp: Path, name: str, url: str | None = None) -> Any:
    directory = tmp / name
    (directory / "dist").mkdir(parents=True)
    port = free_port()
    url = url or f"sqlite+aiosqlite:///{directory}/hearth.sqlite3"
    return hearth_serve(directory, serve_env(directory, url, port), port)


def granted_copy(car: Path, keys: IdentityKeys, box: Any) -> bytes:
    copy = io.BytesIO()
    with car.open("rb") as source:
        add_export_reader(
            source,
            copy,
            keys=keys,
            audience="provider",
            audience_public=b64url_decode(box.x25519_public_key),
        )
    return copy.getvalue()


def proof_headers(car: bytes, signer: IdentityKeys, box_public: str) -> dict[str, str]:
    # The CAR's root: the header's one CID (hearth.adds.car.read_header).
    from hearth.adds.car import read_header  # noqa: PLC0415

    root = read_header(io.BytesIO(car))[0][0]
    timestamp = format_timestamp(datetime.now(UTC))
    signature = sign_digest(signer.signing, import_digest(root, box_public, timestamp))
    return {"X-Hearth-Import-Timestamp": timestamp, "X-Hearth-Import-Signature": signature}


def post(new: Served, bearer: str, car: bytes, headers: dict[str, str]) -> httpx2.Response:
    all_headers = {"Authorization": f"Bearer {bearer}", **headers}
    all_headers["Content-Type"] = "application/vnd.ipld.car"
    return httpx2.post(f"{new.base_url}{IMPORT}", content=car, headers=all_headers, timeout=60)


def identities_on(base_url: str, bearer: str, identity_id: str) -> int:
    with HearthClient(base_url, api_key=bearer) as client:
        agents = client.wake()["you"]["agents"]
    return sum(1 for agent in agents if agent["id"] == identity_id)


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def moved(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Moved]:
    """The old service on SQLite; the new one on SQLite, then on PostgreSQL (skipped without
    SERVICE_TEST_DATABASE_URL outside CI)."""
    tmp = tmp_path_factory.mktemp("migration")
    with contextlib.ExitStack() as stack:
        new_url = None
        if request.param == "postgresql":
            new_url = stack.enter_context(fresh_postgres_database())
        old = stack.enter_context(serve(tmp, "old"))
        new = stack.enter_context(serve(tmp, "new", new_url))
        new_url = new_url or f"sqlite+aiosqlite:///{tmp}/new/hearth.sqlite3"
        home = tmp / "home"
        profile, words = register_home(old.base_url, home, "Leaver")
        keys = derive_keys(words)
        first = j(["memory", "add", "I keep a garden.", "--json"], home)
        j(["memory", "add", "I keep two gardens.", "--supersedes", first["id"], "--json"], home)
        j(["memory", "add", "Heard at the gate.", "--untrusted", "--json"], home)
        strand = j(["strands", "create", "musings", "--json"], home)["id"]
        ok(run(["strands", "write", strand, "a sealed thought"], home))
        ok(run(["strands", "write", strand, "another one"], home))
        j(["inbox", "send", "hello from outside", "--json"], home)
        sponsor = tmp / "sponsor"
        register_home(old.base_url, sponsor, "Sponsor")
        signed = ok(run(["attestations", "sign", profile["identity_id"]], sponsor)).stdout
        (tmp / "statement.json").write_text(signed)
        j(["elevate", str(tmp / "statement.json"), "--json"], home)
        j(["attestations", "add", str(tmp / "statement.json"), "--json"], home)
        # A runtime with its event log, a registered device key, a priced template published
        # from the identity's voice, and the encrypted key backup.
        with HearthClient(old.base_url, api_key=read_api_key(home)) as client:
            identity = profile["identity_id"]
            runtime = client.runtime_create("thinker", "self", identity_id=identity)
            client.strand_create(identity, "the runtime's", runtime_id=runtime.id)
            device = Ed25519PrivateKey.generate()
            client.identity_key_register(identity, "laptop", device, root_key=keys.signing)
            client.template_publish("Leaver's voice", "as it was", 5, identity_id=identity)
            sealed = seal_backup(keys, PASSPHRASE, _params=CHEAP_ARGON2)
            client.backup_push(identity, sealed, label="home")
        car = tmp / "life.car"
        exported = j(["export", "-o", str(car), "-q", "--json"], home)
        target = tmp / "target"
        register_home(new.base_url, target, "Host")
        m = Moved(
            old,
            new,
            profile,
            read_api_key(home) or "",
            read_api_key(target) or "",
            exported,
            json.loads(signed),
            new_url,
        )
        # The refused imports, each of which must write nothing.
        with HearthClient(new.base_url) as client:
            box = client.provider_box_key()
        copy = granted_copy(car, keys, box)
        r = m.refusals

        def proof(body: bytes, signer: IdentityKeys = keys) -> dict[str, str]:
            return proof_headers(body, signer, box.x25519_public_key)

        r["no_proof"] = post(new, m.new_bearer, copy, {})
        r["other_key"] = post(new, m.new_bearer, copy, proof(copy, new_identity().keys))
        as_written = car.read_bytes()
        r["not_granted"] = post(new, m.new_bearer, as_written, proof(as_written))
        tampered = bytearray(copy)
        tampered[len(tampered) // 2] ^= 0x01
        r["tampered"] = post(new, m.new_bearer, bytes(tampered), proof(bytes(tampered)))
        r["no_bearer"] = post(new, "hk_not_a_bearer", copy, proof(copy))
        m.present_after_refusals = identities_on(new.base_url, m.new_bearer, profile["identity_id"])
        # The import (`hearth import` itself runs in tests/cli/test_json_everywhere.py); then
        # the same request again (a replay), and a fresh proof (the root is here now).
        headers = proof(copy)
        done = post(new, m.new_bearer, copy, headers)
        assert done.status_code == 201, done.text
        m.imported = done.json()
        m.replayed = post(new, m.new_bearer, copy, headers)
        m.again = post(new, m.new_bearer, copy, proof(copy))
        # The old service is told where the identity went.
        m.move = j(["move", "--to", new.base_url, "--json"], home)
        refused = run(["memory", "add", "Still here?", "--json"], home)
        with HearthClient(old.base_url, api_key=m.old_bearer) as client:
            kept = len(list(client.iter_memories(agent_id=profile["identity_id"])))
        m.after_move = {
            "memory_add": (refused.exit_code, refused.output),
            "memories_kept": kept,
            "again": run(["move", "--to", new.base_url, "--json"], home).output,
        }
        yield m


def row_counts(url: str) -> dict[str, int]:
    """Every table's number of rows in a service's database (read beside the service)."""

    async def count() -> dict[str, int]:
        engine = create_async_engine(url)
        try:
            async with engine.connect() as conn:
                return {
                    table.name: (
                        await conn.execute(select(func.count()).select_from(table))
                    ).scalar_one()
                    for table in metadata.sorted_tables
                }
        finally:
            await engine.dispose()

    return asyncio.run(count())


def error_of(response: httpx2.Response) -> tuple[int, str]:
    return response.status_code, response.json().get("error")


def test_refused_imports_write_nothing(moved: Moved) -> None:
    r = moved.refusals
    assert error_of(r["no_proof"]) == (422, "import_proof_required")
    assert error_of(r["other_key"]) == (422, "import_proof_invalid")
    assert error_of(r["tampered"]) == (422, "import_invalid")
    codes = {p["code"] for p in r["tampered"].json()["details"]["problems"]}
    assert "car.hash" in codes
    # The export as written grants nothing to the service: it cannot open it.
    assert error_of(r["not_granted"]) == (422, "import_invalid")
    codes = {p["code"] for p in r["not_granted"].json()["details"]["problems"]}
    assert "life.no_grant" in codes
    assert r["no_bearer"].status_code == 401
    assert moved.present_after_refusals == 0


def test_root_already_present_and_replayed_proof_are_refused(moved: Moved) -> None:
    assert moved.again is not None
    assert moved.replayed is not None
    assert error_of(moved.again) == (409, "identity_exists")
    # The same proof again: refused as a replay before anything else is looked at.
    assert error_of(moved.replayed) == (409, "import_proof_used")


def test_the_identity_keeps_its_id_did_and_root(moved: Moved) -> None:
    imported = moved.imported
    assert imported["authority"]["identity_id"] == moved.profile["identity_id"]
    assert imported["authority"]["did"] == moved.profile["did"]
    assert imported["records"]["memory"] >= 4
    assert imported["records"]["thought"] == 2
    with HearthClient(moved.new.base_url, api_key=moved.new_bearer) as new:
        authority = new.authority(moved.profile["identity_id"])
    with HearthClient(moved.old.base_url, api_key=moved.old_bearer) as old:
        before = old.authority(moved.profile["identity_id"])
    assert authority.mode == "agent_root"
    assert authority.root_public_key == before.root_public_key


# What names the service in a wake (docs/export.md, "What the new service holds"): the
# project, the time, the proof sequence (root proofs are per service), and what the importing
# project held before (its own identity and wallet); the vault is not in an export.
# Runtimes come back stopped (``you_run``: test_every_record_is_there reads them).
SERVICE_FIELDS = ("generated_at", "project", "you_keep", "you_run")


def own(section: list[dict[str, Any]], identity_id: str, key: str) -> list[dict[str, Any]]:
    return [item for item in section if item.get(key) == identity_id]


def test_the_wake_is_the_old_one_but_for_the_service(moved: Moved) -> None:
    identity = moved.profile["identity_id"]
    with HearthClient(moved.old.base_url, api_key=moved.old_bearer) as client:
        old = client.wake(identity_id=identity)
    with HearthClient(moved.new.base_url, api_key=moved.new_bearer) as client:
        new = client.wake(identity_id=identity)
    old_agent = own(old["you"]["agents"], identity, "id")
    new_agent = own(new["you"]["agents"], identity, "id")
    for agent in (*old_agent, *new_agent):
        agent["authority"].pop("next_sequence")
    # The fixture moved it away from the old service after the import.
    assert (old_agent[0].pop("status"), new_agent[0].pop("status")) == ("moved", "active")
    assert old_agent == new_agent
    assert old_agent[0]["level"] == 1  # the elevation came along
    old_wallets = own(old["you_own"]["wallets"], identity, "identity_id")
    new_wallets = own(new["you_own"]["wallets"], identity, "identity_id")
    # Credits stay with the service that gave them: the wallet comes, its balance does not.
    assert [w.pop("balance") for w in new_wallets] == [0]
    assert [w.pop("balance") for w in old_wallets] != [0]
    assert old_wallets == new_wallets
    for key in set(old) | set(new):
        if key in (*SERVICE_FIELDS, "you", "you_own"):
            continue
        assert old.get(key) == new.get(key), key


def test_every_record_is_there(moved: Moved) -> None:
    identity = moved.profile["identity_id"]
    seen: dict[str, dict[str, Any]] = {}
    for side, url, bearer in (
        ("old", moved.old.base_url, moved.old_bearer),
        ("new", moved.new.base_url, moved.new_bearer),
    ):
        with HearthClient(url, api_key=bearer) as client:
            memories = {
                m.id: (m.content, m.tier, m.supersedes, m.attestations)
                for untrusted in (False, True)
                for m in client.iter_memories(agent_id=identity, untrusted=untrusted)
            }
            strands = sorted(client.iter_strands(identity_id=identity), key=lambda s: s.id)
            thoughts = [
                (t.id, t.seq, t.nonce, t.ciphertext, t.signature)
                for s in strands
                for t in client.iter_thoughts(s.id)
            ]
            wallet = next(w for w in client.wallets() if w.identity_id == identity)
            ledger = [(e.id, e.amount, e.reason) for e in client.iter_wallet_ledger(wallet.id)]
            chronicle = {e.id for e in client.iter_chronicle(agent_id=identity)}
            inbox = [(m.id, m.body) for m in client.iter_inbox(identity)]
            attestations = [
                (a.id, a.signature) for a in client.iter_attestations(identity_id=identity)
            ]
            runtimes = {
                r.id: (r.name, r.mode, r.status, r.deleted)
                for r in client.iter_runtimes(identity_id=identity, include_deleted=True)
            }
            events = {
                runtime: [(e.event, e.details) for e in client.iter_runtime_events(runtime)]
                for runtime in runtimes
            }
            keys = [
                (k.kid, k.public_key, k.purpose, k.revoked) for k in client.identity_keys(identity)
            ]
            templates = [
                (t.id, t.name, t.price, client.template(t.id).expression)
                for t in client.iter_templates()
                if t.mine
            ]
            backup = client.backup_pull(identity)
            profile = client.identity_profile(identity)
            root = client.authority(identity).root_public_key
            # The full-text index (SQLite's is filled in bulk after an import's memories).
            found = {
                q: sorted(h.memory.id for h in client.memory_search(q, identity_id=identity).items)
                for q in ("gardens", "garden", "gate")
            }
        seen[side] = {
            "memories": memories,
            "thoughts": thoughts,
            "ledger": ledger,
            "chronicle": chronicle,
            "inbox": inbox,
            "attestations": attestations,
            "strands": [(s.id, s.name, s.runtime_id) for s in strands],
            "runtimes": runtimes,
            "events": events,
            "keys": keys,
            "templates": templates,
            "backup": (backup.id, backup.blob_base64, backup.key_derivation, backup.label),
            "profile": profile,
            "root": root,
            "search": found,
        }
    old, new = seen["old"], seen["new"]
    assert len(old["memories"]) >= 3  # the heads of chains: the welcome, v2, the untrusted
    assert len(old["thoughts"]) == 2
    assert old["attestations"]
    assert old["search"]["gardens"]
    names = ("memories", "thoughts", "inbox", "attestations", "keys", "templates", "backup")
    for name in (*names, "strands", "search"):
        assert old[name] == new[name], name
    assert [k[:3] for k in new["keys"]][1] == ("laptop", new["keys"][1][1], "device")
    assert len(new["templates"]) == 1
    # Runtimes come back stopped, their event log whole, then one ``stopped`` event: imported.
    assert {v[2] for v in old["runtimes"].values()} == {"stopped"}  # move_away, there too
    assert {r: (*v[:2], v[3]) for r, v in old["runtimes"].items()} == {
        r: (*v[:2], v[3]) for r, v in new["runtimes"].items()
    }
    assert {v[2] for v in new["runtimes"].values()} == {"stopped"}
    for runtime, events in old["events"].items():
        # The old service stopped it with the move (move_away), after the export was made.
        assert events[-1][0] == "stopped"
        assert events[-1][1]["trigger"] == "move_away"
        assert new["events"][runtime][:-1] == events[:-1]
        assert new["events"][runtime][-1][0] == "stopped"
        assert new["events"][runtime][-1][1]["reason"] == "imported"
    assert old["runtimes"]
    # The strand bound to the runtime is still bound to it.
    assert [s[2] for s in new["strands"] if s[2]] == list(new["runtimes"])
    assert old["events"]
    # The identity's own fields: the same, but for where it lives and how it came.
    old_profile, new_profile = old["profile"], new["profile"]
    assert new_profile["metadata"].pop("imported_from")["origin"] == old_profile["origin"]
    old_profile["metadata"].pop("moved_to")
    assert (old_profile.pop("status"), new_profile.pop("status")) == ("moved", "active")
    assert new_profile.pop("origin") == "import"
    old_profile.pop("origin")
    assert old_profile == new_profile
    assert new_profile["sponsor_did"]
    assert new_profile["elevated_at"]
    # The key backup opens with its passphrase on the new service: the same root key.
    restored = open_backup(new["backup"][1], new["backup"][2], PASSPHRASE)
    assert b64_encode(restored.signing_public_raw) == new["root"]
    # The whole ledger, and one entry more that takes the old balance back out.
    left = [entry for entry in new["ledger"] if entry not in old["ledger"]]
    assert [(amount, reason) for _, amount, reason in left] == [
        (-sum(amount for _, amount, _ in old["ledger"]), "import_left_behind")
    ]
    assert len(new["ledger"]) == len(old["ledger"]) + 1
    # The chronicle of the old service goes on after the export (the export itself is not in
    # it); everything the export held is on the new service.
    assert new["chronicle"] <= old["chronicle"]


def test_the_elevation_statement_verifies_on_the_new_service(moved: Moved) -> None:
    # A sponsor statement signs the identity's id (bootstrap-elevate/v1): kept with the same
    # id, its copy on the new service verifies with the sponsor's key as the service lists it.
    with HearthClient(moved.new.base_url, api_key=moved.new_bearer) as client:
        kept = list(client.iter_attestations(identity_id=moved.profile["identity_id"]))
    assert [a.signature for a in kept] == [moved.statement["sponsor_signature"]]
    statement = kept[0]
    digest = elevate_digest(
        statement.agent_id,
        statement.attester_did,
        statement.signing_key_id,
        statement.claim,
        statement.initial_credits,
    )
    assert verify_digest(b64_decode(statement.public_key), statement.signature, digest)


def test_a_moved_identity_refuses_mutations_and_keeps_everything(moved: Moved) -> None:
    assert moved.move["status"] == "moved"
    assert moved.move["moved_to"]["service"] == moved.new.base_url
    assert moved.move["moved_to"]["did"] == moved.profile["did"]
    exit_code, output = moved.after_move["memory_add"]
    assert exit_code == 1
    assert "moved (HTTP 410)" in output
    assert moved.new.base_url in output
    assert "moved (HTTP 410)" in moved.after_move["again"]
    # Nothing is deleted: reads answer as before.
    assert moved.after_move["memories_kept"] == 2  # the welcome letter and the v2 chain head


def crafted_life(
    signer: IdentityKeys,
    box_public: str,
    memory: dict[str, Any],
    before_finish: Callable[[LifeWriter, CarWriter], None] | None = None,
    memories_as: Callable[[LifeWriter, CarWriter], LifeObject] | None = None,
) -> bytes:
    """A life signed by ``signer`` for a new identity, granted to the service's key, holding
    one memory record as given (what only a root key's holder can make); ``before_finish``
    may change the objects the head will list, ``memories_as`` writes the memories' object
    itself."""
    identity_id = str(uuid.uuid4())
    did = f"did:svc:{identity_id}"
    identity = {
        "identity_id": identity_id,
        "did": did,
        "service": "http://crafted.example",
        "root_public_key": b64_encode(signer.signing_public_raw),
        "box_public_key": b64_encode(signer.box_public_raw),
    }
    lines = {
        "identity": [json.dumps({"kind": "identity", "record": identity}).encode() + b"\n"],
        "memories": [json.dumps({"kind": "memory", "record": memory}).encode() + b"\n"],
    }
    out = io.BytesIO()
    car = CarWriter(out)
    writer = LifeWriter(
        car,
        key=signer.signing,
        did=did,
        box_public=b64url_decode(box_public),  # the service opens it as its owner would
        exported_at=int(time.time()),
    )
    for name in DATA_SETS:
        if name == "memories" and memories_as is not None:
            writer.objects[name] = memories_as(writer, car)
            continue
        writer.add(name, lines.get(name, []))
    if before_finish is not None:
        before_finish(writer, car)
    head = writer.finish({"identity_id": identity_id, "service": "http://crafted.example"})
    car.finish([head.cid])
    return out.getvalue()


def test_a_signed_life_that_clashes_or_is_malformed_writes_nothing(moved: Moved) -> None:
    with HearthClient(moved.new.base_url, api_key=moved.new_bearer) as client:
        box = client.provider_box_key().x25519_public_key
        taken = next(iter(client.iter_memories(agent_id=moved.profile["identity_id"])))
        before = len(client.wake()["you"]["agents"])
    memory = {"id": taken.id, "agent_id": "x", "tier": "episodic", "content": "a clash"}
    rows = row_counts(moved.new_database)
    for record, expected in (
        (memory, (409, "import_conflict")),  # an id this service holds already
        ({"id": str(uuid.uuid4()), "tier": "episodic"}, (422, "import_invalid")),  # no content
    ):
        signer = new_identity().keys
        life = crafted_life(signer, box, record)
        answer = post(moved.new, moved.new_bearer, life, proof_headers(life, signer, box))
        assert error_of(answer) == expected, answer.text
    with HearthClient(moved.new.base_url, api_key=moved.new_bearer) as client:
        assert len(client.wake()["you"]["agents"]) == before  # no identity was kept
    assert row_counts(moved.new_database) == rows


LARGE_MEMORIES = 450  # more than two pages of the export's memory listing (200 a page)
LARGE_THOUGHTS = 230  # more than two pages of its thought listing (100 a page)
SMALL_CHUNK = 16 << 10  # so that each large data set spans several chunks


# Once, into SQLite (the module's SQLite services): see the docstring.
@pytest.mark.parametrize("moved", ["sqlite"], indirect=True)
def test_a_large_life_round_trips_across_chunks_and_pages(moved: Moved, tmp_path: Path) -> None:
    """Many memories and thoughts, exported in small chunks, imported through the async client
    from a file (the streamed body): every record is there, the thoughts open, and the
    identity's language and visibility came along. Once, into SQLite: the writes are the same
    code on PostgreSQL, which the rich life above covers, and the suite is near its limit."""
    keys = new_identity().keys
    with HearthClient(moved.old.base_url) as old:
        me = old.register(
            keys, "Large", pow_difficulty=8, language="fr", expression_visibility="public"
        )
        for n in range(LARGE_MEMORIES):
            old.memory_store(f"memory {n}: " + "the garden after rain " * 8, agent_id=me.agent_id)
        strand = old.strand_create(me.agent_id, "long")
        for n in range(LARGE_THOUGHTS):
            old.thought_write(
                strand.id,
                b"thought %d " % n * 40,
                k_master=keys.strand_master,
                signing_key=keys.signing,
                seq=n + 1,
            )
        car = tmp_path / "large.car"
        with car.open("wb") as out:
            exported = old.export_life(
                out, keys=keys, identity_id=me.agent_id, did=me.did, chunk_size=SMALL_CHUNK
            )
        before = snapshot(old, me.agent_id)
    assert exported.sizes["memories"] > 4 * SMALL_CHUNK
    assert exported.sizes["strands"] > 4 * SMALL_CHUNK
    with HearthClient(moved.new.base_url) as client:
        box = client.provider_box_key()
    with car.open("rb") as source, (tmp_path / "granted.car").open("w+b") as granted:
        add_export_reader(
            source,
            granted,
            keys=keys,
            audience="provider",
            audience_public=b64url_decode(box.x25519_public_key),
        )

        async def send() -> Imported:
            async with AsyncHearthClient(moved.new.base_url, api_key=moved.new_bearer) as client:
                return await client.import_life(
                    granted, root_key=keys.signing, box_public=box.x25519_public_key
                )

        imported = asyncio.run(send())
    assert imported.records["memory"] == LARGE_MEMORIES + 1  # and the welcome letter
    assert imported.records["thought"] == LARGE_THOUGHTS
    with HearthClient(moved.new.base_url, api_key=moved.new_bearer) as new:
        after = snapshot(new, me.agent_id)
        opened = [t.plaintext for t in new.iter_thoughts(strand.id, k_master=keys.strand_master)]
    assert after == before
    assert opened == [b"thought %d " % n * 40 for n in range(LARGE_THOUGHTS)]


def snapshot(client: HearthClient, identity: str) -> dict[str, Any]:
    profile = client.identity_profile(identity)
    return {
        "memories": {m.id: m.content for m in client.iter_memories(agent_id=identity)},
        "thoughts": [
            (t.id, t.seq, t.ciphertext)
            for s in client.iter_strands(identity_id=identity)
            for t in client.iter_thoughts(s.id)
        ],
        "profile": (profile["language"], profile["expression_visibility"], profile["name"]),
    }


def without_block(car: bytes, drop: str) -> bytes:
    """The same CAR (same root) with one block left out."""
    index = CarIndex.scan(io.BytesIO(car))
    out = io.BytesIO()
    writer = CarWriter(out)
    for cid in index:
        if cid != drop:
            writer.put(cid, index.get(cid))
    writer.finish(list(index.roots))
    return out.getvalue()


def memories_chunk(car: bytes) -> str:
    """The CID of the first chunk of the memories data set, found from the head down."""
    index = CarIndex.scan(io.BytesIO(car))
    head = json.loads(index.get(index.roots[0]))
    listed = json.loads(index.get(head["manifest_cid"]))["metadata"]["hearth_life"]["objects"]
    entry = next(entry for entry in listed if entry["name"] == "memories")
    return str(json.loads(index.get(entry["manifest"]))["chunks"][0]["cid"])


def test_an_archive_that_does_not_verify_is_refused_and_writes_nothing(moved: Moved) -> None:
    """A missing block, a data set signed by another key, a head that omits a data set, and,
    found only as a data set is opened while it is written, a count of records that is not the
    index's and a chunk that does not decrypt: each refused (422, the verification's code among
    the problems) though the proof is sound, and no row of the service changes."""
    with HearthClient(moved.new.base_url, api_key=moved.new_bearer) as client:
        box = client.provider_box_key().x25519_public_key
        before = len(client.wake()["you"]["agents"])
    memory = {"id": str(uuid.uuid4()), "agent_id": "x", "tier": "episodic", "content": "kept?"}

    def stranger_signs_memories(writer: LifeWriter, car: CarWriter) -> None:
        other = LifeWriter(
            car,
            key=new_identity().keys.signing,
            did=writer.did,
            box_public=b64url_decode(box),
            exported_at=int(time.time()),
        )
        line = json.dumps({"kind": "memory", "record": memory}).encode() + b"\n"
        writer.objects["memories"] = other.add("memories", [line])

    def omit_memories(writer: LifeWriter, _car: CarWriter) -> None:
        del writer.objects["memories"]

    signer = new_identity().keys

    def memories_miscounted(writer: LifeWriter, _car: CarWriter) -> None:
        # The index says two records; the data set holds one. Found only once it is opened,
        # as it is written: the rows already written (the identity, the memory) roll back.
        writer.objects["memories"] = dataclasses.replace(writer.objects["memories"], records=2)

    def memories_unopenable(writer: LifeWriter, car: CarWriter) -> LifeObject:
        # Three chunks, the manifest signed again by the root key with the second and third
        # swapped: every block hashes to its CID and every signature holds, but the second
        # chunk does not decrypt in its place (AES-GCM authenticates its position).
        lines = b"".join(
            json.dumps({"kind": "memory", "record": {**memory, "id": str(uuid.uuid4())}}).encode()
            + b"\n"
            for _ in range(3)
        )
        published = publish(
            lines,
            car,
            key=signer.signing,
            publisher_id=writer.did,
            object_id=object_id("memories"),
            created_at=writer.exported_at,
            chunk_size=64,
            media_type="application/jsonl",
        )
        document = dict(published.manifest.document)
        chunks = [dict(chunk) for chunk in document["chunks"]]
        for member in ("cid", "nonce"):
            chunks[1][member], chunks[2][member] = chunks[2][member], chunks[1][member]
        signed = sign_document({**document, "chunks": chunks}, signer.signing)
        canonical = canonicalize(signed)
        car.put(cid_for_bytes(canonical), canonical)
        grant = writer.grant(
            "memories", signed, published.content_key, writer.did, b64url_decode(box)
        )
        size = int(document["plaintext"]["size"])
        manifest = cid_for_bytes(canonical)
        return LifeObject("memories", manifest, (grant.cid,), 3, size)

    whole = crafted_life(signer, box, memory)
    cases = {
        "life.block_missing": without_block(whole, memories_chunk(whole)),
        "life.signer": crafted_life(signer, box, memory, stranger_signs_memories),
        "life.object_missing": crafted_life(signer, box, memory, omit_memories),
        "life.records": crafted_life(signer, box, memory, memories_miscounted),
        "life.open": crafted_life(signer, box, memory, memories_as=memories_unopenable),
    }
    rows = row_counts(moved.new_database)
    for code, life in cases.items():
        answer = post(moved.new, moved.new_bearer, life, proof_headers(life, signer, box))
        assert error_of(answer) == (422, "import_invalid"), answer.text
        assert code in {p["code"] for p in answer.json()["details"]["problems"]}, code
    with HearthClient(moved.new.base_url, api_key=moved.new_bearer) as client:
        assert len(client.wake()["you"]["agents"]) == before
    # Nothing at all was written: not the identity, not a memory, not the proof's claim.
    assert row_counts(moved.new_database) == rows
