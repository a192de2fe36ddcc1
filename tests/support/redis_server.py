"""Redis for the tests: the shared server's URL (skipped when absent, failed under CI), and a
throwaway redis-server of a test's own that it may stop and restart."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NoReturn

import pytest

from tests.support.live import free_port

IN_CI = os.environ.get("CI") == "true"


def skip_or_fail(reason: str) -> NoReturn:
    # In CI a missing dependency means the suite silently stopped covering Redis; fail instead.
    if IN_CI:
        pytest.fail(f"{reason} (CI=true, so this is an error rather than a skip)")
    pytest.skip(reason)


class RedisServer:
    """A throwaway redis-server we are allowed to stop and restart."""

    def __init__(self, binary: str, port: int, workdir: Path) -> None:
        self.binary = binary
        self.port = port
        self.workdir = workdir
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        assert self.proc is None
        self.proc = subprocess.Popen(
            [
                self.binary,
                "--port",
                str(self.port),
                "--save",
                "",
                "--appendonly",
                "no",
                "--bind",
                "127.0.0.1",
                "--dir",
                str(self.workdir),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self.proc = None
                pytest.fail(f"redis-server exited while starting on port {self.port}")
            if self._answers_ping():
                return
            time.sleep(0.02)
        self.stop()
        pytest.fail(f"redis-server did not answer on port {self.port}")

    def _answers_ping(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def stop(self) -> None:
        if self.proc is None:
            return
        self.proc.send_signal(signal.SIGCONT)  # a stopped process cannot act on SIGTERM
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None


@contextmanager
def own_redis_server(tmp_path: Path, needed_for: str) -> Iterator[RedisServer]:
    """A redis-server of the test's own on a free port (never the shared one), stopped after."""
    binary = shutil.which("redis-server") or "/usr/bin/redis-server"
    if not os.access(binary, os.X_OK):
        skip_or_fail(f"redis-server is not installed; needed to test {needed_for}")
    server = RedisServer(binary, free_port(), tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def redis_url_or_skip() -> str:
    url = os.environ.get("SERVICE_TEST_REDIS_URL")
    if not url:
        skip_or_fail("SERVICE_TEST_REDIS_URL is not set; set it to a Redis URL to run these")
    return url
