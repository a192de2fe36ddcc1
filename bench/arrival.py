"""Arrival throughput of the running service, against a minimal route of the same app.

Run ``.venv/bin/python bench/arrival.py`` (``--seconds N`` per phase, default 5;
``--concurrency C`` workers, default 32; ``--database-url URL`` for PostgreSQL, whose database
it writes into; SQLite in a temporary directory otherwise). It is a measurement, not a test: it
exits 0 whether or not the goal is met, and non-zero only if the run itself breaks.

Two processes on loopback:
- the server: uvicorn as ``hearth serve`` configures it (``serving.uvicorn_options``: the
  head-limited protocol), one worker, log level warning (so no access lines), running the app
  ``reference_app()`` builds: ``create_app(settings)`` plus one bench-only route (below), proof
  of work at a low difficulty (8 bits) and the limiter off, so the figures are the server's cost;
- the load generator: this process, asyncio and ``httpx2.AsyncClient`` with C concurrent
  workers, a warm-up of every phase first, then each phase for N seconds.

The three phases:
1. reference: ``POST /bench/reference``, a route of the same app (same middleware, same database)
   that verifies one Ed25519 signature sent in the body (``cryptography``) and inserts one row
   into ``single_use`` through the app's own fastest write path (``db.transaction``, the one the
   arrival and root-proof routes use): the irreducible cost of an authenticated write on this
   stack.
2. registrations: ``POST /v1/register/agent``, self-service, each body with its key proof and
   proof-of-work prepared by this process before timing starts (enough for the phase, estimated
   from the warm-up; the phase ends early, and says so, if they run out).
3. mutations: ``PUT /v1/identities/{id}/expression`` with the bearer and a correct root proof.
   A root-proof mutation holds a lease on its identity (one in flight per identity by design),
   so each worker owns a pre-registered identity and tracks its sequence; it signs each request
   as it sends it (the sequence and timestamp are part of the proof), as the reference's client
   signs each of its bodies.

Printed: requests/s, p50 and p99 latency in ms and the error count of each phase (an error is any
answer other than the route's success status, or no answer), the CPU time per request of the
server process (where /proc shows it) and of the load process (when the load process spends about
as much per request as the server, the figure is the client's limit, not the server's), and the
ratios registrations/reference and mutations/reference against the goal of 0.5.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import collections
import contextlib
import json
import math
import os
import platform
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx2
import uvicorn
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from sqlalchemy import Connection

from hearth.proofs import (
    RegisterIntent,
    authority_digest,
    b64_encode,
    format_timestamp,
    register_digest,
    sign_digest,
    solve_pow,
)
from hearth.server.app import create_app
from hearth.server.db.engine import utcnow
from hearth.server.db.tables import single_use
from hearth.server.serving import uvicorn_options
from hearth.server.settings import Settings

GOAL = 0.5
POW_DIFFICULTY_BITS = 8
HOST = "127.0.0.1"
REGISTER = "/v1/register/agent"
REFERENCE = "/bench/reference"
RUNTIME = {"provider": "bench", "model": "arrival"}
EXPRESSION = json.dumps(
    {"register": "bench", "walls": ["no_self_witnessing"], "wake_text": "steady"},
    separators=(",", ":"),
).encode()
JSON = {"Content-Type": "application/json"}


# --- The server process ------------------------------------------------------------------------


class ReferenceBody(BaseModel):
    public_key: str = Field(max_length=64, description="standard base64, 32 bytes")
    message: str = Field(max_length=256, description="standard base64")
    signature: str = Field(max_length=128, description="standard base64, 64 bytes")


async def reference_route(body: ReferenceBody, request: Request) -> JSONResponse:
    """Verify one Ed25519 signature, insert one row: the bench's yardstick."""
    try:
        key = Ed25519PublicKey.from_public_bytes(base64.b64decode(body.public_key, validate=True))
        key.verify(
            base64.b64decode(body.signature, validate=True),
            base64.b64decode(body.message, validate=True),
        )
    except (ValueError, InvalidSignature):
        return JSONResponse({"error": "invalid_signature", "message": "no"}, status_code=422)
    await request.app.state.hearth.db.transaction(insert_one)
    return JSONResponse({"verified": True}, status_code=201)


