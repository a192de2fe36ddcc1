"""What the CLI tests share: running ``hearth`` in a home of its own, and a home registered
with the live service."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner, Result

from hearth.cli.main import app
from tests.support.live import Live

PASSPHRASE = "a long passphrase for the key file"


def run(
    args: list[str], home: Path, *, passphrase: str | None = PASSPHRASE, input: str | None = None
) -> Result:
    """``hearth args`` in ``home``, the passphrase in the environment, ``input`` on stdin."""
    # An empty HEARTH_PASSPHRASE counts as unset, so passphrase=None leaves only the file/prompt.
    env = {"HEARTH_HOME": str(home), "HEARTH_PASSPHRASE": passphrase or ""}
    return CliRunner().invoke(app, args, env=env, input=input)


def ok(result: Result) -> Result:
    assert result.exit_code == 0, (result.exit_code, result.output, result.exception)
    return result


def home_with_identity(live: Live, tmp_path: Path, name: str) -> tuple[Path, dict[str, str]]:
    """A home registered as ``name`` (words in ``tmp_path``/words.txt) and its profile."""
    home = tmp_path / "home"
    words = tmp_path / "words.txt"
    register = ["register", "--name", name, "--base-url", live.base_url]
    ok(run([*register, "--mnemonic-file", str(words)], home))
    profile: dict[str, str] = json.loads((home / "profile.json").read_text())
    return home, profile
