"""``/metrics`` of ``hearth serve --workers 2``: one scrape, answered by either worker, counts
the whole server (prometheus-client's multiprocess mode), not the share of the worker that
happened to answer it.

The server runs as a real subprocess on a temporary SQLite file; every request goes on a new
connection, so the kernel hands them to both workers. Checked: request, refusal and ADDS byte
totals summed over the workers; each live worker's process metrics under its ``pid``; a worker
stopped cleanly (SIGTTOU, one worker fewer) removes its live series itself, and one killed with
SIGKILL is dropped at the next scrape, while the totals of both stay counted; the run's metrics
directory exists only while the server runs.
"""

from __future__ import annotations

import glob
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx2
import pytest
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from hearth.adds import cid_for_bytes
from hearth.server.metrics_dir import metrics_directory
from tests.support.agents import Agent
from tests.support.live import free_port
from tests.support.metrics import value
from tests.support.polling import eventually
from tests.support.served import HEARTH, hearth_serve, serve_env

BATCH = 20
MAX_REQUESTS = 2_000
WAIT_S = 90.0


@dataclass
class Server:
    base: str
    process: subprocess.Popen[bytes]
    tmp: Path  # the server's TMPDIR: its metrics directory is made there

    def metrics_dirs(self) -> list[str]:
        return glob.glob(str(self.tmp / "hearth-metrics-*"))


def fresh(base: str, method: str, path: str, **kwargs: object) -> httpx2.Response:
    # A client per request: a new connection, which either worker may accept.
    with httpx2.Client(base_url=base, timeout=30, headers={"Connection": "close"}) as client:
        return client.request(method, path, **kwargs)  # type: ignore[arg-type]


@contextmanager
def two_workers(tmp: Path) -> Iterator[Server]:
    port = free_port()
    server_tmp = tmp / "tmp"
    server_tmp.mkdir()
    env = serve_env(tmp, f"sqlite+aiosqlite:///{tmp}/hearth.sqlite3", port)
    env["TMPDIR"] = str(server_tmp)
    with hearth_serve(tmp, env, port, workers=2) as served:
        yield Server(served.base_url, served.process, server_tmp)


def scrape(server: Server) -> str:
    response = fresh(server.base, "GET", "/metrics")
    assert response.status_code == 200, response.text
    return response.text


def worker_pids(text: str) -> set[int]:
    return {
        int(sample.labels["pid"])
        for sample in _samples(text, "hearth_worker_start_time_seconds")
        if "pid" in sample.labels
    }


def _samples(text: str, name: str) -> list[Sample]:
    return [s for f in text_string_to_metric_families(text) for s in f.samples if s.name == name]


def live_files(directory: str) -> set[int]:
    """The pids of the workers whose live gauge file is there."""
    return {
        int(Path(path).stem.rsplit("_", 1)[1])
        for path in glob.glob(os.path.join(directory, "gauge_liveall_*.db"))
    }


def porch_count_per_worker(directory: str) -> dict[int, float]:
    """Each worker's own share of the porch requests, read from its counter file."""
    shares: dict[int, float] = {}
    for path in glob.glob(os.path.join(directory, "counter_*.db")):
        pid = int(Path(path).stem.split("_")[1])
        merged = MultiProcessCollector.merge([path], accumulate=False)  # type: ignore[no-untyped-call]
        shares[pid] = sum(
            s.value
            for metric in merged
            for s in metric.samples
            if s.name == "hearth_http_requests_total" and s.labels.get("route") == "/public/porch"
        )
    return shares


