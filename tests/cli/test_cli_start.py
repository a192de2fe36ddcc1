"""``hearth`` imports only what the command line asks for, and shows the same help as before.

The top-level commands load lazily (``hearth.cli.main.COMMANDS``): ``hearth --help`` lists them
from the table without importing their modules, and ``hearth GROUP ...`` imports that group's
module only. Within ``hearth adds``, what only a remote store or a terminal's progress bar needs
(httpx2, the client) is imported by the code that uses it, so a local publish or open never
loads it. These tests check which modules a fresh process imported (never how long it took:
bench/cli_start.py measures that), and that the table cannot drift from the real commands.
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer
import typer.main
from typer import _click
from typer.testing import CliRunner

from hearth.cli import main as cli_main
from hearth.cli.help_text import plain_metavars
from hearth.cli.main import COMMANDS, app, load_command
from tests.support.cli_commands import leaf_commands

# Each of these costs tens to hundreds of milliseconds to import, and no help page needs one
# unless it is the help of the command that uses it.
HEAVY = (
    "httpx",
    "httpx2",
    "rich.progress",
    "websockets",
    "cryptography.hazmat",
    "nacl",
    "hearth.client",
    "hearth.adds",
    "hearth.server",
    "hearth.proofs",
    "sqlalchemy",
    "fastapi",
    "uvicorn",
    "anthropic",
    "openai",
    "importlib.metadata",
)
# What ``hearth adds`` needs only to talk to a provider node or the service (httpx2, the client
# and its crypto), or never (the server's stack, the provider SDKs), or only to draw a progress
# bar on a terminal. Its help and a publish or open with a local store import none of them.
REMOTE_ONLY = (
    "httpx",
    "httpx2",
    "websockets",
    "rich.progress",
    "hearth.client",
    "hearth.server",
    "sqlalchemy",
    "fastapi",
    "uvicorn",
    "anthropic",
    "openai",
)
# The client package's lazy ``__init__`` and its home format (hearth.client.home) import the
# standard library only; the CLI reads its home through them, local commands included.
HOME_FORMAT = {"hearth.client", "hearth.client.home"}
COMMAND_MODULES = sorted({entry.module for entry in COMMANDS.values()})
GROUPS = [name for name, entry in COMMANDS.items() if entry.attribute == "app"]

# What the entry point script does (``hearth = "hearth.cli.main:app"``), then the modules the
# process holds once the command has run, written where the test can read them.
PROBE = """
import json, sys
out = sys.argv.pop(1)
from hearth.cli.main import app
try:
    app()
finally:
    with open(out, "w") as f:
        json.dump(sorted(sys.modules), f)
"""


def run_cli(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    out = tmp_path / "modules.json"
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(out), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "COLUMNS": "200"},
    )
    return done, set(json.loads(out.read_text()))


def loaded(modules: set[str], prefixes: tuple[str, ...] | list[str]) -> list[str]:
    return sorted(m for m in modules if any(m == p or m.startswith(p + ".") for p in prefixes))


def remote_loaded(modules: set[str]) -> list[str]:
    """The remote-only modules loaded, beyond the home format's stdlib-only ones."""
    return [m for m in loaded(modules, REMOTE_ONLY) if m not in HOME_FORMAT]


def listed_names(help_text: str) -> list[str]:
    """The command names in a help page's Commands panel, in order."""
    panel = help_text.split("─ Commands ", 1)[1]
    names = []
    for line in panel.splitlines()[1:]:
        if line.startswith("╰"):
            break
        first = line.strip("│ ").split(" ", 1)[0]
        if first and line.startswith("│ ") and not line.startswith("│  "):
            names.append(first)
    return names


def real_group_commands(name: str) -> list[str]:
    group = load_command(name)
    assert isinstance(group, typer.core.TyperGroup)
    ctx = _click.Context(group)
    commands = [group.get_command(ctx, n) for n in group.list_commands(ctx)]
    return [c.name for c in commands if c is not None and c.name and not c.hidden]


