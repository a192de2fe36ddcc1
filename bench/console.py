"""The console's pages against the JSON routes that carry the same data, on a large project.

Run ``.venv/bin/python bench/console.py`` (``--requests N`` per page and round, default 200;
``--rounds R``, default 3; ``--size M/R`` memories/runtimes, default ``10000/100``;
``--backends sqlite`` or ``sqlite,postgresql``; ``--database-url`` a PostgreSQL server URL;
``--json``). It is a measurement, not a test: it exits 0 whether or not the goal is met, and
non-zero only if the run itself breaks.

One ``hearth serve`` (one worker) per backend, with one agent registered over HTTP and its
memories and runtimes written straight into the database as bench/wake.py writes them (two
thirds of the memories the agent's), a few chronicle entries and inbox messages through the
API. A client signs in to the console (its session cookie) and another holds the bearer.

Then R rounds, each alternating, request by request, every console page with the JSON routes
that carry its data (one page against the sum of those routes, timed by the client, one at a
time): so a change of the machine's load hits both alike. Printed per page: p50 and p99 of the
page and of its JSON routes (the median over rounds), and the page's p99 against the goal
(issue 22: under 100 ms).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2

from mixed import DEFAULT_DATABASE, DEFAULT_REDIS
from wake import Served, Size, quantile, served, size

P99_GOAL_MS = 100.0


@dataclass
class Pair:
    """A console page and the JSON routes that carry the same data."""

    name: str
    page: str
    json: list[str]
    page_ms: dict[str, list[float]] = field(default_factory=dict)  # "p50"/"p99" per round
    json_ms: dict[str, list[float]] = field(default_factory=dict)


def pairs_of(s: Served, memory_id: str, runtime_id: str, wallet_id: str) -> list[Pair]:
    agent = s.identity_id
    return [
        Pair("project", "/console", ["/v1/keys", "/v1/wallets"]),
        Pair(
            "identity",
            f"/console/identities/{agent}",
            [
                f"/v1/wake?identity_id={agent}&format=md",
                f"/v1/identities/{agent}/expression",
                f"/v1/memories?agent_id={agent}&limit=50",
                f"/v1/chronicle?agent_id={agent}&limit=20",
                f"/v1/identities/{agent}/inbox?limit=20",
                "/v1/templates?limit=20",
            ],
        ),
        Pair(
            "identity search",
            f"/console/identities/{agent}?q=agent+life",
            [f"/v1/memories/search?q=agent+life&identity_id={agent}&limit=50"],
        ),
        Pair(
            "memory",
            f"/console/memories/{memory_id}",
            [f"/v1/memories/{memory_id}", f"/v1/memories/{memory_id}/history"],
        ),
        Pair("runtimes", "/console/runtimes", ["/v1/runtimes?limit=50"]),
        Pair(
            "runtime",
            f"/console/runtimes/{runtime_id}",
            [f"/v1/runtimes/{runtime_id}", f"/v1/runtimes/{runtime_id}/events?limit=50"],
        ),
        Pair(
            "wallet",
            f"/console/wallets/{wallet_id}",
            [f"/v1/wallets/{wallet_id}", f"/v1/wallets/{wallet_id}/ledger?limit=50"],
        ),
        Pair("adds", "/console/adds", ["/v1/adds/documents?limit=50", "/v1/adds/blocks?limit=50"]),
    ]


def get(client: httpx2.Client, path: str) -> None:
    answer = client.get(path)
    if answer.status_code != 200:
        raise RuntimeError(f"GET {path}: {answer.status_code} {answer.text[:300]}")


def timed(client: httpx2.Client, paths: list[str]) -> float:
    started = time.perf_counter()
    for path in paths:
        get(client, path)
    return time.perf_counter() - started


def round_of(console: httpx2.Client, api: httpx2.Client, pairs: list[Pair], requests: int) -> None:
    for pair in pairs:
        for _ in range(5):  # warm: connections, caches, statements
            timed(console, [pair.page])
            timed(api, pair.json)
        pages, routes = [], []
        for _ in range(requests):
            pages.append(timed(console, [pair.page]))
            routes.append(timed(api, pair.json))
        for into, values in ((pair.page_ms, pages), (pair.json_ms, routes)):
            into.setdefault("p50", []).append(quantile(values, 0.5) * 1000)
            into.setdefault("p99", []).append(quantile(values, 0.99) * 1000)


def seed_api(api: httpx2.Client, agent: str) -> None:
    """What the database seeding leaves out: chronicle entries and inbox messages."""
    for index in range(30):
        api.post(
            "/v1/chronicle", json={"kind": "vow", "text": f"vow {index}", "agent_id": agent}
        ).raise_for_status()
        api.post(
            f"/v1/identities/{agent}/inbox", json={"sender": "bench", "body": f"message {index}"}
        ).raise_for_status()


def run_backend(backend: str, args: argparse.Namespace) -> list[Pair]:
    with (
        tempfile.TemporaryDirectory(prefix="hearth-console-bench-") as folder,
        ExitStack() as stack,
    ):
        s = stack.enter_context(served(backend, args.size, args, Path(folder), stack))
        api = stack.enter_context(
            httpx2.Client(
                base_url=s.base_url, headers={"Authorization": f"Bearer {s.bearer}"}, timeout=30
            )
        )
        console = stack.enter_context(httpx2.Client(base_url=s.base_url, timeout=30))
        signed = console.post("/console/sign-in", data={"bearer": s.bearer})
        if signed.status_code != 303:
            raise RuntimeError(f"console sign-in: {signed.status_code}")
        seed_api(api, s.identity_id)
        memory_id = api.get(f"/v1/memories?agent_id={s.identity_id}&limit=1").json()["items"][0][
            "id"
        ]
        runtime_id = api.get("/v1/runtimes?limit=1").json()["items"][0]["id"]
        wallet_id = api.get("/v1/wallets").json()["wallets"][0]["id"]
        pairs = pairs_of(s, memory_id, runtime_id, wallet_id)
        for _ in range(args.rounds):
            round_of(console, api, pairs, args.requests)
        return pairs


def summary(results: dict[str, list[Pair]], args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}",
        "size": args.size.label,
        "requests": args.requests,
        "rounds": args.rounds,
        "goal_p99_ms": P99_GOAL_MS,
        "backends": {},
    }
    for backend, pairs in results.items():
        rows = []
        for pair in pairs:
            page_p99 = statistics.median(pair.page_ms["p99"])
            rows.append(
                {
                    "page": pair.name,
                    "path": pair.page,
                    "page_p50_ms": round(statistics.median(pair.page_ms["p50"]), 2),
                    "page_p99_ms": round(page_p99, 2),
                    "json_routes": len(pair.json),
                    "json_p50_ms": round(statistics.median(pair.json_ms["p50"]), 2),
                    "json_p99_ms": round(statistics.median(pair.json_ms["p99"]), 2),
                    "meets_goal": page_p99 < P99_GOAL_MS,
                }
            )
        out["backends"][backend] = rows
    return out


def text(result: dict[str, Any]) -> str:
    lines = [
        f"console pages on {result['size']} ({result['machine']}); {result['requests']} "
        f"requests x {result['rounds']} rounds; goal: page p99 < {result['goal_p99_ms']:g} ms",
    ]
    for backend, rows in result["backends"].items():
        lines.append(f"\n{backend}")
        lines.append(
            f"  {'page':<16} {'page p50':>9} {'page p99':>9} {'json p50':>9} {'json p99':>9}"
            "  routes  goal"
        )
        for row in rows:
            lines.append(
                f"  {row['page']:<16} {row['page_p50_ms']:>9} {row['page_p99_ms']:>9} "
                f"{row['json_p50_ms']:>9} {row['json_p99_ms']:>9}  {row['json_routes']:>6}  "
                f"{'met' if row['meets_goal'] else 'MISSED'}"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--backends", default="sqlite")
    parser.add_argument("--size", type=size, default=Size(10_000, 100))
    parser.add_argument(
        "--database-url", default=os.environ.get("SERVICE_TEST_DATABASE_URL", DEFAULT_DATABASE)
    )
    parser.add_argument("--redis-url", default=DEFAULT_REDIS)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    results = {backend: run_backend(backend, args) for backend in args.backends.split(",")}
    result = summary(results, args)
    print(json.dumps(result, indent=2) if args.json else text(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
