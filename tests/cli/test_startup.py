"""The CLI starts light: no provider SDK is imported until a runtime actually calls one (they
cost every command about a second and 75 MB, and `hearth adds` has a 100 MB memory goal)."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("anthropic", "openai")


def test_importing_the_cli_loads_no_provider_sdk() -> None:
    probe = (
        "import sys, hearth.cli.main\n"
        f"print(','.join(name for name in {HEAVY!r} if name in sys.modules))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert loaded.stdout.strip() == ""
