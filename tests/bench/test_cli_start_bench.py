"""bench/cli_start.py runs end to end: a short run exits 0 and reports every case in every mode.

Behaviour only: the figures themselves are not judged (that is what the bench is for).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "cli_start.py"
CASES = ["python -c pass", "hearth --help", "hearth adds --help", "import hearth.cli.main"]


def bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(BENCH), "--runs", "2", *args],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_json_reports_every_case_in_every_mode() -> None:
    run = bench("--json")
    assert run.returncode == 0, run.stderr
    summary = json.loads(run.stdout)
    assert summary["goal_seconds"] == 0.25
    assert summary["goal_case"] == "hearth --help"
    assert list(summary["modes"]) == ["as configured", "from source", "bytecode cache"]
    for mode, figures in summary["modes"].items():
        assert list(figures) == CASES, mode
        for name, figure in figures.items():
            assert figure["runs"] == 2, (mode, name)
            assert 0 < figure["min"] <= figure["median"] <= figure["max"], (mode, name)
        assert figures["python -c pass"]["ratio_to_floor"] == 1.0


def test_the_report_states_the_goal_and_the_load() -> None:
    run = bench()
    assert run.returncode == 0, run.stderr
    assert "median of 2 interleaved runs" in run.stdout
    assert "load average before:" in run.stdout
    assert run.stdout.count("goal: hearth --help under 0.25 s:") == 3
