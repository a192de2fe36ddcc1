"""The wake's cost as the store grows: a small project against a hundred times larger one.

Run ``.venv/bin/python bench/wake.py`` (``--requests N`` wakes per size and round, default 300;
``--rounds R``, default 3; ``--backends sqlite,postgresql``; ``--small M/R`` and ``--large M/R``
memories/runtimes, default ``1000/10`` and ``100000/1000``; ``--database-url`` a PostgreSQL
server URL; ``--redis-url``; ``--json``). It is a measurement, not a test: it exits 0 whether or
not the goals are met, and non-zero only if the run itself breaks.

For each backend, two services run side by side (``hearth serve``, one worker each; SQLite in a
file of its own, or a fresh PostgreSQL database created and dropped by the bench), one per size.
Each has one agent registered over HTTP (self-service), then its memories (two thirds the
agent's, a third the project's; all episodic but ``ELEVATED`` foundational and constitutive ones,
the same number at both sizes) and its runtimes,
each with a thought, written straight into the database in batches, as years of use would have
left them (the database's triggers keep the wake's counters as for any write).

Then R rounds, each alternating the two services request by request (so a change in the
machine's load hits both alike), of N ``GET /v1/wake?refresh=true`` (a full rebuild, JSON) one
at a time, timed by the client; then N cached reads (no ``refresh``), for the server's CPU per
cached wake; then, for a memory stored and for a vault secret replaced, N writes alone and N
writes each followed by a wake (which rebuilds only the sections the write touched,
docs/wake.md): the difference is the server's CPU per wake after such a write. The server's CPU
(user + system of its process tree, from ``/proc``) is read around each phase.

Printed per backend and size: p50 and p99 latency (the median over rounds), and server CPU ms
per rebuilt and per cached wake, and per wake after each kind of write. Goals (issue 15): the
large project's p99 within 1.5x of the small one's, and under 30 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx2
from sqlalchemy import Connection

from arrival import free_port, registration
from hearth.server.db import Database
from hearth.server.db.engine import utcnow
from hearth.server.db.tables import memories, runtimes, strands, thoughts
from mixed import DEFAULT_DATABASE, DEFAULT_REDIS, HEARTH, running, server_env
from mixed import tree_cpu as server_cpu

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # tests/support/postgres.py, the one way to a fresh database

from tests.support.postgres import fresh_database  # noqa: E402

HOST = "127.0.0.1"
RATIO_GOAL = 1.5
P99_GOAL_MS = 30.0
BATCH = 5_000
# Elevations are deliberate, signed acts (docs/elevation.md): a long life has many memories and
# few elevated ones. The same number at both sizes; the wake folds every one of them into the
# effective expression, so their count, not the store's, sets that part of the cost.
ELEVATED = 20


@dataclass(frozen=True)
class Size:
    memories: int
    runtimes: int

    @property
    def label(self) -> str:
        return f"{self.memories:,} memories / {self.runtimes:,} runtimes"


def size(text: str) -> Size:
    memories_, runtimes_ = text.split("/")
    return Size(int(memories_), int(runtimes_))


@dataclass
class Served:
    size: Size
    base_url: str
    pid: int
    bearer: str
    rebuilt: list[float] = field(default_factory=list)  # seconds, per request
    cpu_rebuilt: list[float] = field(default_factory=list)  # server CPU s per wake, per round
    cpu_cached: list[float] = field(default_factory=list)
    # Server CPU s per request of the write phases, per round: a write alone, a write + a wake.
    cpu_writes: dict[str, list[float]] = field(default_factory=dict)
    identity_id: str = ""
    p50: list[float] = field(default_factory=list)
    p99: list[float] = field(default_factory=list)


# --- Seeding -------------------------------------------------------------------------------


def register(base_url: str) -> tuple[str, str, str]:
    """(project id, identity id, bearer) of a new self-registered agent."""
    _, body = registration(8)
    answer = httpx2.post(
        f"{base_url}/v1/register/agent",
        content=body,
        headers={"Content-Type": "application/json"},
        timeout=30,
    )
    if answer.status_code != 201:
        raise RuntimeError(f"registration: {answer.status_code} {answer.text[:500]}")
    created = answer.json()
    return created["project"]["id"], created["agent"]["id"], created["project"]["api_key"]


def seed(database_url: str, project_id: str, identity_id: str, wanted: Size) -> None:
    """Memories and runtimes (each with one strand and one thought in the last day)."""

    def memories_batch(conn: Connection, start: int, stop: int) -> None:
        now = utcnow()
        conn.execute(
            memories.insert(),
            [
                {
                    "id": str(uuid.uuid4()),
                    "project_id": project_id,
                    # Two thirds the agent's own, a third the project's.
                    "identity_id": identity_id if index % 3 else None,
                    "tier": tier(index),
                    "key": f"topic-{index % 50}",
                    "content": f"memory {index}: " + "a day of an agent's long life " * 6,
                    "created_at": now - timedelta(minutes=index),
                    "elevated_at": now - timedelta(minutes=index) if index < ELEVATED else None,
                    "expression_patch": {"register_append": f"r{index}"}
                    if index < ELEVATED
                    else None,
                }
                for index in range(start, stop)
            ],
        )

    def runtimes_batch(conn: Connection) -> None:
        now = utcnow()
        for index in range(wanted.runtimes):
            runtime_id, strand_id = str(uuid.uuid4()), str(uuid.uuid4())
            made = now - timedelta(hours=index)
            conn.execute(runtimes.insert(), runtime_row(runtime_id, project_id, made, index))
            conn.execute(
                strands.insert(),
                {
                    "id": strand_id,
                    "project_id": project_id,
                    "identity_id": identity_id,
                    "runtime_id": runtime_id,
                    "name": "main",
                    "next_seq": 2,
                    "created_at": made,
                },
            )
            conn.execute(
                thoughts.insert(),
                {
                    "id": str(uuid.uuid4()),
                    "strand_id": strand_id,
                    "project_id": project_id,
                    "runtime_id": runtime_id,
                    "seq": 1,
                    "ciphertext": b"\x00" * 64,
                    "nonce": b"\x01" * 12,
                    "signature": None,
                    "signing_key_id": None,
                    "created_at": now - timedelta(minutes=index % 600),
                },
            )

    async def run() -> None:
        db = Database(database_url)
        try:
            for start in range(0, wanted.memories, BATCH):
                await db.transaction(memories_batch, start, min(start + BATCH, wanted.memories))
            await db.transaction(runtimes_batch)
        finally:
            await db.dispose()

    asyncio.run(run())


def tier(index: int) -> str:
    if index >= ELEVATED:
        return "episodic"
    return ("foundational", "constitutive")[index % 2]


def runtime_row(runtime_id: str, project_id: str, made: Any, index: int) -> dict[str, Any]:
    return {
        "id": runtime_id,
        "project_id": project_id,
        "identity_id": None,
        "name": f"runtime {index}",
        "mode": "self",
        "status": "running",
        "region": "lhr",
        "llm": {"provider": "local", "model": "llama"},
        "bridge": None,
        "metadata": {"shelf": index % 7},
        "last_error": None,
        "control_token_hash": None,
        "key_material": None,
        "bridge_connected": False,
        "last_seen_at": made,
        "last_thought_at": None,
        "last_work_at": None,
        "status_changed_at": made,
        "lease_owner": None,
        "lease_until": 0,
        "created_at": made,
        "updated_at": made,
        "deleted_at": None,
    }


# --- Serving -------------------------------------------------------------------------------


@contextmanager
def database_for(backend: str, server_url: str, tmp: Path, label: str) -> Iterator[str]:
    if backend == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp / f'{label}.sqlite3'}"
    else:
        with fresh_database(server_url) as url:
            yield url


@contextmanager
def served(
    backend: str, wanted: Size, args: argparse.Namespace, tmp: Path, stack: ExitStack
) -> Iterator[Served]:
    label = f"{backend}-{wanted.memories}"
    database_url = stack.enter_context(database_for(backend, args.database_url, tmp, label))
    port = free_port()
    base_url = f"http://{HOST}:{port}"
    (tmp / label).mkdir()
    env = server_env(database_url, args.redis_url, port, tmp / label)
    command = [HEARTH, "serve", "--host", HOST, "--port", str(port), "--workers", "1"]
    pid = stack.enter_context(running(command, env, base_url, tmp / f"{label}.log"))
    project_id, identity_id, bearer = register(base_url)
    seed(database_url, project_id, identity_id, wanted)
    yield Served(wanted, base_url, pid, bearer, identity_id=identity_id)


# --- Measuring -----------------------------------------------------------------------------


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# The write phases: each write alone, then each followed by a wake, which then rebuilds the
# sections the write touched (services/wake_sections.py); the difference is that wake's cost.
WRITES = ("memory", "vault")
PHASES = ("rebuilt", "cached", *(f"{w}{wake}" for w in WRITES for wake in ("", "+wake")))


def request(client: httpx2.Client, served: Served, phase: str, index: int) -> None:
    """One request (or write and wake) of ``phase``."""
    write, _, then = phase.partition("+")
    if write == "memory":
        body = {"content": f"bench memory {index}", "agent_id": served.identity_id}
        client.post("/v1/memories", json=body).raise_for_status()
    elif write == "vault":
        client.put("/v1/vault/bench", json={"value": f"v{index}"}).raise_for_status()
    if write in WRITES and not then:
        return
    params = {"refresh": "true"} if phase == "rebuilt" else {}
    answer = client.get("/v1/wake", params=params)
    answer.raise_for_status()
    if then and answer.headers["X-Wake-Cache"] != "miss":
        raise RuntimeError(f"a wake after a {write} write was served from the cache")


def round_of(services: list[Served], requests: int) -> None:
    clients = {
        s.base_url: httpx2.Client(
            base_url=s.base_url, headers={"Authorization": f"Bearer {s.bearer}"}, timeout=30
        )
        for s in services
    }
    try:
        for phase in PHASES:
            timings: dict[str, list[float]] = {s.base_url: [] for s in services}
            cpu: dict[str, float] = {s.base_url: 0.0 for s in services}
            for s in services:  # warm: connections, caches, the first build, a known bearer
                for index in range(5):
                    request(clients[s.base_url], s, phase, index)
            # Each server idles while the other answers: its CPU over the phase is its own work.
            before = {s.base_url: server_cpu(s.pid) for s in services}
            for index in range(requests):
                for s in services:
                    started = time.perf_counter()
                    request(clients[s.base_url], s, phase, index)
                    timings[s.base_url].append(time.perf_counter() - started)
            for s in services:
                cpu[s.base_url] = server_cpu(s.pid) - before[s.base_url]
            for s in services:
                if phase == "rebuilt":
                    s.p50.append(quantile(timings[s.base_url], 0.5) * 1000)
                    s.p99.append(quantile(timings[s.base_url], 0.99) * 1000)
                    s.cpu_rebuilt.append(cpu[s.base_url] / requests)
                elif phase == "cached":
                    s.cpu_cached.append(cpu[s.base_url] / requests)
                else:
                    s.cpu_writes.setdefault(phase, []).append(cpu[s.base_url] / requests)
    finally:
        for client in clients.values():
            client.close()


def after_write_ms(s: Served, write: str) -> float:
    """Server CPU ms of a wake after a ``write``: (write + wake) - write, medians of rounds."""
    both = statistics.median(s.cpu_writes[f"{write}+wake"])
    alone = statistics.median(s.cpu_writes[write])
    return round((both - alone) * 1000, 2)


def run_backend(backend: str, args: argparse.Namespace) -> list[Served]:
    with tempfile.TemporaryDirectory(prefix="hearth-wake-bench-") as folder, ExitStack() as stack:
        tmp = Path(folder)
        services = [
            stack.enter_context(served(backend, wanted, args, tmp, stack))
            for wanted in (args.small, args.large)
        ]
        for _ in range(args.rounds):
            round_of(services, args.requests)
        return services


def summary(results: dict[str, list[Served]]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "python": platform.python_version(),
        "load_average": os.getloadavg(),
        "goals": {"p99_ratio": RATIO_GOAL, "p99_ms": P99_GOAL_MS},
        "backends": {},
    }
    for backend, services in results.items():
        rows = [
            {
                "size": s.size.label,
                "p50_ms": round(statistics.median(s.p50), 2),
                "p99_ms": round(statistics.median(s.p99), 2),
                "p99_runs_ms": [round(v, 2) for v in s.p99],
                "cpu_ms_per_rebuilt_wake": round(statistics.median(s.cpu_rebuilt) * 1000, 2),
                "cpu_ms_per_cached_wake": round(statistics.median(s.cpu_cached) * 1000, 2),
                **{f"cpu_ms_per_wake_after_{w}_write": after_write_ms(s, w) for w in WRITES},
            }
            for s in services
        ]
        small, large = rows
        ratio = large["p99_ms"] / small["p99_ms"]
        out["backends"][backend] = {
            "sizes": rows,
            "p99_ratio": round(ratio, 3),
            "met": ratio <= RATIO_GOAL and large["p99_ms"] < P99_GOAL_MS,
        }
    return out


def text(result: dict[str, Any]) -> str:
    lines = [
        f"wake bench (python {result['python']}, load average "
        + ", ".join(f"{v:.2f}" for v in result["load_average"])
        + ")"
    ]
    for backend, entry in result["backends"].items():
        lines.append(f"{backend}:")
        for row in entry["sizes"]:
            lines.append(
                f"  {row['size']:>36}: p50 {row['p50_ms']:6.2f} ms  p99 {row['p99_ms']:6.2f} ms"
                f"  (runs {row['p99_runs_ms']})  server CPU {row['cpu_ms_per_rebuilt_wake']:.2f}"
                f" ms/rebuilt, {row['cpu_ms_per_cached_wake']:.2f} ms/cached, after a write: "
                + ", ".join(f"{w} {row[f'cpu_ms_per_wake_after_{w}_write']:.2f}" for w in WRITES)
                + " ms"
            )
        verdict = "met" if entry["met"] else "NOT met"
        lines.append(
            f"  p99 large/small = {entry['p99_ratio']:.3f} (goal <= {RATIO_GOAL}, and large p99"
            f" < {P99_GOAL_MS:.0f} ms): {verdict}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument("--small", type=size, default=Size(1_000, 10))
    parser.add_argument("--large", type=size, default=Size(100_000, 1_000))
    parser.add_argument(
        "--database-url", default=os.environ.get("SERVICE_TEST_DATABASE_URL", DEFAULT_DATABASE)
    )
    parser.add_argument("--redis-url", default=DEFAULT_REDIS)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    results = {backend: run_backend(backend, args) for backend in args.backends.split(",")}
    result = summary(results)
    print(json.dumps(result, indent=2) if args.json else text(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