REFERENCE_INSERT = single_use.insert()


def insert_one(conn: Connection) -> None:
    """One row through the app's fastest write path (one transaction, one thread hop)."""
    conn.execute(
        REFERENCE_INSERT,
        {"scope": "bench", "digest": secrets.token_hex(32), "created_at": utcnow()},
    )


def reference_app() -> FastAPI:
    """The service as ``create_app`` builds it from ``SERVICE_*``, plus the reference route."""
    app = create_app(Settings())
    app.add_api_route(REFERENCE, reference_route, methods=["POST"], status_code=201)
    return app


def serve(port: int) -> None:
    # As `hearth serve` runs it: the same protocol (head limits), logging and shutdown bound.
    uvicorn.run(
        reference_app(),
        host=HOST,
        port=port,
        workers=1,
        lifespan="on",
        **uvicorn_options(Settings(), own_process=True),
    )


def server_environment(database_url: str, tmp: Path, freshness_ms: int) -> dict[str, str]:
    """The child's environment: none of the caller's SERVICE_* settings, only the bench's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SERVICE_")}
    env.update(
        SERVICE_DATABASE_URL=database_url,
        SERVICE_POW_DIFFICULTY_BITS=str(POW_DIFFICULTY_BITS),
        SERVICE_LIMITER_ENABLED="false",
        SERVICE_FRESHNESS_MS=str(freshness_ms),
        SERVICE_PACKAGES_DIR=str(tmp / "dist"),
        SERVICE_LOG_LEVEL="warning",
    )
    return env


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of a process, from /proc (None where there is no /proc)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# --- The load generator --------------------------------------------------------------------------


def raw(key: Ed25519PrivateKey | X25519PrivateKey) -> bytes:
    return key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)


def now_text() -> str:
    return format_timestamp(datetime.now(UTC))


def registration(difficulty: int) -> tuple[Ed25519PrivateKey, bytes]:
    """A complete self-service registration body (key proof and proof-of-work) and its key."""
    signing, box = Ed25519PrivateKey.generate(), X25519PrivateKey.generate()
    name = "Bench"
    timestamp, nonce = now_text(), secrets.token_urlsafe(24)
    public = b64_encode(raw(signing))
    intent = RegisterIntent(
        display_name=name,
        signing_key=raw(signing),
        box_key=raw(box),
        timestamp=timestamp,
        registration_nonce=nonce,
        runtime=RUNTIME,
    )
    body = {
        "display_name": name,
        "agent_public_key": public,
        "box_public_key": b64_encode(raw(box)),
        "runtime": RUNTIME,
        "key_proof": {
            "timestamp": timestamp,
            "signature": sign_digest(signing, register_digest(intent)),
        },
        "registration_nonce": nonce,
        "pow_nonce": solve_pow(public, name, timestamp, difficulty),
    }
    return signing, json.dumps(body, separators=(",", ":")).encode()


@dataclass
class Phase:
    name: str
    latencies: list[float] = field(default_factory=list)
    errors: int = 0
    elapsed: float = 0.0
    server_cpu: float | None = None
    load_cpu: float = 0.0
    ran_out: bool = False
    first_error: str | None = None

    @property
    def count(self) -> int:
        return len(self.latencies)

    @property
    def rate(self) -> float:
        return self.count / self.elapsed if self.elapsed > 0 else 0.0

    def percentile_ms(self, fraction: float) -> float:
        if not self.latencies:
            return math.nan
        ordered = sorted(self.latencies)
        index = min(len(ordered) - 1, max(0, math.ceil(fraction * len(ordered)) - 1))
        return ordered[index] * 1000

    @property
    def cpu_ms_per_request(self) -> float | None:
        if self.server_cpu is None or not self.count:
            return None
        return self.server_cpu / self.count * 1000

    @property
    def load_cpu_ms_per_request(self) -> float | None:
        return self.load_cpu / self.count * 1000 if self.count else None


Send = Callable[[httpx2.AsyncClient], Awaitable[httpx2.Response | None]]


@dataclass
class Owned:
    """A worker's own identity for the mutation phase, and the sequence it will sign next."""

    signing: Ed25519PrivateKey
    identity: str
    did: str
    bearer: str
    sequence: int = 1


