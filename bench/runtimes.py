"""Hosted runtimes: bridge round trips beside raw crypto, and think cycles on two workers.

Run ``.venv/bin/python bench/runtimes.py`` from the repository root (``--seconds N`` per bridge
phase, default 5; ``--runtimes R``, default 100; ``--messages M`` per runtime, default 3;
``--database-url URL`` for PostgreSQL, whose database it writes into; SQLite in a temporary
directory otherwise). A measurement, not a test: it exits 0 whether the figures are good or
not, and non-zero only if the run itself breaks.

1. **Raw**: in this process, AES-256-GCM open of a 4 KiB thought under K_master plus one Ed25519
   verify (the sidecar's work per request, without the network): operations per second.
2. **Bridge**: the service on loopback (uvicorn in a thread, no in-process worker), a bridged
   runtime, its sidecar (``hearth.client.bridge.BridgeSidecar``, the code of ``hearth bridge``)
   in a thread of its own; the hub's ``decrypt`` of a 4 KiB thought, one at a time, then 16 in
   flight: round trips per second (each: sign on the hub, send, verify and open on the sidecar,
   HMAC the reply, check it on the hub).
3. **Think cycles**: R trusted runtimes, each bound to its own identity, and two ``hearth
   worker`` processes against the fake LLM server of the tests (OpenAI's API, answering at
   once); M messages per identity posted at once, timed until every message is ``done``: cycles
   per second (each: take the message, read and open the strand's recent thoughts, the wake,
   the vault key, the SDK call, seal, sign, store, complete, four events).

Printed: each rate, and the ratios bridge/raw and cycles/bridge.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the tests' live service and fake LLM server

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey  # noqa: E402
from sqlalchemy import func, select  # noqa: E402
from tests.support.agents import register  # noqa: E402
from tests.support.fake_llm import fake_llm  # noqa: E402
from tests.support.live import Live, live_service, sqlite_settings  # noqa: E402

from hearth.client.bridge import BridgeConfig, BridgeSidecar, bridge_url  # noqa: E402
from hearth.client.mnemonic_keys import derive_keys, new_mnemonic  # noqa: E402
from hearth.proofs import b64_encode  # noqa: E402
from hearth.proofs.recipes import sign_digest, verify_digest  # noqa: E402
from hearth.proofs.thoughts import open_thought, seal_thought  # noqa: E402
from hearth.server.bridge import hub_for  # noqa: E402
from hearth.server.db import Database  # noqa: E402
from hearth.server.db.tables import inbox_messages  # noqa: E402
from hearth.server.services import runtimes as runtime_service  # noqa: E402

THOUGHT = os.urandom(4096)
MASTER_KEY = "bench runtimes master key"


def raw_rate(seconds: float) -> float:
    """AES-GCM open of a 4 KiB thought + one Ed25519 verify, per second, in this process."""
    k_master = os.urandom(32)
    strand_id = str(uuid.uuid4())
    sealed = seal_thought(k_master, strand_id, 1, THOUGHT)
    key = Ed25519PrivateKey.generate()
    public = key.public_key().public_bytes_raw()
    digest = os.urandom(32)
    signature = sign_digest(key, digest)
    count = 0
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        open_thought(k_master, strand_id, 1, sealed.nonce, sealed.ciphertext)
        if not verify_digest(public, signature, digest):
            raise RuntimeError("verify failed")
        count += 1
    return count / (time.perf_counter() - started)


def run_db(live: Live, fn: Any, *args: Any, write: bool = True) -> Any:
    async def go() -> Any:
        db = Database(live.settings.database_url)
        try:
            runner = db.transaction if write else db.snapshot
            return await runner(fn, *args)
        finally:
            await db.dispose()

    return asyncio.run(go())


def bridge_rates(live: Live, seconds: float) -> tuple[float, float]:
    """Hub decrypt round trips per second: one in flight, then 16."""
    mnemonic = new_mnemonic()
    k_master = derive_keys(mnemonic).strand_master
    _, registered = register(live)
    bearer = registered["project"]["api_key"]
    bridge_key = Ed25519PrivateKey.generate()
    body = {
        "name": "bench",
        "mode": "bridged",
        "identity_id": registered["agent"]["id"],
        "llm": {"provider": "anthropic", "model": "m", "vault_key": "k"},
        "bridge": {
            "pubkey": b64_encode(bridge_key.public_key().public_bytes_raw()),
            "key_id": str(uuid.uuid4()),
        },
    }
    with live.client(bearer) as client:
        created = client.post("/v1/runtimes", json=body).json()
    rid = created["id"]
    run_db(live, runtime_service.move, rid, "bind")
    sidecar = BridgeSidecar(
        BridgeConfig(
            runtime_id=rid,
            url=bridge_url(live.base_url, rid),
            control_token=created["control_token"],
            bridge_key=bridge_key,
            k_master=k_master,
        )
    )
    thread = threading.Thread(target=lambda: asyncio.run(sidecar.run()), daemon=True)
    thread.start()
    if not sidecar.ready.wait(30):
        raise RuntimeError("the sidecar did not connect")
    hub = hub_for(live.app)
    assert hub.loop is not None
    strand_id = str(uuid.uuid4())
    sealed = seal_thought(k_master, strand_id, 1, THOUGHT)

    async def one() -> None:
        opened = await hub.decrypt(rid, strand_id, 1, sealed.nonce, sealed.ciphertext)
        if opened != THOUGHT:
            raise RuntimeError("the bridge answered another plaintext")

    async def timed(in_flight: int) -> float:
        count = 0
        started = time.perf_counter()

        async def lane() -> None:
            nonlocal count
            while time.perf_counter() - started < seconds:
                await one()
                count += 1

        await asyncio.gather(*(lane() for _ in range(in_flight)))
        return count / (time.perf_counter() - started)

    def on_server(in_flight: int) -> float:
        future = asyncio.run_coroutine_threadsafe(timed(in_flight), hub.loop)  # type: ignore[arg-type]
        return float(future.result(timeout=seconds * 10 + 60))

    on_server(1)  # warm-up
    rates = on_server(1), on_server(16)
    sidecar.stop()
    thread.join(timeout=30)
    return rates


def _pending(conn: Any) -> int:
    return int(
        conn.execute(
            select(func.count())
            .select_from(inbox_messages)
            .where(inbox_messages.c.status != "done")
        ).scalar_one()
    )


def cycle_rate(live: Live, fake_url: str, runtimes: int, messages: int) -> tuple[float, int]:
    """Think cycles per second of two `hearth worker` processes over ``runtimes`` runtimes."""
    identities: list[tuple[str, str, str]] = []
    for _ in range(runtimes):
        _, registered = register(live)
        bearer = registered["project"]["api_key"]
        agent_id = registered["agent"]["id"]
        with live.client(bearer) as client:
            client.put("/v1/vault/llm-key", json={"value": "sk-bench"})
            created = client.post(
                "/v1/runtimes",
                json={
                    "name": "bench",
                    "mode": "trusted",
                    "identity_id": agent_id,
                    "llm": {"provider": "openai", "model": "m", "vault_key": "llm-key"},
                },
            ).json()
        identities.append((bearer, agent_id, created["id"]))
    env = {k: v for k, v in os.environ.items() if not k.startswith("SERVICE_")}
    env.update(
        SERVICE_DATABASE_URL=live.settings.database_url,
        SERVICE_KMS_MASTER_KEY=MASTER_KEY,
        SERVICE_AUTO_MIGRATE="false",
        SERVICE_LOG_LEVEL="warning",
        SERVICE_RUNTIME_POLL_SECONDS="0.05",
        SERVICE_LLM_OPENAI_BASE_URL=fake_url,
        SERVICE_LLM_MAX_RETRIES="0",
    )
    hearth = Path(sys.executable).parent / "hearth"
    workers = [
        subprocess.Popen([str(hearth), "worker"], env=env, stdout=subprocess.DEVNULL)
        for _ in range(2)
    ]
    try:
        deadline = time.monotonic() + 120
        for bearer, _, rid in identities:
            with live.client(bearer) as client:
                while client.get(f"/v1/runtimes/{rid}").json()["status"] != "running":
                    if time.monotonic() > deadline:
                        raise RuntimeError("the runtimes did not all start")
                    time.sleep(0.05)
        started = time.perf_counter()
        for bearer, agent_id, _ in identities:
            with live.client(bearer) as client:
                for n in range(messages):
                    client.post(
                        f"/v1/identities/{agent_id}/inbox",
                        json={"sender": "bench", "body": f"message {n}"},
                    )
        while run_db(live, _pending, write=False):
            if time.perf_counter() - started > 600:
                raise RuntimeError("the cycles did not all complete")
            time.sleep(0.05)
        elapsed = time.perf_counter() - started
    finally:
        for process in workers:
            process.terminate()
        for process in workers:
            process.wait(30)
    total = runtimes * messages
    return total / elapsed, total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--runtimes", type=int, default=100)
    parser.add_argument("--messages", type=int, default=3)
    parser.add_argument("--database-url", default=None)
    args = parser.parse_args(argv)

    raw = raw_rate(args.seconds)
    print(f"raw AES-GCM open (4 KiB) + Ed25519 verify: {raw:,.0f} /s")
    with tempfile.TemporaryDirectory() as tmp, fake_llm() as fake:
        overrides: dict[str, Any] = {
            "pow_difficulty_bits": 0,
            "limiter_enabled": False,
            "kms_master_key": MASTER_KEY,
            "worker_in_process": False,
        }
        if args.database_url:
            overrides["database_url"] = args.database_url
        settings = sqlite_settings(Path(tmp), **overrides)
        with live_service(settings) as live:
            print(f"database: {live.settings.database_url.split(':', 1)[0]}")
            one, sixteen = bridge_rates(live, args.seconds)
            print(f"bridge decrypt round trips (4 KiB), 1 in flight: {one:,.0f} /s")
            print(f"bridge decrypt round trips (4 KiB), 16 in flight: {sixteen:,.0f} /s")
            cycles, total = cycle_rate(live, fake.openai_base_url, args.runtimes, args.messages)
            print(
                f"think cycles, {args.runtimes} runtimes, 2 workers, {total} messages: "
                f"{cycles:,.1f} /s"
            )
    print(f"ratio bridge(1)/raw: {one / raw:.4f}; bridge(16)/raw: {sixteen / raw:.4f}")
    print(f"ratio cycles/bridge(16): {cycles / sixteen:.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