def test_top_level_help_imports_no_command_module(tmp_path: Path) -> None:
    done, modules = run_cli(tmp_path, "--help")
    assert done.returncode == 0, done.stderr
    assert listed_names(done.stdout) == list(COMMANDS)
    assert loaded(modules, list(HEAVY)) == []
    assert loaded(modules, COMMAND_MODULES) == []


def test_no_arguments_shows_the_help_without_imports(tmp_path: Path) -> None:
    done, modules = run_cli(tmp_path)
    assert done.returncode == 2
    assert listed_names(done.stdout) == list(COMMANDS)
    assert loaded(modules, list(HEAVY)) == []
    assert loaded(modules, COMMAND_MODULES) == []


@pytest.mark.parametrize(
    "group",
    ["adds", "keys", "runtime", "vault", "inbox", "wallet", "templates", "attestations", "strands"],
)
def test_a_group_help_imports_that_group_only(tmp_path: Path, group: str) -> None:
    done, modules = run_cli(tmp_path, group, "--help")
    assert done.returncode == 0, done.stderr
    assert listed_names(done.stdout) == real_group_commands(group)
    own = COMMANDS[group].module
    assert own in modules
    others = [m for m in COMMAND_MODULES if m != own]
    # adds/ registers its commands from a module per family; client_config and files are
    # helpers every group shares, not commands.
    assert loaded(modules, others) == []


def test_a_sub_command_help_imports_that_group_only(tmp_path: Path) -> None:
    done, modules = run_cli(tmp_path, "keys", "generate", "--help")
    assert done.returncode == 0, done.stderr
    assert "--out" in done.stdout
    assert "hearth.cli.keys" in modules
    assert loaded(modules, [m for m in COMMAND_MODULES if m != "hearth.cli.keys"]) == []


@pytest.mark.parametrize(
    "args", [["adds", "--help"], ["adds", "publish", "--help"], ["adds", "open", "--help"]]
)
def test_adds_help_imports_nothing_remote(tmp_path: Path, args: list[str]) -> None:
    done, modules = run_cli(tmp_path, *args)
    assert done.returncode == 0, done.stderr
    assert f" {' '.join(args[:-1])} [OPTIONS]" in done.stdout  # its usage line
    assert "hearth.cli.adds.publish" in modules
    assert remote_loaded(modules) == []


def test_a_local_publish_and_open_import_nothing_remote(tmp_path: Path) -> None:
    """The path the throughput goal is about: keys, a publish into a new local store with a
    grant, and an open of it into a file, each in a process of its own."""
    done, modules = run_cli(tmp_path, "adds", "keygen", "--out", str(tmp_path / "me"))
    assert done.returncode == 0, done.stderr
    reader = dict(line.split(": ") for line in done.stdout.splitlines())["x25519_public_key"]
    data = os.urandom(300_000)
    (tmp_path / "in.bin").write_bytes(data)
    (tmp_path / "grants").mkdir()
    store, manifest, opened = tmp_path / "store", tmp_path / "m.json", tmp_path / "out.bin"
    publish = [
        "adds",
        "publish",
        str(tmp_path / "in.bin"),
        "--key",
        str(tmp_path / "me.ed25519.pem"),
    ]
    publish += ["--publisher-id", "me", "--blocks", str(store), "--chunk-size", "64KiB", "-q"]
    publish += ["--grant-to", reader, "--audience", "me", "--grant-dir", str(tmp_path / "grants")]
    done, published = run_cli(tmp_path, *publish, "-o", str(manifest))
    assert done.returncode == 0, done.stderr
    assert "manifest_cid: bafkrei" in done.stderr
    (grant,) = (tmp_path / "grants").iterdir()
    done, opening = run_cli(
        tmp_path,
        *["adds", "open", str(manifest), "--grant", str(grant), "--blocks", str(store)],
        *["--key", str(tmp_path / "me.x25519.pem"), "-o", str(opened), "-q"],
    )
    assert done.returncode == 0, done.stderr
    assert opened.read_bytes() == data
    for imported in (modules, published, opening):
        assert "hearth.cli.adds.publish" in imported
        assert remote_loaded(imported) == []


