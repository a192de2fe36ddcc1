"""bench/mixed.py runs end to end on PostgreSQL and Redis: a short run exits 0 and reports CPU per
request for the reference and the mixed load, every request answered with success.

Behaviour only: the figures themselves are not judged (that is what the bench is for). Skipped
without SERVICE_TEST_DATABASE_URL (the bench creates and drops a database of its own there).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.databases import database_url_or_skip

BENCH = Path(__file__).resolve().parents[2] / "bench" / "mixed.py"


def test_a_short_run_reports_error_free_cpu_figures() -> None:
    database = database_url_or_skip()
    redis = os.environ.get("SERVICE_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
    small = ["--workers", "1", "--rounds", "1", "--requests", "60", "--concurrency", "4"]
    seeds = ["--agents", "2", "--memories", "3"]
    services = ["--database-url", database, "--redis-url", redis]
    run = subprocess.run(
        [sys.executable, str(BENCH), "--json", *small, *seeds, *services],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    one = report["workers"]["1"]
    for name in ("reference", "mixed"):
        assert one[name]["requests"] == 60, (name, one[name])
        assert one[name]["errors"] == 0, (name, one[name]["first_error"])
        assert one[name]["cpu_ms_per_request"] > 0, (name, one[name])
    assert one["mixed/reference"] > 0
    assert report["mix_percent"] == {"listing": 55, "read": 15, "wake": 10, "write": 20}
