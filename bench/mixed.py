"""Server CPU per request under a mixed load, against the arrival bench's reference route.

Run ``.venv/bin/python bench/mixed.py`` (``--requests N`` per phase and round, default 2,000;
``--rounds R``, default 3; ``--concurrency C``, default 16; ``--workers 1,2``; ``--database-url``
a PostgreSQL server URL, by default ``SERVICE_TEST_DATABASE_URL`` or the local one;
``--redis-url``, default ``redis://127.0.0.1:6379/0``; ``--json``). It is a measurement, not a
test: it exits 0 whether or not the goals are met, and non-zero only if the run itself breaks.

For each worker count, on a fresh PostgreSQL database (created by the bench and dropped at the
end) and Redis:
- the service: ``hearth serve --workers N`` itself (migrating first, as it always does);
- the reference server, on the same database and Redis: uvicorn as ``hearth serve`` runs it
  (``serving.uvicorn_options``, the same worker count, the same metrics directory for several
  workers) on ``reference_app``, the very app ``app_from_env`` builds plus the arrival bench's
  ``POST /bench/reference`` route (``bench/arrival.py``: verify one Ed25519 signature, insert one
  row): the irreducible cost of an authenticated write on this stack;
- a few agents registered (self-service, each its own project and bearer), each seeded with
  memories and vault secrets;
- then R rounds, each the reference phase and the mixed phase in turn (so a change in the
  machine's load hits both), each N requests from C concurrent httpx2 clients in this process.

The mixed load is a fixed schedule (seeded) of 55 % listings (memories and chronicle, 20 per
page; keys, wallets, vault), 15 % reads of single items (a memory, an expression, a secret's
metadata, a wallet), 10 % wakes (``GET /v1/wake``, JSON) and 20 % writes (an episodic memory, a
vault secret replaced), spread over the agents.

The figure is the server's CPU per request: user + system time from ``/proc/PID/stat`` of the
server's master process and every descendant (the workers), read before and after each phase,
divided by the phase's requests. The load generator's own CPU is not in it. The background
orchestrator worker is off (``SERVICE_WORKER_IN_PROCESS=false``) in both servers, so an idle
loop's ticks do not blur the figure.

Printed per worker count: requests/s, p50/p99 latency, errors and CPU ms per request of each
phase (median of the rounds), then mixed/reference (goal <= 2.0) and the two-worker CPU per
mixed request over the one-worker one (goal <= 1.1).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import platform
import random
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
from fastapi import FastAPI

from arrival import REFERENCE, free_port, reference_route, reference_sender, registration, stop

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # tests/support/postgres.py, the one way to a fresh database

from tests.support.postgres import fresh_database  # noqa: E402

RATIO_GOAL = 2.0
WORKERS_GOAL = 1.1
HOST = "127.0.0.1"
HEARTH = str(Path(sys.executable).parent / "hearth")
DEFAULT_DATABASE = "postgresql+asyncpg://postgres@127.0.0.1:5432/postgres"
DEFAULT_REDIS = "redis://127.0.0.1:6379/0"
PAGE = 20  # items per page of the memory and chronicle listings
MIX = {"listing": 55, "read": 15, "wake": 10, "write": 20}


# --- The reference server --------------------------------------------------------------------


def reference_app() -> FastAPI:
    """``app_from_env()`` (what ``hearth serve`` serves) plus the arrival bench's reference route.
    A factory for uvicorn: every worker builds its own."""
    from hearth.server.app import app_from_env  # noqa: PLC0415 - in the server process only

    app = app_from_env()
    app.add_api_route(REFERENCE, reference_route, methods=["POST"], status_code=201)
    return app


def serve_reference(port: int, workers: int) -> None:
    """As ``hearth serve`` runs uvicorn (options, metrics directory), on ``reference_app``."""
    import uvicorn  # noqa: PLC0415

    from hearth.server.metrics_dir import metrics_directory  # noqa: PLC0415
    from hearth.server.serving import uvicorn_options  # noqa: PLC0415
    from hearth.server.settings import Settings  # noqa: PLC0415

    with metrics_directory(workers):
        uvicorn.run(
            "mixed:reference_app",
            factory=True,
            host=HOST,
            port=port,
            workers=workers,
            **uvicorn_options(Settings(), own_process=True),
        )


def server_env(database_url: str, redis_url: str, port: int, tmp: Path) -> dict[str, str]:
    """A server's environment: none of the caller's ``SERVICE_*``, only the bench's."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("SERVICE_") and k != "PROMETHEUS_MULTIPROC_DIR"
    }
    env.update(
        SERVICE_DATABASE_URL=database_url,
        SERVICE_REDIS_URL=redis_url,
        SERVICE_PUBLIC_BASE_URL=f"http://{HOST}:{port}",
        SERVICE_POW_DIFFICULTY_BITS="8",
        # The limiter stays on (Redis), with room for the bench's registrations.
        SERVICE_SELF_SERVICE_LIMIT="100000",
        SERVICE_REGISTRAR_LIMIT="100000",
        SERVICE_PACKAGES_DIR=str(tmp / "dist"),
        SERVICE_BLOCKS_DIR=str(tmp / "blocks"),
        SERVICE_WORKER_IN_PROCESS="false",
        SERVICE_LOG_LEVEL="warning",
        PYTHONPATH=os.pathsep.join(
            [str(Path(__file__).resolve().parent), env.get("PYTHONPATH", "")]
        ).rstrip(os.pathsep),
    )
    return env