def test_version_still_reads_the_installed_version(tmp_path: Path) -> None:
    done, modules = run_cli(tmp_path, "--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("hearth ")
    assert "importlib.metadata" in modules
    assert loaded(modules, COMMAND_MODULES) == []


@pytest.mark.parametrize("name", list(COMMANDS))
def test_the_table_matches_the_real_command(name: str) -> None:
    entry = COMMANDS[name]
    target = getattr(importlib.import_module(entry.module), entry.attribute)
    assert isinstance(target, typer.Typer) == (entry.attribute == "app")
    command = load_command(name)
    assert command.name == name
    assert not command.hidden
    assert not command.deprecated
    assert not getattr(command, "rich_help_panel", None)
    # The line the Commands panel shows: the first paragraph of short_help or help.
    shown = inspect.cleandoc(command.short_help or command.help or "").split("\n\n")[0]
    assert shown == entry.summary


def eager_app() -> _click.Command:
    """``hearth`` built the way it was before the table: every module imported, every command
    registered on the app (single commands, then groups: the order typer lists them in), and
    the help's labels given as the lazy app gives them (hearth.cli.help_text)."""
    eager = typer.Typer(
        name="hearth",
        help="hearth: a durable home for AI agents' identities and data.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )
    for name, entry in COMMANDS.items():
        target = getattr(importlib.import_module(entry.module), entry.attribute)
        if isinstance(target, typer.Typer):
            eager.add_typer(target, name=name)
        else:
            eager.command(name)(target)
    eager.callback()(cli_main.main)
    group = typer.main.get_group(eager)
    plain_metavars(group)
    return group


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        [],
        ["regster"],
        ["adds", "--help"],
        ["adds", "nope"],
        ["memory", "add", "--help"],
        ["backup"],
        ["serve", "--help"],
        ["--version"],
    ],
)
def test_the_lazy_app_answers_as_the_eager_one(
    args: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    runner = CliRunner()
    lazy = runner.invoke(app, args, terminal_width=100)
    # typer's runner builds the command from a Typer; the eager one is already built.
    eager_group = eager_app()
    monkeypatch.setattr(typer.testing, "_get_command", lambda _app: eager_group)
    eager = runner.invoke(app, args, terminal_width=100)
    assert (lazy.exit_code, lazy.output) == (eager.exit_code, eager.output)
    assert lazy.output  # every one of these prints a help, a version or an error


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_command_help_resolves(name: str) -> None:
    result = CliRunner().invoke(app, [name, "--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert f"hearth {name}" in result.output


@pytest.mark.parametrize(
    ("path", "command"), leaf_commands(), ids=lambda v: " ".join(v) if isinstance(v, tuple) else ""
)
def test_help_shows_names_not_type_placeholders(path: tuple[str, ...], command: object) -> None:
    """No ``<bool>``/``<str>``/``{name}`` noise: flags bare, values and arguments by name."""
    result = CliRunner().invoke(app, [*path, "--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    for noise in ("<bool>", "<str>", "<path>", "<int", "<float>"):
        assert noise not in result.output, (noise, result.output)
    usage = next(line for line in result.output.splitlines() if "Usage:" in line)
    assert "{" not in usage, usage  # help texts may quote URL templates; the usage may not


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_command_is_in_the_readme_and_docs_cli(name: str) -> None:
    """The README's command list and docs/cli.md's table name every top-level command."""
    root = Path(__file__).resolve().parents[2]
    assert f"`{name}" in (root / "README.md").read_text(encoding="utf-8")
    assert f"`hearth {name}" in (root / "docs" / "cli.md").read_text(encoding="utf-8")