async def run_phase(
    name: str,
    client: httpx2.AsyncClient,
    senders: list[Send],
    *,
    seconds: float,
    success: int,
    server_pid: int,
) -> Phase:
    """Each sender is one worker's next request (None: nothing left to send)."""
    phase = Phase(name)
    deadline = time.perf_counter() + seconds
    ends: list[float] = []

    async def worker(send: Send) -> None:
        while time.perf_counter() < deadline:
            started = time.perf_counter()
            try:
                response = await send(client)
            except httpx2.HTTPError as exc:
                phase.errors += 1
                phase.first_error = phase.first_error or repr(exc)
                continue
            if response is None:
                phase.ran_out = True
                break
            if response.status_code == success:
                phase.latencies.append(time.perf_counter() - started)
            else:
                phase.errors += 1
                phase.first_error = phase.first_error or f"{response.status_code} {response.text}"
        ends.append(time.perf_counter())

    cpu_before, load_before = cpu_seconds(server_pid), time.process_time()
    started = time.perf_counter()
    await asyncio.gather(*(worker(send) for send in senders))
    # Up to the last answer: a worker that ran out of prepared bodies stops early.
    phase.elapsed = max(ends) - started
    cpu_after, phase.load_cpu = cpu_seconds(server_pid), time.process_time() - load_before
    if cpu_before is not None and cpu_after is not None:
        phase.server_cpu = cpu_after - cpu_before
    return phase


def reference_sender() -> Send:
    signing = Ed25519PrivateKey.generate()
    public = b64_encode(raw(signing))
    counter = 0

    async def send(client: httpx2.AsyncClient) -> httpx2.Response:
        nonlocal counter
        counter += 1
        message = f"bench reference {counter} {time.time_ns()}".encode()
        body = {
            "public_key": public,
            "message": b64_encode(message),
            "signature": b64_encode(signing.sign(message)),
        }
        return await client.post(
            REFERENCE, content=json.dumps(body, separators=(",", ":")), headers=JSON
        )

    return send


def registration_sender(pool: collections.deque[bytes]) -> Send:
    async def send(client: httpx2.AsyncClient) -> httpx2.Response | None:
        if not pool:
            return None
        return await client.post(REGISTER, content=pool.popleft(), headers=JSON)

    return send


def mutation_sender(owned: Owned) -> Send:
    target = f"/v1/identities/{owned.identity}/expression"

    async def send(client: httpx2.AsyncClient) -> httpx2.Response:
        timestamp = now_text()
        digest = authority_digest(
            owned.did, "PUT", target, EXPRESSION, sequence=owned.sequence, timestamp=timestamp
        )
        headers = {
            **JSON,
            "Authorization": f"Bearer {owned.bearer}",
            "X-Service-Authority-Sequence": str(owned.sequence),
            "X-Service-Authority-Timestamp": timestamp,
            "X-Service-Authority-Signature": sign_digest(owned.signing, digest),
        }
        response = await client.put(target, content=EXPRESSION, headers=headers)
        if response.status_code == 200:
            owned.sequence += 1
        elif response.status_code == 409:  # resynchronise (counted as an error all the same)
            with contextlib.suppress(KeyError, TypeError, ValueError):
                owned.sequence = int(response.json()["details"]["next_sequence"])
        return response

    return send


async def register_owners(client: httpx2.AsyncClient, count: int, difficulty: int) -> list[Owned]:
    owned = []
    for _ in range(count):
        signing, body = registration(difficulty)
        response = await client.post(REGISTER, content=body, headers=JSON)
        if response.status_code != 201:
            raise RuntimeError(f"registering a worker's identity: {response.text}")
        created = response.json()
        owned.append(
            Owned(
                signing,
                created["agent"]["id"],
                created["agent"]["did"],
                created["project"]["api_key"],
                int(created["authority"]["next_sequence"]),
            )
        )
    return owned