def test_one_scrape_counts_every_worker(tmp_path: Path) -> None:
    if not os.path.exists(HEARTH):
        pytest.fail(f"the hearth command is not installed next to {sys.executable}")
    with two_workers(tmp_path) as server:
        [directory] = server.metrics_dirs()  # private to the run, made before the workers
        assert (os.stat(directory).st_mode & 0o777) == 0o700

        # Batches until both workers have served some: which one accepts is the kernel's
        # choice, and one scrape must count the shares of both.
        sent = 0
        with ThreadPoolExecutor(8) as pool:
            while len([n for n in porch_count_per_worker(directory).values() if n > 0]) < 2:
                assert sent < MAX_REQUESTS, "one worker accepted every connection"
                answers = list(
                    pool.map(lambda _: fresh(server.base, "GET", "/public/porch"), range(BATCH))
                )
                assert all(a.status_code == 200 for a in answers)
                sent += BATCH
        for _ in range(3):
            assert fresh(server.base, "GET", "/v1/keys").status_code == 401

        agent = Agent.new()
        registered = fresh(
            server.base, "POST", "/v1/register/agent", json=agent.registration(difficulty=8)
        )
        assert registered.status_code == 201, registered.text
        data = os.urandom(12_345)
        put = fresh(
            server.base,
            "PUT",
            f"/v1/adds/blocks/{cid_for_bytes(data)}",
            content=data,
            headers={"Authorization": f"Bearer {registered.json()['project']['api_key']}"},
        )
        assert put.status_code == 201, put.text

        # A request is counted just after its answer leaves: the last ones may lag a moment.
        def all_counted() -> dict[int, float] | None:
            shares = porch_count_per_worker(directory)
            return shares if sum(shares.values()) == sent else None

        shares = eventually(all_counted, "every request to be counted", WAIT_S)
        assert max(shares.values()) < sent  # no worker's own count is the total

        text = scrape(server)  # one scrape, whichever worker answers it
        assert value(text, "hearth_http_requests_total", route="/public/porch") == sent
        assert value(text, "hearth_refusals_total", error="unauthorized") == 3
        assert value(text, "hearth_adds_block_bytes_stored_total") == len(data)

        # Process metrics: one series per live worker, told apart by pid, never summed.
        pids = worker_pids(text)
        assert len(pids) == 2
        rss = _samples(text, "process_resident_memory_bytes")
        assert {int(s.labels["pid"]) for s in rss} == pids
        assert all(s.value > 0 for s in rss)
        assert value(text, "python_info") == 1

        # A clean stop (SIGTTOU: one worker fewer): the worker removes its live file itself
        # at shutdown, before any scrape; its totals stay. SIGTTIN starts a new one.
        server.process.send_signal(signal.SIGTTOU)
        [stayed] = eventually(
            lambda: live_files(directory) if len(live_files(directory)) == 1 else None,
            "the stopped worker's live file to go",
            WAIT_S,
        )
        assert stayed in pids
        text = scrape(server)
        assert worker_pids(text) == {stayed}
        assert value(text, "hearth_http_requests_total", route="/public/porch") == sent
        server.process.send_signal(signal.SIGTTIN)

        def two_again() -> set[int] | None:
            found = worker_pids(scrape(server))
            return found if len(found) == 2 else None

        new_pids = eventually(two_again, "a new worker", WAIT_S)
        assert stayed in new_pids

        # A crash (SIGKILL): nothing runs in the worker, so the next scrape drops its series.
        killed = stayed
        os.kill(killed, signal.SIGKILL)
        assert killed in live_files(directory)  # still there: only a scrape can remove it now

        def recovered() -> set[int] | None:
            found = worker_pids(scrape(server))
            return found if len(found) == 2 and killed not in found else None

        eventually(recovered, "the killed worker to be replaced and dropped", WAIT_S)
        assert not glob.glob(os.path.join(directory, f"gauge_liveall_{killed}.db"))
        text = scrape(server)
        assert value(text, "hearth_http_requests_total", route="/public/porch") == sent
        assert value(text, "hearth_refusals_total", error="unauthorized") == 3

    assert server.process.returncode is not None
    assert server.metrics_dirs() == []  # removed when the server exited


def test_the_metrics_directory_belongs_to_one_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An inherited directory, perhaps with another run's files, is never used.
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with metrics_directory(1) as none:
        assert none is None
        assert "PROMETHEUS_MULTIPROC_DIR" not in os.environ  # one worker: the plain registry

    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    with metrics_directory(3) as made:
        assert made is not None
        assert os.environ["PROMETHEUS_MULTIPROC_DIR"] == made != str(tmp_path)
        assert os.listdir(made) == []
        assert (os.stat(made).st_mode & 0o777) == 0o700
        Path(made, "counter_1.db").write_bytes(b"a worker's file")
    assert not os.path.exists(made)
    assert "PROMETHEUS_MULTIPROC_DIR" not in os.environ