@contextmanager
def running(command: list[str], env: dict[str, str], base_url: str, log: Path) -> Iterator[int]:
    """A server process until the block ends; yields its pid once ``/healthz`` answers."""
    with log.open("wb") as sink:
        process = subprocess.Popen(command, env=env, stdout=sink, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 90
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"{command[:3]} exited: {log.read_text()[-2000:]}")
            try:
                answer = httpx2.get(
                    f"{base_url}/healthz", timeout=1, headers={"Connection": "close"}
                )
                if answer.status_code == 200:
                    break
            except httpx2.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"{command[:3]} did not start: {log.read_text()[-2000:]}")
            time.sleep(0.1)
        yield process.pid
    finally:
        stop(process)


# --- CPU of a process tree ---------------------------------------------------------------------


def _stat(pid: int) -> list[str] | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def tree_cpu(root: int) -> float:
    """User + system CPU seconds of ``root`` and all its live descendants (uvicorn's workers)."""
    parents: dict[int, int] = {}
    times: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (fields := _stat(int(entry))) is not None:
            parents[int(entry)] = int(fields[1])
            times[int(entry)] = int(fields[11]) + int(fields[12])
    tree, frontier = {root}, [root]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent]
        tree.update(children)
        frontier.extend(children)
    return sum(times.get(pid, 0) for pid in tree) / os.sysconf("SC_CLK_TCK")


# --- The agents and the load -------------------------------------------------------------------


@dataclass
class Agent:
    identity: str
    bearer: str
    wallet: str = ""
    memories: list[str] = field(default_factory=list)
    secrets: list[str] = field(default_factory=list)

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.bearer}"}


Request = tuple[str, str, str, dict[str, Any] | None, dict[str, str]]  # kind, method, url, body


async def register_agents(
    client: httpx2.AsyncClient, count: int, memories: int, secrets_each: int
) -> list[Agent]:
    agents = []
    for number in range(count):
        _, body = registration(8)
        answer = await client.post(
            "/v1/register/agent", content=body, headers={"Content-Type": "application/json"}
        )
        if answer.status_code != 201:
            raise RuntimeError(f"registration: {answer.status_code} {answer.text[:500]}")
        created = answer.json()
        agent = Agent(created["agent"]["id"], created["project"]["api_key"])
        for index in range(memories):
            stored = await client.post(
                "/v1/memories",
                json={
                    "content": f"seed memory {index} of agent {number}: " + "words " * 20,
                    "agent_id": agent.identity,
                    "key": f"seed-{index % 5}",
                },
                headers=agent.auth,
            )
            if stored.status_code != 201:
                raise RuntimeError(f"seeding: {stored.status_code} {stored.text[:500]}")
            agent.memories.append(stored.json()["id"])
        for index in range(secrets_each):
            name = f"bench-secret-{index}"
            put = await client.put(
                f"/v1/vault/{name}", json={"value": secrets.token_hex(16)}, headers=agent.auth
            )
            if put.status_code not in {200, 201}:
                raise RuntimeError(f"vault: {put.status_code} {put.text[:500]}")
            agent.secrets.append(name)
        wallets = (await client.get("/v1/wallets", headers=agent.auth)).json()["wallets"]
        agent.wallet = wallets[0]["id"]
        agents.append(agent)
    return agents


