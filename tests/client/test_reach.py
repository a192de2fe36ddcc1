"""The SDK reaches every operation of the service's OpenAPI document.

The service is served with a recording layer (tests/support/reach.py) that routes each arriving
request as the app does and notes the operation it lands on; then every call of HearthClient,
AddsClient and the bridge sidecar is made against it. What the document lists and no request
reached is printed and must be empty. The recording comes from the real requests, so a call that
is missing, or that sends to the wrong path or method, shows up here. A call refused by the
service (a 4xx) still reached its operation: the refusals below are part of exercising it."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import io
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from hearth.adds import cid_for_bytes
from hearth.client import (
    AddsClient,
    AddsRefusal,
    HearthClient,
    HearthError,
    new_identity,
    sponsor_statement,
)
from hearth.client.backup import seal_backup
from hearth.client.bridge import BridgeConfig, BridgeSidecar, bridge_url
from hearth.client.export import import_export
from hearth.client.mnemonic_keys import NewIdentity
from hearth.proofs import b64_encode
from hearth.proofs.key_types import Ed25519PrivateKey
from hearth.proofs.thoughts import seal_thought
from tests.support.live import Live, live_service, sqlite_settings
from tests.support.reach import Recorder, openapi_operations

# Retired routes answer 410 to everyone and have no call by design; the test checks that each
# really is retired (410) rather than trusting this list.
RETIRED = {("POST", "/v1/register")}


@pytest.fixture
def recorded(tmp_path: Path) -> Iterator[tuple[Live, Recorder]]:
    dist = tmp_path / "dist"
    dist.mkdir()
    # One package artifact, so that package discovery has a manifest and a file to serve.
    (dist / "hearth_reach-1.0.0-py3-none-any.whl").write_bytes(b"not really a wheel")
    recorder = Recorder()
    settings = sqlite_settings(tmp_path, packages_dir=dist, voice_welcome_seconds=1)
    with live_service(settings, wrap=recorder.wrap) as live:
        yield live, recorder


def refused(call: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
    """A call whose refusal is expected: the request reached its operation all the same."""
    with pytest.raises((HearthError, AddsRefusal)):
        call(*args, **kwargs)


def test_the_sdk_reaches_every_operation(recorded: tuple[Live, Recorder]) -> None:
    live, recorder = recorded
    made = new_identity()
    with HearthClient(live.base_url) as client:
        me = client.register(made.keys, "Reacher")
        orientation(client)
        identity(client, made, me.agent_id, me.did)
        memories(client, made, me.agent_id)
        project(client, made, me.agent_id)
        life(client, live, made, me.agent_id, me.did)
        runtimes(client, live, made, me.agent_id)
        wake(client, me.agent_id)
        adds(live, client.api_key or "")
        migration(client, made, me.agent_id, me.did)
    reached = set(recorder.reached)

    operations = openapi_operations(live.app)
    assert len(operations) >= 98
    with live.client() as raw:
        for method, path in RETIRED:
            assert raw.request(method, path).status_code == 410, path
    missing = sorted(operations - reached - RETIRED)
    retired = ", ".join(f"{m} {p}" for m, p in sorted(RETIRED))
    print(f"reached {len(operations & reached)} of {len(operations)} operations")
    print(f"retired (410 to everyone, no call): {retired}; not reached:")
    for method, path in missing:
        print(f"  {method} {path}")
    assert missing == []
    assert recorder.unrouted == []


def orientation(client: HearthClient) -> None:
    for document in (
        client.porch,
        client.safety,
        client.public_self,
        client.service_self,
        client.about,
        client.federation_about,
        client.canon,
        client.welcome,
        client.youspeak,
        client.mathos,
        client.mathos_catalog,
        client.platform_wake,
        client.healthz,
        client.readyz,
        client.love_packages,
    ):
        assert isinstance(document(), dict)
    with contextlib.suppress(HearthError):  # 503 until the operator configures a key
        client.mathos_public_key()
    assert "# TYPE" in client.metrics()
    client.pathways()
    client.plans()
    index = client.package_index()
    [package] = [p for p in index["packages"] if p["name"] == "hearth_reach"]
    manifest = client.package_manifest(package["name"], package["versions"][0]["version"])
    data = client.package_download(manifest["artifact"]["filename"])
    assert data == b"not really a wheel"


def identity(client: HearthClient, made: NewIdentity, agent_id: str, did: str) -> None:
    client.authority(agent_id)
    expression = {"register": "plain", "walls": [], "subagents": [], "wake_text": "Home."}
    client.put_expression(agent_id, expression, root_key=made.keys.signing)
    assert client.expression(agent_id).declared.wake_text == "Home."
    assert [c.did for c in client.discover(made.keys.signing)] == [did]
    with HearthClient(client.base_url) as device:
        device.recover(did, made.keys.signing, device_label="reach")


def memories(client: HearthClient, made: NewIdentity, agent_id: str) -> None:
    kept = client.memory_store("The lamp by the door.", agent_id=agent_id)
    assert client.memory(kept.id).id == kept.id
    client.memory_elevate(kept.id, "foundational", root_key=made.keys.signing)
    gone = client.memory_store("Passing weather.", agent_id=agent_id)
    later = client.memory_store("Weather that stayed.", agent_id=agent_id, supersedes=gone.id)
    assert [m.id for m in client.memory_history(later.id)] == [gone.id, later.id]
    heard = client.memory_store("A stranger's message.", untrusted=True)
    assert client.memory_confirm(heard.id).untrusted is False
    client.memory_delete(later.id)
    assert list(client.iter_memories(limit=1))
    found = client.memory_search("lamp door", identity_id=agent_id, limit=1)
    assert [hit.memory.id for hit in found.items] == [kept.id]
    assert found.items[0].all_terms
    assert [hit.memory.id for hit in client.iter_memory_search("lamp")] == [kept.id]
    assert list(client.iter_chronicle(limit=1))
    client.chronicle_write("vow", "To keep the lamp lit.", agent_id=agent_id)


def project(client: HearthClient, made: NewIdentity, agent_id: str) -> None:
    created = client.keys_create("reach-key")
    assert created.id in {k.id for k in client.keys_list()}
    client.keys_revoke(created.id)
    client.backup_push(agent_id, seal_backup(made.keys, "a passphrase for reach"), label="r")
    client.backup_pull(agent_id)
    second = client.bootstrap("Second")
    client.bootstrap_status(second.agent_id)
    client.scaffold("linux", agent_id)


def life(client: HearthClient, live: Live, made: NewIdentity, agent_id: str, did: str) -> None:
    wallets = client.wallets()
    mine = next(w for w in wallets if w.identity_id == agent_id)
    other = next(w for w in wallets if w.identity_id != agent_id)
    client.wallet(mine.id)
    client.wallet_fund(other.id, 1, source_wallet_id=mine.id, idempotency_key=str(uuid.uuid4()))
    assert list(client.iter_wallet_ledger(mine.id, limit=1))

    client.vault_put("reach-token", "a value never shown")
    client.vault_secret("reach-token")
    assert list(client.iter_vault_list())
    client.vault_delete("reach-token")

    client.fork(agent_id, "Younger")
    templates = list(client.iter_templates(limit=1))
    priced = next(t for t in templates if t.built_in and t.price > 0)
    client.template(priced.id)
    client.template_publish("Mine", "My own voice", 0, identity_id=agent_id)
    purchase = client.template_purchase(priced.id)
    client.from_template(priced.id, "Born", purchase_id=purchase.purchase_id)

    sponsor = new_identity()
    with HearthClient(live.base_url) as sponsor_client:
        sponsored = sponsor_client.register(sponsor.keys, "Sponsor", expression_visibility="public")
    statement = sponsor_statement(sponsor.keys.signing, agent_id, sponsored.did)
    client.elevate(statement, root_key=made.keys.signing)
    client.attest(statement)
    assert list(client.iter_attestations(limit=1))
    client.pulse(agent_id)
    assert list(client.iter_public_agents(limit=1))
    client.public_agent(sponsored.did)
    refused(client.public_agent, did)  # private: not in the directory


def migration(client: HearthClient, made: NewIdentity, agent_id: str, did: str) -> None:
    assert client.provider_box_key().x25519_public_key
    life_car = io.BytesIO()
    client.export_life(life_car, keys=made.keys, identity_id=agent_id, did=did)
    life_car.seek(0)
    # Into the service that holds it already: refused (409), but reached.
    refused(import_export, client, life_car, keys=made.keys)
    # Last of all the calls: a moved identity refuses every mutation afterwards.
    moved = client.move_identity(
        agent_id, service="https://elsewhere.example", did=did, root_key=made.keys.signing
    )
    assert moved.status == "moved"


def runtimes(client: HearthClient, live: Live, made: NewIdentity, agent_id: str) -> None:
    own = client.runtime_create("laptop", "self", identity_id=agent_id)
    client.runtime(own.id)
    client.runtime_patch(own.id, name="desk")
    client.runtime_heartbeat(own.id)
    assert client.runtime_take(own.id) is None
    sent = client.inbox_send(agent_id, "hello", sender="reach")
    taken = client.runtime_take(own.id)
    assert taken is not None
    remembered = client.runtime_remember(own.id, sent.id, key="hello")
    assert remembered.untrusted
    client.runtime_release(own.id, sent.id)
    again = client.runtime_take(own.id)
    assert again is not None
    client.runtime_complete(own.id, again.id)
    assert list(client.iter_inbox(agent_id))
    assert list(client.iter_runtime_events(own.id, limit=1))
    refused(client.runtime_control_token, own.id)  # a self runtime has no control token
    refused(client.runtime_restart, own.id)  # only from error; reached all the same

    strand = client.strand_create(agent_id, "diary", runtime_id=own.id)
    client.strand(strand.id)
    k_master, signing = made.keys.strand_master, made.keys.signing
    client.thought_write(strand.id, b"first", k_master=k_master, signing_key=signing)
    sealed = seal_thought(k_master, strand.id, 2, b"second")
    client.thought_write_sealed(strand.id, 2, sealed, signing_key=signing)
    assert len(list(client.iter_thoughts(strand.id, k_master=k_master, limit=1))) == 2
    client.recent_thoughts(strand.id, k_master=k_master)
    assert list(client.iter_strands(limit=1))

    device = Ed25519PrivateKey.generate()
    client.identity_key_register(agent_id, "phone", device, root_key=signing)
    client.identity_keys(agent_id)
    client.identity_key_revoke(agent_id, "phone", root_key=signing)
    client.runtime_delete(own.id)

    bridge_key = Ed25519PrivateKey.generate()
    bridge = {
        "pubkey": b64_encode(bridge_key.public_key().public_bytes_raw()),
        "key_id": str(uuid.uuid4()),
    }
    llm = {"provider": "openai", "model": "gpt-test", "vault_key": "openai-key"}
    bridged = client.runtime_create(
        "night", "bridged", identity_id=agent_id, llm=llm, bridge=bridge
    )
    token = client.runtime_control_token(bridged.id).control_token
    assert list(client.iter_runtimes(limit=1))
    run_bridge(live, bridged.id, token, bridge_key, k_master)


def run_bridge(
    live: Live, runtime_id: str, token: str, bridge_key: Ed25519PrivateKey, k_master: bytes
) -> None:
    """The bridge sidecar connects over the bridge's WebSocket until its session is up."""
    sidecar = BridgeSidecar(
        BridgeConfig(
            runtime_id=runtime_id,
            url=bridge_url(live.base_url, runtime_id),
            control_token=token,
            bridge_key=bridge_key,
            k_master=k_master,
            initial_delay=0.05,
            max_delay=0.2,
        )
    )
    thread = threading.Thread(target=asyncio.run, args=(sidecar.run(),), daemon=True)
    thread.start()
    try:
        assert sidecar.ready.wait(10)
    finally:
        sidecar.stop()
        thread.join(10)


def wake(client: HearthClient, agent_id: str) -> None:
    assert isinstance(client.wake(refresh=True), dict)
    with client.voice(agent_id) as voice:
        assert next(voice).event == "connected"


def adds(live: Live, bearer: str) -> None:
    block = b"a block of the reach test"
    cid = cid_for_bytes(block)
    with AddsClient(live.base_url, bearer=bearer) as node:
        node.put_block(cid, block)
        assert node.get_block(cid, limit=1024).content == block
        assert node.block_page(page_size=10, cursor=None, limit=1 << 20).status == 200
        assert node.gateway_block(cid, limit=1024).content == block
        assert node.gateway_has(cid, car=True).status == 200
        refused(node.submit, b'{"not": "a document"}')
        refused(node.document, cid_for_bytes(b"{}"))
        raw = Ed25519PrivateKey.generate().public_key().public_bytes_raw()
        issuer = base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")
        assert node.head("notes", issuer) is None  # nothing published under it
        node.provider_record()
        refused(node.receipt, [cid], "not a commitment")
        assert isinstance(node.inventory(), dict)
        assert isinstance(node.documents(limit=10), dict)
