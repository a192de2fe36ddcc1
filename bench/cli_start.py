"""Start-up time of the ``hearth`` command, whole processes, against ``python -c pass``.

Run ``.venv/bin/python bench/cli_start.py`` (or ``make bench``); ``--runs N`` sets how many
times each case runs (default 15), ``--json`` prints a machine-readable summary instead of the
report. It is a measurement, not a test: it exits 0 whether or not the goal is met, and non-zero
only if a measured command itself fails.

The cases, each a fresh process with its output thrown away:
1. ``python -c pass``: the floor, the interpreter alone (the venv's python, ``site`` included).
2. ``hearth --help``: the entry point as installed, the case held against the goal of 0.25 s.
3. ``hearth adds --help``: one group's help, which imports that group's module and no other.
4. ``python -c "import hearth.cli.main"``: the module the entry point loads, nothing run.

The cases take turns (one run of each per round), so a burst of load from the other core hits
every case alike; printed are the min, median and max wall-clock seconds of each, the median's
ratio to the floor, the median CPU seconds (user + system) of the process, which a busy machine
inflates less than the wall clock, the load average before and after, and the goal line.

Three sets, because compiled files (``.pyc``) decide the figure more than the imports do: when
``PYTHONDONTWRITEBYTECODE`` is set and the venv was installed without compiled files (``uv sync``
compiles none unless asked), every start compiles every imported module from source.
- "as configured": this environment as it is (whatever ``__pycache__`` the venv holds by now);
- "from source": ``PYTHONPYCACHEPREFIX`` at an empty directory that is never written, so every
  module, the standard library's too, is compiled on every run: the worst case, and stable;
- "bytecode cache": ``PYTHONPYCACHEPREFIX`` at a temporary directory written by one warm-up run
  of each case, then only read: what an install whose ``__pycache__`` can be written, or one
  compiled at install time (``uv sync --compile-bytecode``), sees.
Nothing is written into the venv.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

GOAL_SECONDS = 0.25
GOAL_CASE = "hearth --help"
FLOOR_CASE = "python -c pass"


@dataclass(frozen=True)
class Case:
    name: str
    argv: list[str]


@dataclass
class Figures:
    name: str
    seconds: list[float]
    cpu: list[float]

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    @property
    def cpu_median(self) -> float:
        return statistics.median(self.cpu)

    def as_json(self, floor: float) -> dict[str, Any]:
        return {
            "min": min(self.seconds),
            "median": self.median,
            "max": max(self.seconds),
            "cpu_median": self.cpu_median,
            "runs": len(self.seconds),
            "ratio_to_floor": self.median / floor,
        }


def hearth_script() -> str:
    """The installed entry point beside this interpreter (the venv's), else the one on PATH."""
    beside = Path(sys.executable).with_name("hearth")
    if beside.exists():
        return str(beside)
    found = shutil.which("hearth")
    if found is None:
        raise SystemExit("no `hearth` script beside this python nor on PATH: run `make install`")
    return found


def cases() -> list[Case]:
    hearth = hearth_script()
    return [
        Case(FLOOR_CASE, [sys.executable, "-c", "pass"]),
        Case(GOAL_CASE, [hearth, "--help"]),
        Case("hearth adds --help", [hearth, "adds", "--help"]),
        Case("import hearth.cli.main", [sys.executable, "-c", "import hearth.cli.main"]),
    ]


def load_average() -> str:
    loadavg = Path("/proc/loadavg")
    return loadavg.read_text().strip() if loadavg.exists() else ""


def children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def run_once(case: Case, env: dict[str, str]) -> tuple[float, float]:
    """Wall-clock and CPU seconds (user + system) of one run of ``case``."""
    cpu_start = children_cpu()
    start = time.perf_counter()
    done = subprocess.run(
        case.argv,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        check=False,
        timeout=120,
    )
    seconds = time.perf_counter() - start
    cpu = children_cpu() - cpu_start
    if done.returncode != 0:
        raise SystemExit(f"{case.name} exited {done.returncode}: {done.stderr.decode()[-2000:]}")
    return seconds, cpu


def measure(all_cases: list[Case], env: dict[str, str], runs: int) -> list[Figures]:
    figures = [Figures(case.name, [], []) for case in all_cases]
    for _ in range(runs):
        for case, into in zip(all_cases, figures, strict=True):
            seconds, cpu = run_once(case, env)
            into.seconds.append(seconds)
            into.cpu.append(cpu)
    return figures


FROM_SOURCE = "from source"
CACHED = "bytecode cache"


def environments(empty_dir: Path, cache_dir: Path) -> dict[str, dict[str, str]]:
    # A fixed width: rich lays out the help for the terminal it finds, and a pipe has none.
    configured = {**os.environ, "COLUMNS": "100"}
    # Python looks for compiled files only under PYTHONPYCACHEPREFIX when it is set: an empty
    # one that may not be written means every module is compiled from source on every run.
    from_source = {**configured, "PYTHONPYCACHEPREFIX": str(empty_dir)}
    from_source["PYTHONDONTWRITEBYTECODE"] = "1"
    cached = {k: v for k, v in configured.items() if k != "PYTHONDONTWRITEBYTECODE"}
    cached["PYTHONPYCACHEPREFIX"] = str(cache_dir)
    return {"as configured": configured, FROM_SOURCE: from_source, CACHED: cached}


def report_text(results: dict[str, list[Figures]], load: tuple[str, str], runs: int) -> str:
    lines = [
        f"hearth start-up, whole processes, median of {runs} interleaved runs (seconds)",
        f"PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', '')!r}",
        f"load average before: {load[0]}",
        f"load average after:  {load[1]}",
    ]
    for mode, figures in results.items():
        floor = next(f for f in figures if f.name == FLOOR_CASE).median
        lines += [
            "",
            f"{mode}:",
            f"  {'case':<26}{'min':>8}{'median':>8}{'max':>8}  x floor  cpu median",
        ]
        for f in figures:
            lines.append(
                f"  {f.name:<26}{min(f.seconds):8.3f}{f.median:8.3f}{max(f.seconds):8.3f}"
                f"  {f.median / floor:7.1f}  {f.cpu_median:10.3f}"
            )
        goal = next(f for f in figures if f.name == GOAL_CASE).median
        verdict = "met" if goal < GOAL_SECONDS else "not met"
        lines.append(
            f"  goal: {GOAL_CASE} under {GOAL_SECONDS} s: {goal:.3f} s, "
            f"{goal / GOAL_SECONDS:.2f} of the goal ({verdict})"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=15, help="runs of each case (default 15)")
    parser.add_argument("--json", action="store_true", help="print a JSON summary instead")
    args = parser.parse_args(argv)
    runs = max(1, args.runs)
    all_cases = cases()
    load_before = load_average()
    results: dict[str, list[Figures]] = {}
    with (
        tempfile.TemporaryDirectory(prefix="hearth-cli-start-empty-") as empty,
        tempfile.TemporaryDirectory(prefix="hearth-cli-start-cache-") as cache,
    ):
        for mode, env in environments(Path(empty), Path(cache)).items():
            if mode == CACHED:
                for case in all_cases:  # writes the cache; not counted
                    run_once(case, env)
            print(f"{mode}: {runs} rounds...", file=sys.stderr, flush=True)
            results[mode] = measure(all_cases, env, runs)
    load_after = load_average()
    if args.json:
        summary: dict[str, Any] = {
            "goal_seconds": GOAL_SECONDS,
            "goal_case": GOAL_CASE,
            "load_before": load_before,
            "load_after": load_after,
            "pythondontwritebytecode": os.environ.get("PYTHONDONTWRITEBYTECODE", ""),
            "modes": {},
        }
        for mode, figures in results.items():
            floor = next(f for f in figures if f.name == FLOOR_CASE).median
            summary["modes"][mode] = {f.name: f.as_json(floor) for f in figures}
        print(json.dumps(summary, indent=2))
    else:
        print(report_text(results, (load_before, load_after), runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