def schedule(agents: list[Agent], count: int, seed: int) -> list[Request]:
    """``count`` requests in the fixed proportions of ``MIX``, in a seeded order."""
    rng = random.Random(seed)
    kinds = [kind for kind, weight in MIX.items() for _ in range(weight)]
    out: list[Request] = []
    for index in range(count):
        kind = kinds[index * len(kinds) // count] if count >= len(kinds) else rng.choice(kinds)
        agent = rng.choice(agents)
        auth = agent.auth
        pick = rng.randrange(6)
        request: Request
        if kind == "listing":
            url = [
                f"/v1/memories?limit={PAGE}",
                f"/v1/chronicle?limit={PAGE}",
                f"/v1/memories?limit={PAGE}&agent_id={agent.identity}",
                "/v1/keys",
                "/v1/wallets",
                "/v1/vault",
            ][pick]
            request = (kind, "GET", url, None, auth)
        elif kind == "read":
            url = [
                f"/v1/memories/{rng.choice(agent.memories)}",
                f"/v1/memories/{rng.choice(agent.memories)}",
                f"/v1/identities/{agent.identity}/expression",
                f"/v1/vault/{rng.choice(agent.secrets)}",
                f"/v1/wallets/{agent.wallet}",
                f"/v1/identities/{agent.identity}/authority",
            ][pick]
            request = (kind, "GET", url, None, auth)
        elif kind == "wake":
            request = (kind, "GET", "/v1/wake", None, auth)
        elif pick < 4:
            body = {"content": f"note {index}: " + "words " * 12, "agent_id": agent.identity}
            request = (kind, "POST", "/v1/memories", body, auth)
        else:
            name = rng.choice(agent.secrets)
            body = {"value": secrets.token_hex(16), "description": f"turn {index}"}
            request = (kind, "PUT", f"/v1/vault/{name}", body, auth)
        out.append(request)
    rng.shuffle(out)
    return out


@dataclass
class Phase:
    name: str
    requests: int = 0
    errors: int = 0
    elapsed: float = 0.0
    server_cpu: float = 0.0
    load_cpu: float = 0.0
    latencies: list[float] = field(default_factory=list)
    first_error: str | None = None

    @property
    def cpu_ms(self) -> float:
        return self.server_cpu / self.requests * 1000 if self.requests else math.nan

    @property
    def rate(self) -> float:
        return self.requests / self.elapsed if self.elapsed else math.nan

    def percentile_ms(self, fraction: float) -> float:
        if not self.latencies:
            return math.nan
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, math.ceil(fraction * len(ordered)) - 1)] * 1000


async def drive(
    name: str,
    client: httpx2.AsyncClient,
    requests: list[Request] | None,
    *,
    count: int = 0,
    concurrency: int,
    server_pid: int,
) -> Phase:
    """``requests`` (None: ``count`` reference requests) from ``concurrency`` workers."""
    phase = Phase(name)
    pending = iter(requests) if requests is not None else iter(range(count))
    reference = reference_sender()

    async def worker() -> None:
        for item in pending:
            started = time.perf_counter()
            try:
                if isinstance(item, int):
                    answer = await reference(client)
                else:
                    _, method, url, body, headers = item
                    answer = await client.request(method, url, json=body, headers=headers)
            except httpx2.HTTPError as exc:
                phase.errors += 1
                phase.first_error = phase.first_error or repr(exc)
                continue
            phase.requests += 1
            phase.latencies.append(time.perf_counter() - started)
            if not answer.is_success:
                phase.errors += 1
                phase.first_error = phase.first_error or f"{answer.status_code} {answer.text[:300]}"

    cpu_before, load_before = tree_cpu(server_pid), time.process_time()
    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    phase.elapsed = time.perf_counter() - started
    phase.server_cpu = tree_cpu(server_pid) - cpu_before
    phase.load_cpu = time.process_time() - load_before
    return phase


def client_for(base_url: str, concurrency: int) -> httpx2.AsyncClient:
    limits = httpx2.Limits(
        max_connections=concurrency, max_keepalive_connections=concurrency, keepalive_expiry=60
    )
    return httpx2.AsyncClient(base_url=base_url, limits=limits, timeout=60, trust_env=False)