def milliseconds(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


@dataclass
class Report:
    phases: dict[str, Phase]
    difficulty: int
    limiter_enabled: bool
    database: str
    concurrency: int
    seconds: float
    warmup: float
    prepared: int
    prepare_s: float
    server_pid: int

    def ratio(self, name: str) -> float:
        reference = self.phases["reference"].rate
        return self.phases[name].rate / reference if reference else math.nan

    def as_json(self) -> dict[str, Any]:
        return {
            "pow_difficulty_bits": self.difficulty,
            "limiter_enabled": self.limiter_enabled,
            "database": self.database,
            "concurrency": self.concurrency,
            "seconds": self.seconds,
            "prepared_registrations": self.prepared,
            "phases": {
                name: {
                    "requests": phase.count,
                    "requests_per_s": round(phase.rate, 1),
                    "p50_ms": round(phase.percentile_ms(0.50), 2),
                    "p99_ms": round(phase.percentile_ms(0.99), 2),
                    "errors": phase.errors,
                    "server_cpu_ms_per_request": phase.cpu_ms_per_request,
                    "load_cpu_ms_per_request": phase.load_cpu_ms_per_request,
                    "ran_out_of_prepared_bodies": phase.ran_out,
                }
                for name, phase in self.phases.items()
            },
            "ratios": {
                f"{name}/reference": round(self.ratio(name), 3)
                for name in ("registrations", "mutations")
            },
            "goal": GOAL,
        }

    def text(self) -> str:
        lines = [
            "hearth arrival bench",
            f"  python {platform.python_version()} on {platform.machine()}, "
            f"{os.cpu_count()} CPUs; database {self.database}",
            f"  server: uvicorn, 1 worker, pid {self.server_pid}; load: {self.concurrency} "
            f"concurrent workers in pid {os.getpid()} (httpx2, asyncio), loopback",
            f"  proof-of-work difficulty {self.difficulty} bits, limiter "
            f"{'on' if self.limiter_enabled else 'off'} (as GET /public/plans reports them)",
            f"  {self.warmup:g} s warm-up, then {self.seconds:g} s per phase; "
            f"{self.prepared} registrations prepared in {self.prepare_s:.2f} s before timing",
            "",
            f"  {'':<14}{'req/s':>10}{'p50 ms':>10}{'p99 ms':>10}{'errors':>8}"
            f"{'CPU ms/req: server':>21}{'load':>7}",
        ]
        for name, phase in self.phases.items():
            lines.append(
                f"  {name:<14}{phase.rate:>10.1f}{phase.percentile_ms(0.50):>10.2f}"
                f"{phase.percentile_ms(0.99):>10.2f}{phase.errors:>8}"
                f"{milliseconds(phase.cpu_ms_per_request):>21}"
                f"{milliseconds(phase.load_cpu_ms_per_request):>7}"
                + ("  (ran out of prepared bodies)" if phase.ran_out else "")
            )
        lines.append("")
        for name in ("registrations", "mutations"):
            ratio = self.ratio(name)
            verdict = "goal met" if ratio >= GOAL else "goal missed"
            lines.append(f"  {name}/reference = {ratio:.3f} (goal {GOAL}): {verdict}")
        for phase in self.phases.values():
            if phase.first_error:
                lines.append(f"  first error in {phase.name}: {phase.first_error[:300]}")
        return "\n".join(lines)


async def load(
    base_url: str, server_pid: int, seconds: float, concurrency: int, database: str
) -> Report:
    limits = httpx2.Limits(
        max_connections=concurrency, max_keepalive_connections=concurrency, keepalive_expiry=60
    )
    async with httpx2.AsyncClient(
        base_url=base_url, limits=limits, timeout=60, trust_env=False
    ) as client:
        plans = (await client.get("/public/plans")).json()["no_exploit_loophole"]
        difficulty = int(plans["pow_difficulty_bits"])
        warmup = min(1.0, max(seconds, 0.2))

        def measure(
            name: str, senders: list[Send], seconds: float, success: int
        ) -> Awaitable[Phase]:
            return run_phase(
                name, client, senders, seconds=seconds, success=success, server_pid=server_pid
            )

        owned = await register_owners(client, concurrency, difficulty)
        # Warm-up: every phase once, untimed; the registrations' rate sizes the prepared pool.
        warm_pool = collections.deque(registration(difficulty)[1] for _ in range(concurrency * 8))
        warm = await measure(
            "warm-up", [registration_sender(warm_pool) for _ in range(concurrency)], warmup, 201
        )
        await measure("warm-up", [reference_sender() for _ in range(concurrency)], warmup, 201)
        await measure("warm-up", [mutation_sender(one) for one in owned], warmup, 200)

        phases: dict[str, Phase] = {}
        phases["reference"] = await measure(
            "reference", [reference_sender() for _ in range(concurrency)], seconds, 201
        )
        # Enough prepared bodies for the phase at twice the warm-up's rate (and never fewer
        # than a few per worker); the phase stops early, and says so, if they run out.
        needed = max(concurrency * 4, math.ceil(max(warm.rate, 1.0) * seconds * 2))
        prepare_started = time.perf_counter()
        pool = collections.deque(registration(difficulty)[1] for _ in range(needed))
        prepare_s = time.perf_counter() - prepare_started
        phases["registrations"] = await measure(
            "registrations", [registration_sender(pool) for _ in range(concurrency)], seconds, 201
        )
        phases["mutations"] = await measure(
            "mutations", [mutation_sender(one) for one in owned], seconds, 200
        )
    return Report(
        phases=phases,
        difficulty=difficulty,
        limiter_enabled=bool(plans["limiter_enabled"]),
        database=database,
        concurrency=concurrency,
        seconds=seconds,
        warmup=warmup,
        prepared=needed,
        prepare_s=prepare_s,
        server_pid=server_pid,
    )


def wait_until_up(base_url: str, server: subprocess.Popen[bytes], timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"the server exited with {server.returncode} before answering")
        try:
            if httpx2.get(f"{base_url}/v1/welcome", timeout=1, trust_env=False).is_success:
                return
        except httpx2.HTTPError:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"the server did not answer within {timeout_s} s")


