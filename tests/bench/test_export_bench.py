"""bench/export.py runs end to end: a small life exported, verified, imported into a real
``hearth serve`` and published, and the database alone storing the same memories and thoughts
in bare tables, on SQLite and (with SERVICE_TEST_DATABASE_URL) on PostgreSQL.

Behaviour only: the rates are not judged (that is what the bench is for); what is checked is
that every step ran, and that the database alone stored every memory and every thought of the
life (so its rate is of the same bytes).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.databases import database_url_or_skip

BENCH = Path(__file__).resolve().parents[2] / "bench" / "export.py"
MEMORIES = 40
THOUGHT_BYTES = 64 << 10


def thought_count() -> int:
    """How many thoughts the bench's life of THOUGHT_BYTES holds, from its own generator."""
    sys.path.insert(0, str(BENCH.parent))
    try:
        import export  # noqa: PLC0415 - the bench, as a module

        return sum(
            1
            for _, line in export.life_lines(0, THOUGHT_BYTES)
            if json.loads(line)["kind"] == "thought"
        )
    finally:
        sys.path.remove(str(BENCH.parent))


def run_bench(*extra: str) -> dict[str, object]:
    run = subprocess.run(
        [
            sys.executable,
            str(BENCH),
            "--json",
            "--memories",
            str(MEMORIES),
            "--thoughts",
            str(THOUGHT_BYTES),
            "--repeat",
            "1",
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    report: dict[str, object] = json.loads(run.stdout)
    return report


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_short_run_reports_every_step_and_the_database_alone(backend: str) -> None:
    extra = ["--database-url", database_url_or_skip()] if backend == "postgresql" else []
    report = run_bench(*extra)
    rates = report["mb_per_s"]
    assert isinstance(rates, dict)
    assert set(rates) == {"export", "verify", "import", "publish", "database_alone"}
    assert all(rate > 0 for rate in rates.values())
    assert report["ratio_database_alone"] == rates["database_alone"] / rates["publish"]
    assert 0 < report["ratio_verify_then_database"] < report["ratio_database_alone"]
    assert report["database_alone_rows"] == {
        "floor_memories": MEMORIES,
        "floor_thoughts": thought_count(),
    }
