"""Where the external suites live, and what happens when they are absent.

The suites are read in place from ``../shared/testdata/`` beside the repository (or from
``HEARTH_TESTDATA``); the project never keeps copies. Outside this workplace the folder is
absent and the tests skip with the reason; under CI (``CI=true``) a missing suite is a failure,
never a silent skip.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TESTDATA = Path(os.environ.get("HEARTH_TESTDATA", REPO.parent / "shared" / "testdata"))


def under_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def suite(name: str) -> Path:
    """The folder of one suite; skips (fails under CI) when it is missing."""
    path = TESTDATA / name
    if not path.is_dir():
        message = f"external suite {name!r} not found at {path}"
        if under_ci():
            pytest.fail(f"{message}: CI requires every external suite", pytrace=False)
        pytest.skip(f"{message}: external suites skipped")
    return path


def available(name: str) -> Path | None:
    """The folder of one suite for building parameter lists at import time, or None."""
    path = TESTDATA / name
    return path if path.is_dir() else None


def cases_or_missing(name: str, cases: list[object] | None) -> list[object]:
    """Parameters for a suite's tests: the cases, or one placeholder that makes the test call
    ``suite(name)`` and so skip or fail with the reason, instead of collecting nothing."""
    if cases is None:
        return [pytest.param(None, id=f"{name}-missing")]
    return cases


def parse_multibase_csv(path: Path) -> tuple[bytes, dict[str, str]]:
    """(input bytes, {encoding name: multibase string}) of one multibase tests/*.csv file."""
    lines = path.read_text(encoding="utf-8").splitlines()
    _, header = lines[0].split(", ", 1)
    data = header.strip('"').encode("ascii").decode("unicode_escape").encode("latin-1")
    rows = dict(line.split(", ", 1) for line in lines[1:] if line.strip())
    return data, {name: value.strip('"') for name, value in rows.items()}
