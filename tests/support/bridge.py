"""A bridged runtime with its sidecar against the live service's hub: provisioning one, running
its sidecar in a thread, the hub's side of the session, and ``hearth bridge`` as a process."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import uuid
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx2
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from hearth.adds.keys import private_key_pem
from hearth.client.bridge import (
    BridgeConfig,
    BridgeSidecar,
    bridge_url,
)
from hearth.client.mnemonic_keys import derive_keys, new_mnemonic
from hearth.proofs import b64_encode
from hearth.proofs.thoughts import seal_thought
from hearth.server.bridge import (
    BridgeHub,
    hub_for,
)
from hearth.server.services import runtimes as runtime_service
from tests.support.agents import raw_public
from tests.support.databases import in_db
from tests.support.live import Live
from tests.support.polling import eventually
from tests.support.runtimes import bridged_body, create, event_names, new_project

T = TypeVar("T")


WAIT_S = 15.0


@dataclass
class Bridged:
    """A bridged runtime and what its user holds: the control token, the bridge key, the words."""

    live: Live
    bearer: str
    runtime_id: str
    control_token: str = field(repr=False)
    bridge_key: Ed25519PrivateKey = field(repr=False)
    mnemonic: str = field(repr=False)

    @property
    def k_master(self) -> bytes:
        return derive_keys(self.mnemonic).strand_master

    def client(self) -> httpx2.Client:
        return self.live.client(self.bearer)

    def record(self) -> dict[str, Any]:
        with self.client() as client:
            response = client.get(f"/v1/runtimes/{self.runtime_id}")
        assert response.status_code == 200, response.text
        record: dict[str, Any] = response.json()
        return record

    def events(self) -> list[str]:
        with self.client() as client:
            return event_names(client, self.runtime_id)

    def event_items(self) -> list[dict[str, Any]]:
        with self.client() as client:
            response = client.get(f"/v1/runtimes/{self.runtime_id}/events")
        assert response.status_code == 200, response.text
        items: list[dict[str, Any]] = response.json()["items"]
        return items

    def config(self, **overrides: Any) -> BridgeConfig:
        values: dict[str, Any] = {
            "runtime_id": self.runtime_id,
            "url": bridge_url(self.live.base_url, self.runtime_id),
            "control_token": self.control_token,
            "bridge_key": self.bridge_key,
            "k_master": self.k_master,
            "initial_delay": 0.05,
            "max_delay": 0.2,
        }
        values.update(overrides)
        return BridgeConfig(**values)


def provision(live: Live, *, bind: bool = True) -> Bridged:
    bearer, _, agent_id = new_project(live)
    bridge_key = Ed25519PrivateKey.generate()
    body = bridged_body(
        identity_id=agent_id,
        bridge={"pubkey": b64_encode(raw_public(bridge_key)), "key_id": str(uuid.uuid4())},
    )
    with live.client(bearer) as client:
        created = create(client, body)
    if bind:  # the orchestrator's move: the handshake then moves starting -> running
        in_db(live, runtime_service.move, created["id"], "bind")
    return Bridged(
        live, bearer, created["id"], created["control_token"], bridge_key, new_mnemonic()
    )


def sealed_thought(
    k_master: bytes, strand_id: str, seq: int, plaintext: bytes
) -> tuple[bytes, bytes]:
    sealed = seal_thought(k_master, strand_id, seq, plaintext)
    return sealed.nonce, sealed.ciphertext


def hub(live: Live) -> BridgeHub:
    return hub_for(live.app)


def on_server(live: Live, coroutine: Coroutine[Any, Any, T]) -> T:
    """Run a hub call on the service's event loop (where the session lives), from the test."""
    loop = hub(live).loop
    assert loop is not None, "no bridge has connected to this service yet"
    return asyncio.run_coroutine_threadsafe(coroutine, loop).result(timeout=WAIT_S)


class Running:
    """A sidecar running in a thread of its own (its own event loop), as a user's would."""

    def __init__(self, sidecar: BridgeSidecar) -> None:
        self.sidecar = sidecar
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._main, daemon=True)

    def _main(self) -> None:
        try:
            asyncio.run(self.sidecar.run())
        except BaseException as exc:
            self.error = exc

    def start(self, *, wait_ready: bool = True) -> Running:
        self.thread.start()
        if wait_ready:
            eventually(
                lambda: self.sidecar.ready.is_set() or not self.thread.is_alive(), "handshake"
            )
            assert self.sidecar.ready.is_set(), f"the sidecar did not connect: {self.error!r}"
        return self

    def stop(self) -> None:
        self.sidecar.stop()
        self.thread.join(timeout=WAIT_S)
        assert not self.thread.is_alive()


@contextmanager
def running(sidecar: BridgeSidecar) -> Iterator[Running]:
    run = Running(sidecar).start()
    try:
        yield run
    finally:
        run.stop()


def ws_refusal(url: str, headers: dict[str, str] | None = None, **kwargs: Any) -> tuple[int, Any]:
    """(status, JSON body) of an upgrade the service refuses."""

    async def attempt() -> tuple[int, Any]:
        try:
            async with connect(url, additional_headers=headers, **kwargs):
                pass
        except InvalidStatus as exc:
            return exc.response.status_code, json.loads(exc.response.body or b"null")
        raise AssertionError("the upgrade was accepted")

    return asyncio.run(attempt())


def bridge_args(tmp_path: Path, bridged: Bridged, token: str | None = None) -> list[str]:
    token_file = tmp_path / "control-token"
    token_file.write_text((token or bridged.control_token) + "\n", encoding="utf-8")
    key_file = tmp_path / "bridge.ed25519.pem"
    key_file.write_bytes(private_key_pem(bridged.bridge_key))
    words = tmp_path / "words"
    words.write_text(bridged.mnemonic + "\n", encoding="utf-8")
    return [
        "--runtime",
        bridged.runtime_id,
        "--url",
        bridged.live.base_url,
        "--control-token-file",
        str(token_file),
        "--bridge-key",
        str(key_file),
        "--mnemonic-file",
        str(words),
    ]


def start_bridge(args: list[str], tmp_path: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "hearth.cli.bridge", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "HEARTH_HOME": str(tmp_path)},
    )