async def measure(
    mixed_url: str,
    mixed_pid: int,
    reference_url: str,
    reference_pid: int,
    args: argparse.Namespace,
) -> dict[str, list[Phase]]:
    async with (
        client_for(mixed_url, args.concurrency) as mixed,
        client_for(reference_url, args.concurrency) as reference,
    ):
        agents = await register_agents(mixed, args.agents, args.memories, 3)
        # Warm-up, untimed: every route of the mix and the reference once over.
        warm = schedule(agents, max(200, args.requests // 5), seed=0)
        await drive("warm-up", mixed, warm, concurrency=args.concurrency, server_pid=mixed_pid)
        await drive(
            "warm-up",
            reference,
            None,
            count=len(warm),
            concurrency=args.concurrency,
            server_pid=reference_pid,
        )
        phases: dict[str, list[Phase]] = {"reference": [], "mixed": []}
        for turn in range(args.rounds):
            phases["reference"].append(
                await drive(
                    "reference",
                    reference,
                    None,
                    count=args.requests,
                    concurrency=args.concurrency,
                    server_pid=reference_pid,
                )
            )
            load = schedule(agents, args.requests, seed=turn + 1)
            phases["mixed"].append(
                await drive(
                    "mixed", mixed, load, concurrency=args.concurrency, server_pid=mixed_pid
                )
            )
    return phases


def run_workers(workers: int, args: argparse.Namespace, tmp: Path) -> dict[str, list[Phase]]:
    with fresh_database(args.database_url) as database_url:
        mixed_port, reference_port = free_port(), free_port()
        mixed_url, reference_url = f"http://{HOST}:{mixed_port}", f"http://{HOST}:{reference_port}"
        mixed_env = server_env(database_url, args.redis_url, mixed_port, tmp)
        reference_env = server_env(database_url, args.redis_url, reference_port, tmp)
        # `hearth serve` has migrated the database by the time it answers.
        reference_env["SERVICE_AUTO_MIGRATE"] = "false"
        serve = [HEARTH, "serve", "--host", HOST, "--port", str(mixed_port)]
        reference = [sys.executable, str(Path(__file__).resolve()), "--serve-reference"]
        workers_option = ["--workers", str(workers)]
        with (
            running(
                [*serve, *workers_option],
                mixed_env,
                mixed_url,
                tmp / f"serve-{workers}.log",
            ) as mixed_pid,
            running(
                [*reference, str(reference_port), *workers_option],
                reference_env,
                reference_url,
                tmp / f"reference-{workers}.log",
            ) as reference_pid,
        ):
            return asyncio.run(measure(mixed_url, mixed_pid, reference_url, reference_pid, args))


# --- Report --------------------------------------------------------------------------------------


def median(values: list[float]) -> float:
    return statistics.median(values) if values else math.nan


def summary(phases: list[Phase]) -> dict[str, Any]:
    return {
        "cpu_ms_per_request": round(median([p.cpu_ms for p in phases]), 3),
        "cpu_ms_per_request_rounds": [round(p.cpu_ms, 3) for p in phases],
        "requests_per_s": round(median([p.rate for p in phases]), 1),
        "p50_ms": round(median([p.percentile_ms(0.5) for p in phases]), 2),
        "p99_ms": round(median([p.percentile_ms(0.99) for p in phases]), 2),
        "load_cpu_ms_per_request": round(
            median([p.load_cpu / p.requests * 1000 for p in phases if p.requests]), 3
        ),
        "requests": sum(p.requests for p in phases),
        "errors": sum(p.errors for p in phases),
        "first_error": next((p.first_error for p in phases if p.first_error), None),
    }


def report(results: dict[int, dict[str, list[Phase]]], args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "loadavg_start": args.loadavg_start,
        "loadavg_end": Path("/proc/loadavg").read_text().split()[:3],
        "requests_per_phase": args.requests,
        "rounds": args.rounds,
        "concurrency": args.concurrency,
        "agents": args.agents,
        "mix_percent": MIX,
        "workers": {},
        "goals": {"mixed/reference": RATIO_GOAL, "two_workers/one_worker": WORKERS_GOAL},
    }
    for workers, phases in results.items():
        mixed, reference = summary(phases["mixed"]), summary(phases["reference"])
        ratio = mixed["cpu_ms_per_request"] / reference["cpu_ms_per_request"]
        out["workers"][str(workers)] = {
            "mixed": mixed,
            "reference": reference,
            "mixed/reference": round(ratio, 3),
        }
    if 1 in results and 2 in results:
        one, two = out["workers"]["1"]["mixed"], out["workers"]["2"]["mixed"]
        out["two_workers/one_worker_cpu"] = round(
            two["cpu_ms_per_request"] / one["cpu_ms_per_request"], 3
        )
        out["two_workers/one_worker_throughput"] = round(
            two["requests_per_s"] / one["requests_per_s"], 3
        )
    return out


def text(summary_: dict[str, Any]) -> str:
    lines = [
        "hearth mixed-load bench (server CPU per request)",
        f"  python {summary_['python']}, {summary_['cpus']} CPUs; PostgreSQL + Redis; "
        f"load average {' '.join(summary_['loadavg_start'])} at start, "
        f"{' '.join(summary_['loadavg_end'])} at end",
        f"  {summary_['rounds']} rounds of {summary_['requests_per_phase']} requests per phase, "
        f"{summary_['concurrency']} concurrent clients, {summary_['agents']} agents; mix "
        + ", ".join(f"{v} % {k}" for k, v in summary_["mix_percent"].items()),
        "  figures are medians of the rounds",
        "",
        f"  {'':<20}{'CPU ms/req':>11}{'req/s':>9}{'p50 ms':>8}{'p99 ms':>8}{'errors':>8}"
        f"{'load ms/req':>12}   rounds",
    ]
    for workers, result in summary_["workers"].items():
        for name in ("reference", "mixed"):
            row = result[name]
            lines.append(
                f"  {name + f', {workers} worker' + ('s' if workers != '1' else ''):<20}"
                f"{row['cpu_ms_per_request']:>11.3f}{row['requests_per_s']:>9.1f}"
                f"{row['p50_ms']:>8.1f}{row['p99_ms']:>8.1f}{row['errors']:>8}"
                f"{row['load_cpu_ms_per_request']:>12.3f}   "
                + " ".join(f"{v:.3f}" for v in row["cpu_ms_per_request_rounds"])
            )
    lines.append("")
    for workers, result in summary_["workers"].items():
        ratio = result["mixed/reference"]
        verdict = "goal met" if ratio <= RATIO_GOAL else "goal missed"
        lines.append(
            f"  mixed/reference CPU, {workers} worker(s) = {ratio:.3f} (goal <= {RATIO_GOAL}): "
            f"{verdict}"
        )
    if "two_workers/one_worker_cpu" in summary_:
        ratio = summary_["two_workers/one_worker_cpu"]
        verdict = "goal met" if ratio <= WORKERS_GOAL else "goal missed"
        lines.append(
            f"  two-worker/one-worker mixed CPU per request = {ratio:.3f} "
            f"(goal <= {WORKERS_GOAL}): {verdict}; throughput "
            f"{summary_['two_workers/one_worker_throughput']:.2f}x"
        )
    for workers, result in summary_["workers"].items():
        for name in ("reference", "mixed"):
            if result[name]["first_error"]:
                lines.append(
                    f"  first error, {name}, {workers} worker(s): {result[name]['first_error']}"
                )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--requests", type=int, default=2000, help="per phase and round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--agents", type=int, default=4)
    parser.add_argument("--memories", type=int, default=30, help="seeded per agent")
    parser.add_argument("--workers", default="1,2", help="worker counts, comma-separated")
    parser.add_argument(
        "--database-url",
        default=os.environ.get("SERVICE_TEST_DATABASE_URL", DEFAULT_DATABASE),
        help="a PostgreSQL server; the bench creates (and drops) a database of its own on it",
    )
    parser.add_argument("--redis-url", default=DEFAULT_REDIS)
    parser.add_argument("--json", action="store_true", help="print a JSON summary instead")
    parser.add_argument("--serve-reference", type=int, metavar="PORT", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    worker_counts = [int(w) for w in args.workers.split(",") if w.strip()]
    if args.serve_reference is not None:  # the reference server (started by the bench itself)
        serve_reference(args.serve_reference, worker_counts[0])
        return 0
    if args.requests < 1 or args.rounds < 1 or args.concurrency < 1 or args.agents < 1:
        parser.error("--requests, --rounds, --concurrency and --agents must be at least 1")
    args.loadavg_start = Path("/proc/loadavg").read_text().split()[:3]
    results: dict[int, dict[str, list[Phase]]] = {}
    with tempfile.TemporaryDirectory(prefix="hearth-mixed-") as tmp:
        for workers in worker_counts:
            results[workers] = run_workers(workers, args, Path(tmp))
    summary_ = report(results, args)
    print(json.dumps(summary_, indent=2) if args.json else text(summary_))
    return 0


if __name__ == "__main__":
    sys.exit(main())
