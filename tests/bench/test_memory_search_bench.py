"""bench/memory_search.py runs end to end on both databases: a short run exits 0 and reports
the evaluation per kind (full text alone and fused with the semantic leg), search latency beside
the bare index query, write rates with and without the index, leaving the index exact, and the
semantic leg's latency.

Behaviour only: the figures are not judged (that is what the bench is for), except the
evaluation's exact keywords, whose floor tests/server/test_memory_search.py holds. Skipped
without SERVICE_TEST_DATABASE_URL (the bench creates and drops a PostgreSQL database there).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.support.databases import database_url_or_skip

BENCH = Path(__file__).resolve().parents[2] / "bench" / "memory_search.py"


def test_a_short_run_reports_every_figure_on_both_databases() -> None:
    database = database_url_or_skip()
    small = ["--memories", "400", "--searches", "5", "--writes", "5", "--rounds", "1"]
    small += ["--write-rounds", "2"]
    small += ["--semantic-searches", "3"]
    run = subprocess.run(
        [sys.executable, str(BENCH), "--json", *small, "--database-url", database],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert set(report["backends"]) == {"sqlite", "postgresql"}
    for name, backend in report["backends"].items():
        assert backend["memories"] == 400
        assert backend["indexed"] >= 400  # and the evaluation's own memories
        for ranking in ("full_text", "fused"):
            assert set(backend["evaluation"][ranking]) == {
                "exact",
                "paraphrase",
                "name",
                "date",
                "multilingual",
                "all",
            }
            assert backend["evaluation"][ranking]["exact"]["recall_at_5"] > 0
        evaluation = backend["evaluation"]
        assert (
            evaluation["fused"]["paraphrase"]["recall_at_5"]
            > evaluation["full_text"]["paraphrase"]["recall_at_5"]
        )
        meaning = backend["semantic"]
        assert meaning["vectors"] == 400
        for figure in ("fused_p50", "fused_p99", "meaning_p50", "encode_memory_ms"):
            assert meaning[figure] > 0, figure
        search = backend["search"]
        for figure in ("service_p50", "service_p99", "bare_p50", "bare_p99", "rate_ratio"):
            assert search[figure] > 0, figure
        assert search["service_p50"] <= search["service_p99"]
        writes = backend["writes"]
        assert writes["with_index_per_s"] > 0
        assert writes["without_index_per_s"] > 0
        assert len(writes["paired_slowdowns"]) == 2
        assert writes["paired_slowdown"] == sum(writes["paired_slowdowns"]) / 2
        goal = writes["paired_slowdown"] <= 0.2
        assert writes["writers"] == 8
        assert len(writes["many_paired_slowdowns"]) == 2
        assert writes["many_paired_slowdown"] == sum(writes["many_paired_slowdowns"]) / 2
        assert writes["many_with_index_per_s"] > 0
        assert writes["many_without_index_per_s"] > 0
        if name == "sqlite":  # the database alone, beside the service's writes
            assert len(writes["fts5_floors"]) == 2
            assert writes["alone_us_without_index"] > 0
            assert writes["alone_us_with_fts5"] > 0
            assert writes["fts5_floor"] == sum(writes["fts5_floors"]) / 2
        else:
            assert writes["fts5_floor"] is None
            assert writes["fts5_floors"] == []
        assert backend["goals"]["writes_at_most_20_percent_slower"] is goal
        assert set(backend["goals"]) == {
            "p99_under_50_ms",
            "rate_ratio_at_least_0_5",
            "writes_at_most_20_percent_slower",
        }
