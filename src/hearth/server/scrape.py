"""What ``/metrics`` answers: this process's registry, or, when the server runs several workers,
the whole server (prometheus-client's multiprocess mode).

Multiprocess mode is on when ``PROMETHEUS_MULTIPROC_DIR`` was set before prometheus_client was
imported: ``hearth serve --workers N`` sets it to a private directory of the run before any
worker starts (cli/serve.py). Every counter and histogram then also lives in a file per worker
there, and a scrape, answered by whichever worker, reads them all (MultiProcessCollector over a
fresh registry): counters and histograms are summed over the workers, dead ones included, so a
total never goes back when a worker is replaced.

Process metrics (memory, CPU, descriptors) are not summed, since a sum of them means nothing and
prometheus-client does not aggregate them. Each worker records its process start time in a live
gauge (``register_worker``), and a scrape reads ``/proc`` of every worker still alive and labels
its ``process_*`` series with its ``pid``. A worker that stops cleanly removes its live file at
app shutdown (``worker_exited``); a crashed one is noticed at the next scrape (its pid is gone,
or belongs to a process started at another time) and its file removed then.
"""

from __future__ import annotations

import contextlib
import glob
import os
from collections.abc import Iterable

from prometheus_client import (
    CollectorRegistry,
    Gauge,
    Metric,
    PlatformCollector,
    ProcessCollector,
    generate_latest,
    values,
)
from prometheus_client.multiprocess import MultiProcessCollector, mark_process_dead
from prometheus_client.registry import Collector

from .metrics_dir import ENV

WORKER_GAUGE = "hearth_worker_start_time_seconds"
_START = "process_start_time_seconds"

_worker_gauge: list[Gauge] = []  # created once per process, when its first app is built


def multiprocess_dir() -> str | None:
    """The directory of the worker files when this process writes them, else None.

    The values are backed by files only if the variable was set before prometheus_client was
    imported (it picks its value class then): that, not the variable now, decides."""
    path = os.environ.get(ENV)
    if not getattr(values.ValueClass, "_multiprocess", False) or not path:
        return None
    return path if os.path.isdir(path) else None


def multiprocess_mode() -> bool:
    return multiprocess_dir() is not None


def register_worker() -> None:
    """Record this worker (its process start time, in a live gauge) for the scrape to find."""
    if _worker_gauge:
        return
    started = _process_families(os.getpid()).get(_START)
    if started is None:  # no /proc: no process metrics on this platform, so nothing to find
        return
    gauge = Gauge(
        WORKER_GAUGE,
        "Start time of each live server worker (its pid label), since the Unix epoch.",
        registry=None,
        multiprocess_mode="liveall",  # one series per live worker, gone when it stops
    )
    gauge.set(started.samples[0].value)
    _worker_gauge.append(gauge)


def worker_exited() -> None:
    """At app shutdown: this worker's live series leave the scrape (counters stay summed)."""
    path = multiprocess_dir()
    if path is not None:
        _mark_dead(os.getpid(), path)


def latest(registry: CollectorRegistry) -> bytes:
    """The exposition text of a scrape (blocking file reads: run it off the event loop)."""
    path = multiprocess_dir()
    if path is None:
        return generate_latest(registry)
    workers = _live_workers(path)  # first: a crashed worker's live file goes before the merge
    fresh = CollectorRegistry()
    MultiProcessCollector(fresh, path=path)  # type: ignore[no-untyped-call]
    fresh.register(_WorkerProcesses(workers))
    PlatformCollector(registry=fresh)
    return generate_latest(fresh)


class _WorkerProcesses(Collector):
    """``process_*`` of every live worker, each series labelled with the worker's pid."""

    def __init__(self, workers: dict[int, dict[str, Metric]]) -> None:
        self._workers = workers

    def collect(self) -> Iterable[Metric]:
        merged: dict[str, Metric] = {}
        for pid, families in sorted(self._workers.items()):
            for family in families.values():
                out = merged.setdefault(
                    family.name, Metric(family.name, family.documentation, family.type)
                )
                for sample in family.samples:
                    out.add_sample(sample.name, {**sample.labels, "pid": str(pid)}, sample.value)
        return list(merged.values())


def _live_workers(path: str) -> dict[int, dict[str, Metric]]:
    """The process metrics of each worker whose live gauge names a process still running."""
    files = glob.glob(os.path.join(path, "gauge_liveall_*.db"))
    live: dict[int, dict[str, Metric]] = {}
    merged = MultiProcessCollector.merge(files, accumulate=False)  # type: ignore[no-untyped-call]
    for metric in merged:
        if metric.name != WORKER_GAUGE:
            continue
        for sample in metric.samples:
            pid = int(sample.labels["pid"])
            families = _process_families(pid)
            started = families.get(_START)
            # A pid can be reused after a crash: the start time tells the worker from a stranger.
            if started is None or abs(started.samples[0].value - sample.value) > 0.01:
                _mark_dead(pid, path)
            else:
                live[pid] = families
    return live


def _process_families(pid: int) -> dict[str, Metric]:
    collector = ProcessCollector(pid=lambda: pid, registry=None)
    return {family.name: family for family in collector.collect()}


def _mark_dead(pid: int, path: str) -> None:
    # Two workers may notice the same dead one at once: the second finds the file gone.
    with contextlib.suppress(FileNotFoundError):
        mark_process_dead(pid, path)  # type: ignore[no-untyped-call]


__all__ = [
    "WORKER_GAUGE",
    "latest",
    "multiprocess_dir",
    "multiprocess_mode",
    "register_worker",
    "worker_exited",
]