def stop(server: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL if the server has not exited within 30 s."""
    server.terminate()
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


def positive(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError("must be > 0")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--seconds", type=positive, default=5.0, help="per phase (default 5)")
    parser.add_argument("--concurrency", type=int, default=32, help="workers (default 32)")
    parser.add_argument(
        "--database-url",
        default=None,
        help="the service's database (default: SQLite in a temporary directory); the bench "
        "writes into it",
    )
    parser.add_argument("--json", action="store_true", help="print a JSON summary instead")
    parser.add_argument("--serve", type=int, metavar="PORT", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve is not None:  # the server process (started by the bench itself)
        serve(args.serve)
        return 0
    if args.concurrency < 1:
        parser.error("--concurrency must be at least 1")

    with tempfile.TemporaryDirectory(prefix="hearth-bench-") as tmp:
        database_url = args.database_url or f"sqlite+aiosqlite:///{tmp}/hearth.sqlite3"
        database = "PostgreSQL" if "postgres" in database_url else "SQLite (temporary file)"
        # The prepared proofs must still be fresh when the last of them is sent.
        freshness_ms = max(300_000, int((args.seconds * 4 + 120) * 1000))
        port = free_port()
        server = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--serve", str(port)],
            env=server_environment(database_url, Path(tmp), freshness_ms),
        )
        try:
            base_url = f"http://{HOST}:{port}"
            wait_until_up(base_url, server)
            report = asyncio.run(
                load(base_url, server.pid, args.seconds, args.concurrency, database)
            )
        finally:
            stop(server)
    print(json.dumps(report.as_json(), indent=2) if args.json else report.text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
