"""docs/sdk.md's "The first hour" runs as written: its Python blocks, in order and in one
namespace, against a live service, with a home made by the real ``hearth register``."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

from tests.support.cli_homes import ok, run

DOC = Path(__file__).resolve().parents[2] / "docs" / "sdk.md"
_BLOCK = re.compile(r"^```python\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def first_hour_blocks() -> list[str]:
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## The first hour", 1)[1].split("\n## ", 1)[0]
    return _BLOCK.findall(section)


def test_the_first_hour_runs(
    live_service: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocks = first_hour_blocks()
    assert len(blocks) >= 6  # keys, env, home, iterators, async, retries
    home = tmp_path / "home"
    register = ["register", "--name", "Ada", "--base-url", live_service]
    ok(run([*register, "--mnemonic-file", str(tmp_path / "words.txt")], home))
    monkeypatch.setenv("HEARTH_BASE_URL", live_service)
    monkeypatch.setenv("HEARTH_HOME", str(home))
    # Set (empty counts as unset) so that monkeypatch restores them after the blocks, which
    # export the bearer into the environment as a deployment would.
    monkeypatch.setenv("SERVICE_API_KEY", "")
    monkeypatch.setenv("SERVICE_API_KEY_FILE", "")
    namespace: dict[str, object] = {"__name__": "first_hour"}
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        for number, block in enumerate(blocks, 1):
            exec(compile(block, f"docs/sdk.md block {number}", "exec"), namespace)
    out = printed.getvalue()
    assert "memory_stored" in out
    assert "Heard in the loop." in out
    assert "unreachable after three tries" in out
