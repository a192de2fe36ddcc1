"""bench/adds_throughput.py runs end to end: a short run exits 0 and reports every figure.

Behaviour only: the figures themselves are not judged (that is what the bench is for).
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "adds_throughput.py"
SIZE = 8 * 1024 * 1024
RUNS = [
    "publish fsync on, workers=1",
    "publish fsync on, workers=2",
    "publish fsync on, workers=4",
    "publish fsync on, workers=8",
    "publish fsync off, workers=2",
    "open stream, workers=1",
    "open stream, workers=2",
    "open to file, workers=2",
    "cli publish",
    "cli open",
]
INSIDE = RUNS[:8]
AGE_ROWS = {"cli publish": "age encrypt", "cli open": "age decrypt"}
ROW = re.compile(
    r"^  (?P<name>\S.*?)\s+(?P<rate>\d+\.\d)\s+(?P<ratio>\d+\.\d{3})\s+(?P<slowest>\d+\.\d)"
    r"\s+(?P<fastest>\d+\.\d)\s+(?P<cpu>\d+\.\d\d)\s+(?P<rss>\d+\.\d)$",
    re.MULTILINE,
)


def bench(*args: str, directory: Path, size: str = "8MiB") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(BENCH), "--size", size, "--dir", str(directory), *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_a_short_run_reports_ratios_and_peak_memory(tmp_path: Path) -> None:
    run = bench("--repeat", "2", directory=tmp_path)
    assert run.returncode == 0, run.stderr
    rows = {match["name"]: match for match in ROW.finditer(run.stdout)}
    # age runs beside hearth's commands when its Debian package can be had; otherwise the
    # report says why not.
    skipped = re.search(r"^age: skipped \((.+)\)$", run.stdout, re.MULTILINE)
    expected = RUNS if skipped else [*RUNS[:8], "cli publish", "age encrypt", "cli open"]
    if not skipped:
        expected.append("age decrypt")
    assert list(rows) == expected, run.stdout
    for name, row in rows.items():
        assert float(row["rate"]) > 0, (name, run.stdout)
        assert float(row["rss"]) > 0, (name, run.stdout)
        # The median of the repeats lies between the slowest and the fastest.
        assert float(row["slowest"]) <= float(row["rate"]) <= float(row["fastest"]), name
    assert "the median of 2 runs" in run.stdout
    assert re.search(
        r"limit \(one core: AES-256-GCM encrypt \+ SHA-256, 1 MiB buffers\): "
        r"\d+\.\d MB/s",
        run.stdout,
    )
    assert re.search(
        r"disk alone \(direct I/O, one file, no crypto\): write \d+\.\d MB/s \(\d\.\d{3} of "
        r"the limit\), read and write at once \d+\.\d MB/s",
        run.stdout,
    )
    for name in ["publish fsync on, workers=2", "open to file, workers=2"]:
        assert re.search(rf"{name} / disk [a-z ]+ = \d+\.\d{{3}}", run.stdout), run.stdout
    for name in INSIDE:
        operation, setting = name.split(" ", 1)
        pattern = (
            rf"{operation}/limit \({setting}\) = \d+\.\d{{3}} \(goal 0\.5\): goal (met|missed)"
        )
        assert re.search(pattern, run.stdout), (pattern, run.stdout)
    for name in RUNS:
        pattern = rf"peak RSS {name} = \d+\.\d MB \(goal 100 MB\): goal (met|missed)"
        assert re.search(pattern, run.stdout), (pattern, run.stdout)
    for cli, library in [
        ("cli publish", "publish fsync on, workers=4"),
        ("cli open", "open to file, workers=2"),
    ]:
        pattern = (
            rf"{cli} ratio / library ratio \({library}\) = \d+\.\d{{3}} \(cli \d+\.\d{{3}} of "
            rf"the limit, library \d+\.\d{{3}} timed inside; goal 0\.9\): goal (met|missed)"
        )
        assert re.search(pattern, run.stdout), (pattern, run.stdout)
        whole = (
            rf"{cli} ratio / library ratio as whole processes = \d+\.\d{{3}} \(library "
            rf"\d+\.\d{{3}} with its start-up; goal 0\.9\): goal (met|missed)"
        )
        assert re.search(whole, run.stdout), (whole, run.stdout)
    for cli, age in AGE_ROWS.items():
        pattern = (
            rf"{cli}/{age} = \d+\.\d\dx \(paired rounds \d+\.\d\dx to \d+\.\d\dx; goal 2x\): "
            r"goal (met|missed)"
        )
        assert bool(re.search(pattern, run.stdout)) is not bool(skipped), (pattern, run.stdout)
    assert f"object: {SIZE} bytes" in run.stdout
    assert list(tmp_path.iterdir()) == []  # the temporary files are gone


def test_without_age_the_report_says_so(tmp_path: Path) -> None:
    run = bench("--repeat", "1", "--no-age", "--json", directory=tmp_path, size="1MiB")
    assert run.returncode == 0, run.stderr
    summary = json.loads(run.stdout)
    assert summary["age"] == {"version": None, "skipped": "--no-age"}
    assert "age: skipped (--no-age)" in summary["verdicts"]
    assert summary["versus_age"] == {}
    assert set(summary["versus_library"]) == {"cli publish", "cli open"}
    for share in summary["versus_library"].values():
        # The library as a whole process pays its start-up too: never faster than its call.
        assert 0 < share["library_whole"] <= share["library"]
        assert share["share_whole"] >= share["share"]
    assert [r["name"] for r in summary["runs"]] == RUNS


def test_the_commands_are_held_against_the_library_with_their_own_defaults(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The bench compares each command with the library run of the same workers: those must
    still be the commands' defaults."""
    spec = importlib.util.spec_from_file_location("adds_throughput", BENCH)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "adds_throughput", module)  # its dataclasses look for it
    spec.loader.exec_module(module)
    from hearth.cli.adds.open import open_command  # noqa: PLC0415
    from hearth.cli.adds.publish import publish_command  # noqa: PLC0415

    defaults = {
        name: inspect.signature(command).parameters["workers"].default.default
        for name, command in [("publish", publish_command), ("open", open_command)]
    }
    assert defaults == {"publish": module.CLI_PUBLISH_WORKERS, "open": module.CLI_OPEN_WORKERS}


def test_json_summary(tmp_path: Path) -> None:
    run = bench(
        "--json",
        "--no-cli",
        "--repeat",
        "1",
        "--chunk-size",
        "64KiB",
        directory=tmp_path,
        size="1MiB",
    )
    assert run.returncode == 0, run.stderr
    summary = json.loads(run.stdout)
    assert summary["size"] == 1024 * 1024
    assert summary["chunk_size"] == 64 * 1024
    assert summary["repeat"] == 1
    assert [r["name"] for r in summary["runs"]] == INSIDE
    assert all(r["ratio"] > 0 and r["peak_rss_mb"] > 0 for r in summary["runs"])
    assert all(len(r["seconds"]) == 1 for r in summary["runs"])
    assert set(summary["disk_mb_per_s"]) == {"write", "read and write at once"}


def test_a_broken_run_exits_non_zero(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    run = bench(directory=blocked)
    assert run.returncode != 0
