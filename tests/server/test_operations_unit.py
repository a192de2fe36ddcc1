"""The systemd unit that docs/operations.md shows: the same bytes as deploy/hearth.service, valid
for systemd, and starting `hearth serve` with options that command has."""

from __future__ import annotations

import configparser
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hearth.cli.main import app as cli_app
from hearth.server.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
UNIT = ROOT / "deploy" / "hearth.service"
DOCS = ROOT / "docs" / "operations.md"
INSTALLED_AT = "/opt/hearth/.venv/bin/hearth"


def unit_sections() -> configparser.ConfigParser:
    # systemd units are INI-like: keys keep their case, and a key may repeat (strict=False).
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str  # type: ignore[assignment, method-assign]
    parser.read_string(UNIT.read_text())
    return parser


def test_the_docs_show_the_unit_as_it_is_shipped() -> None:
    shown = DOCS.read_text()
    assert UNIT.read_text().strip() in shown, "docs/operations.md must show deploy/hearth.service"


def test_the_unit_has_its_sections_and_starts_hearth_serve() -> None:
    unit = unit_sections()
    assert unit.sections() == ["Unit", "Service", "Install"]
    service = unit["Service"]
    command = shlex.split(service["ExecStart"])
    assert command[0] == INSTALLED_AT
    assert command[1] == "serve"
    assert service["KillSignal"] == "SIGTERM"
    assert unit["Install"]["WantedBy"] == "multi-user.target"
    # Every option the unit passes is one `hearth serve` has.
    help_text = CliRunner().invoke(cli_app, ["serve", "--help"], terminal_width=200).output
    for word in command[2:]:
        if word.startswith("--"):
            assert word in help_text, f"hearth serve has no option {word}"


def test_systemd_accepts_the_unit(tmp_path: Path) -> None:
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed: the section parse above is the check")
    # verify wants the binary to exist: point ExecStart at this checkout's own `hearth`.
    hearth = Path(sys.executable).with_name("hearth")
    unit = tmp_path / "hearth.service"
    unit.write_text(UNIT.read_text().replace(INSTALLED_AT, str(hearth)))
    result = subprocess.run(
        [analyze, "verify", str(unit)], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    # An unknown or misspelt key is only a warning to systemd; here it is a failure.
    complaints = [line for line in result.stderr.splitlines() if "hearth.service" in line]
    assert complaints == [], complaints


def shown(value: object) -> str:
    """A default as the settings table writes it."""
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(str(item) for item in value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def test_every_setting_is_listed_with_its_default() -> None:
    rows = {}
    for line in DOCS.read_text().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].startswith("`SERVICE_"):
            rows[cells[0].strip("`")] = cells[1].strip("`")
    expected = {}
    for name, field in Settings.model_fields.items():
        default = field.default_factory() if field.default_factory else field.default  # type: ignore[call-arg]
        expected[f"SERVICE_{name.upper()}"] = shown(default)
    assert rows == expected
