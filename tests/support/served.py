"""``hearth serve`` as its own process (one or several workers): its environment and its
output."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx2

HEARTH = str(Path(sys.executable).parent / "hearth")


@dataclass
class Served:
    """A running ``hearth serve``: its address, its process and its output (stdout and stderr
    together, one file)."""

    base_url: str
    process: subprocess.Popen[bytes]
    log: Path

    def lines(self) -> list[str]:
        return [line for line in self.log.read_text().splitlines() if line.strip()]


def serve_env(tmp: Path, database_url: str, port: int, **settings: str) -> dict[str, str]:
    """The environment of a test server: this one's without any inherited ``SERVICE_*`` (or a
    metrics directory), a low proof-of-work, room in the limiter, and ``settings`` (names
    without the prefix: ``serve_env(..., REDIS_URL=url)``)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("SERVICE_") and k != "PROMETHEUS_MULTIPROC_DIR"
    }
    env.update(
        {
            "SERVICE_DATABASE_URL": database_url,
            "SERVICE_PUBLIC_BASE_URL": f"http://127.0.0.1:{port}",
            "SERVICE_POW_DIFFICULTY_BITS": "8",
            "SERVICE_SELF_SERVICE_LIMIT": "100000",
            "SERVICE_REGISTRAR_LIMIT": "100000",
            "SERVICE_PACKAGES_DIR": str(tmp / "dist"),
            "SERVICE_BLOCKS_DIR": str(tmp / "blocks"),
            "SERVICE_WORKER_IN_PROCESS": "false",  # a test that needs think-loops says so
            "SERVICE_LOG_LEVEL": "warning",
        }
    )
    env.update({f"SERVICE_{name}": value for name, value in settings.items()})
    return env


@contextmanager
def hearth_serve(
    tmp: Path,
    env: Mapping[str, str],
    port: int,
    *,
    workers: int = 1,
    ready: Callable[[Served], bool] | None = None,
) -> Iterator[Served]:
    """``hearth serve`` on 127.0.0.1:``port`` with ``env``, until the block ends (SIGTERM, then
    SIGKILL after 30 s). It is up once ``ready`` says so; by default once ``GET /healthz``
    answers 200 on a new connection (so, with several workers, once one of them does)."""
    log = tmp / f"serve-{port}.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [HEARTH, "serve", "--host", "127.0.0.1", "--port", str(port)]
            + (["--workers", str(workers)] if workers != 1 else []),
            env=dict(env),
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    served = Served(f"http://127.0.0.1:{port}", process, log)

    def healthy(served: Served) -> bool:
        try:
            response = httpx2.get(
                f"{served.base_url}/healthz", timeout=1, headers={"Connection": "close"}
            )
        except httpx2.HTTPError:
            return False
        return response.status_code == 200

    try:
        deadline = time.monotonic() + 90  # a guard against a hung start, never a speed
        while not (ready or healthy)(served):
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, f"hearth serve did not start: {log.read_text()}"
            time.sleep(0.1)
        yield served
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
