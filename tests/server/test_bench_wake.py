"""bench/wake.py runs end to end on both databases: a short run with small sizes exits 0 and
reports latency and server CPU for each size, rebuilt, cached, and after each kind of write
(where the bench also checks that the wake after a write was not served from the cache).

Behaviour only: the figures are not judged (that is what the bench is for). Skipped without
SERVICE_TEST_DATABASE_URL (the bench creates and drops PostgreSQL databases of its own there).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.databases import database_url_or_skip

BENCH = Path(__file__).resolve().parents[2] / "bench" / "wake.py"


def test_a_short_run_reports_both_sizes_on_both_databases() -> None:
    database = database_url_or_skip()
    redis = os.environ.get("SERVICE_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
    small = ["--requests", "5", "--rounds", "1", "--small", "30/2", "--large", "300/12"]
    services = ["--database-url", database, "--redis-url", redis]
    run = subprocess.run(
        [sys.executable, str(BENCH), "--json", *small, *services],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert set(report["backends"]) == {"sqlite", "postgresql"}
    for backend in report["backends"].values():
        sizes = [row["size"] for row in backend["sizes"]]
        assert sizes == ["30 memories / 2 runtimes", "300 memories / 12 runtimes"]
        for row in backend["sizes"]:
            assert row["p99_ms"] >= row["p50_ms"] > 0
            assert row["cpu_ms_per_rebuilt_wake"] >= 0
            # A difference of two phases' CPU: a number, not a bound (it may dip below 0).
            for write in ("memory", "vault"):
                assert isinstance(row[f"cpu_ms_per_wake_after_{write}_write"], float)
        assert backend["p99_ratio"] > 0
