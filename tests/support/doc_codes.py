"""The error and warning codes documented in docs/adds.md (the table under "## Error codes")."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "adds.md"
_ROW = re.compile(r"^\| `((?:spec|profile)\.[a-z0-9_.]+)` \| (error|warning) \|", re.MULTILINE)


def documented_codes() -> dict[str, str]:
    return dict(_ROW.findall(DOC.read_text(encoding="utf-8")))


def documented_error_codes() -> set[str]:
    return {code for code, severity in documented_codes().items() if severity == "error"}
