"""hearth's MCP server against the SDK it stands on: tool calls per second and p99 latency of
``memory_store`` and ``memory_search`` over stdio (``hearth mcp``) and over Streamable HTTP
(the service's ``/mcp``), beside the same calls through the SDK (``AsyncHearthClient``), in the
same run against the same service.

Run ``.venv/bin/python bench/mcp_server.py`` (``--calls N`` per operation, transport and round,
default 300; ``--rounds R``, default 3; ``--redis-url``; ``--json``). Not ``bench/mcp.py``: a
script's folder comes first on sys.path, and that name would hide the ``mcp`` package it
measures. It is a measurement, not a test:
it exits 0 whether or not the goal is met, and non-zero only if the run itself breaks.

One ``hearth serve`` (one worker, SQLite in a file of its own) and one identity registered with
``hearth register``. Each round runs, for each operation, the SDK, stdio and HTTP one after the
other (so a change in the machine's load hits all three alike), each making N calls one at a
time from one client, timed by the client. Stores are episodic memories of the identity;
searches are for a word every stored memory holds, 10 results a page. The rates and p99s
printed are the medians over rounds. Goal (issue 19): each transport at least 0.5 of the SDK's
rate for the same call.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from arrival import free_port
from hearth.client import AsyncHearthClient
from mixed import DEFAULT_REDIS, HEARTH, HOST, running, server_env

GOAL = 0.5
PASSPHRASE = "a passphrase for the bench's key file"
Call = Callable[[int], Awaitable[Any]]


def register(base_url: str, home: Path) -> tuple[str, str]:
    """A home registered with the service: (identity id, bearer)."""
    env = {**os.environ, "HEARTH_HOME": str(home), "HEARTH_PASSPHRASE": PASSPHRASE}
    words = home.parent / "words.txt"
    subprocess.run(
        [
            HEARTH,
            "register",
            "--name",
            "Bench",
            "--base-url",
            base_url,
            "--mnemonic-file",
            str(words),
        ],
        env=env,
        check=True,
        capture_output=True,
    )
    profile = json.loads((home / "profile.json").read_text())
    return profile["identity_id"], (home / "api_key").read_text().strip()


@asynccontextmanager
async def stdio_client(home: Path) -> AsyncIterator[Client]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HEARTH_", "SERVICE_"))}
    parameters = StdioServerParameters(command=HEARTH, args=["mcp", "--home", str(home)], env=env)
    async with Client(parameters, read_timeout_seconds=60) as client:
        yield client


@asynccontextmanager
async def http_client(base_url: str, bearer: str) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {bearer}"}, timeout=60) as http,
        Client(streamable_http_client(f"{base_url}/mcp", http_client=http)) as client,
    ):
        yield client


def tool(client: Client, name: str, arguments: Callable[[int], dict[str, Any]]) -> Call:
    async def call(i: int) -> Any:
        result = await client.call_tool(name, arguments(i))
        if result.is_error:
            raise RuntimeError(f"{name} failed: {result.content}")
        return result

    return call


async def timed(call: Call, count: int, start: int) -> tuple[float, float]:
    """(calls per second, p99 ms) of ``count`` calls made one at a time."""
    latencies = []
    began = time.perf_counter()
    for i in range(start, start + count):
        t0 = time.perf_counter()
        await call(i)
        latencies.append((time.perf_counter() - t0) * 1000)
    elapsed = time.perf_counter() - began
    latencies.sort()
    return count / elapsed, latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]


async def measure(base_url: str, home: Path, identity: str, bearer: str, args: Any) -> Any:
    def store_args(i: int) -> dict[str, Any]:
        return {"content": f"bench memory {i} of the heron"}

    def search_args(_i: int) -> dict[str, Any]:
        return {"q": "heron", "limit": 10}

    results: dict[str, dict[str, list[tuple[float, float]]]] = {
        op: {"sdk": [], "stdio": [], "http": []} for op in ("store", "search")
    }
    async with (
        AsyncHearthClient(base_url, api_key=bearer) as sdk,
        stdio_client(home) as stdio,
        http_client(base_url, bearer) as http,
    ):

        async def sdk_store(i: int) -> Any:
            return await sdk.memory_store(store_args(i)["content"], agent_id=identity)

        async def sdk_search(_i: int) -> Any:
            return await sdk.memory_search("heron", limit=10)

        calls: dict[str, dict[str, Call]] = {
            "store": {
                "sdk": sdk_store,
                "stdio": tool(stdio, "memory_store", store_args),
                "http": tool(http, "memory_store", store_args),
            },
            "search": {
                "sdk": sdk_search,
                "stdio": tool(stdio, "memory_search", search_args),
                "http": tool(http, "memory_search", search_args),
            },
        }
        # Warm every path once (imports, connections, the first search).
        for op in calls.values():
            for call in op.values():
                await call(0)
        counter = 1
        for _ in range(args.rounds):
            for op, by_transport in calls.items():
                for transport, call in by_transport.items():
                    results[op][transport].append(await timed(call, args.calls, counter))
                    counter += args.calls
    return results


def summary(results: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for op, by_transport in results.items():
        rates = {t: statistics.median(r for r, _ in runs) for t, runs in by_transport.items()}
        p99s = {t: statistics.median(p for _, p in runs) for t, runs in by_transport.items()}
        out[op] = {
            t: {
                "calls_per_s": round(rates[t], 1),
                "p99_ms": round(p99s[t], 2),
                "ratio_to_sdk": round(rates[t] / rates["sdk"], 2),
            }
            for t in by_transport
        }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--redis-url", default=DEFAULT_REDIS)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="hearth-bench-mcp-") as raw:
        tmp = Path(raw)
        port = free_port()
        base_url = f"http://{HOST}:{port}"
        env = server_env(f"sqlite+aiosqlite:///{tmp}/hearth.sqlite3", args.redis_url, port, tmp)
        command = [HEARTH, "serve", "--host", HOST, "--port", str(port)]
        with running(command, env, base_url, tmp / "serve.log"):
            home = tmp / "home"
            identity, bearer = register(base_url, home)
            results = asyncio.run(measure(base_url, home, identity, bearer, args))
    report = {
        "calls": args.calls,
        "rounds": args.rounds,
        "goal_ratio": GOAL,
        "load_average": os.getloadavg(),
        "python": platform.python_version(),
        "results": summary(results),
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"{args.calls} calls x {args.rounds} rounds, load {report['load_average']}")
    for op, by_transport in report["results"].items():
        for transport, figures in by_transport.items():
            mark = (
                ""
                if transport == "sdk"
                else ("  ok" if figures["ratio_to_sdk"] >= GOAL else f"  BELOW {GOAL}")
            )
            print(
                f"{op:6} {transport:5} {figures['calls_per_s']:8.1f}/s  p99 "
                f"{figures['p99_ms']:7.2f} ms  ratio {figures['ratio_to_sdk']:.2f}{mark}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
