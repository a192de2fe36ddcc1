"""bench/arrival.py runs end to end: a short run exits 0 and reports the three phases, error-free.

Behaviour only: the figures themselves are not judged (that is what the bench is for).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "arrival.py"
ROW = re.compile(
    r"^\s+(reference|registrations|mutations)\s+"
    r"(?P<rate>\d+\.\d)\s+(?P<p50>\d+\.\d\d)\s+(?P<p99>\d+\.\d\d)\s+(?P<errors>\d+)\s",
    re.MULTILINE,
)


def test_a_short_run_reports_three_error_free_figures() -> None:
    run = subprocess.run(
        [sys.executable, str(BENCH), "--seconds", "0.3", "--concurrency", "2"],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    rows = {match[1]: match for match in ROW.finditer(run.stdout)}
    assert set(rows) == {"reference", "registrations", "mutations"}, run.stdout
    for name, row in rows.items():
        assert float(row["rate"]) > 0, (name, run.stdout)
        assert int(row["errors"]) == 0, (name, run.stdout)
    assert "proof-of-work difficulty 8 bits, limiter off" in run.stdout
    assert re.search(
        r"registrations/reference = \d+\.\d+ \(goal 0\.5\): goal (met|missed)", run.stdout
    )
    assert re.search(r"mutations/reference = \d+\.\d+ \(goal 0\.5\): goal (met|missed)", run.stdout)
