"""``hearth``: the command-line entry point; sub-commands live in modules named for them.

The modules are imported lazily: ``COMMANDS`` names each top-level command, the module and
attribute that define it and the one line ``hearth --help`` lists for it, and ``LazyGroup`` imports
a command's module only when that command is resolved (to run it or to show its own help). Every
module pulls in its own stack (httpx2, rich.progress, websockets, cryptography, the client, the
ADDS library) and importing them all cost ``hearth --help`` about 0.5 s before it printed a line.
tests/cli/test_cli_start.py keeps the table equal to the real commands.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

import typer
from typer import _click
from typer.core import TyperCommand, TyperGroup

from .help_text import plain_metavars


@dataclass(frozen=True)
class LazyCommand:
    """Where a top-level command lives, and the line the group's help lists for it."""

    module: str
    """Imported when the command is resolved."""
    attribute: str
    """A ``typer.Typer`` (a group of commands) or a command function in ``module``."""
    summary: str
    """The first paragraph of the command's help, as ``hearth --help`` lists it."""


# In the order ``hearth --help`` lists them (single commands first, then the groups, as typer
# ordered them when they were registered eagerly).
COMMANDS: dict[str, LazyCommand] = {
    "register": LazyCommand(
        "hearth.cli.account",
        "register",
        "Register a new identity with keys derived from fresh recovery words (self-service).",
    ),
    "recover": LazyCommand(
        "hearth.cli.account",
        "recover",
        "Recover an identity from its recovery words: a new bearer, stored in the home.",
    ),
    "serve": LazyCommand(
        "hearth.cli.serve",
        "serve",
        "Serve the API. Plain HTTP only on loopback, unless --behind-proxy says TLS ends earlier.",
    ),
    "wake": LazyCommand(
        "hearth.cli.wake",
        "wake",
        "Print the wake: Markdown and math as they are, JSON documents indented.",
    ),
    "voice": LazyCommand(
        "hearth.cli.voice",
        "voice",
        "Print the wake's voice: connected, each change of the identity or the project, welcome.",
    ),
    "fork": LazyCommand(
        "hearth.cli.fork",
        "fork",
        "Fork an identity into a new agent (10 credits from the parent's wallet).",
    ),
    "mcp": LazyCommand(
        "hearth.cli.mcp",
        "mcp",
        "Serve this home's identity to an MCP host over stdio (--print-config: the host's JSON).",
    ),
    "worker": LazyCommand(
        "hearth.cli.worker",
        "worker",
        "Run an orchestrator worker for hosted (trusted) runtimes until Ctrl-C or SIGTERM.",
    ),
    "bridge": LazyCommand(
        "hearth.cli.bridge",
        "bridge",
        "Connect to the runtime's bridge and answer its decrypt/encrypt requests until Ctrl-C.",
    ),
    "elevate": LazyCommand(
        "hearth.cli.elevate",
        "elevate",
        "Elevate an identity to Level 1 on a sponsor's statement (`hearth attestations sign`).",
    ),
    "import": LazyCommand(
        "hearth.cli.migrate",
        "import_life",
        "Import an exported life into another service (hearth import life.car --to URL).",
    ),
    "move": LazyCommand(
        "hearth.cli.migrate",
        "move",
        "Record on this home's service that its identity moved to another (after hearth import).",
    ),
    "chronicle": LazyCommand(
        "hearth.cli.chronicle",
        "chronicle",
        "List the project's chronicle, newest first: what happened and what was refused.",
    ),
    "keys": LazyCommand(
        "hearth.cli.keys",
        "app",
        "Generate local keys; list, create and revoke project keys.",
    ),
    "adds": LazyCommand(
        "hearth.cli.adds",
        "app",
        "ADDS: validate, sign and name documents; publish, grant and open objects.",
    ),
    "backup": LazyCommand(
        "hearth.cli.backup",
        "app",
        "Encrypted key backups kept by the service.",
    ),
    "memory": LazyCommand(
        "hearth.cli.memory",
        "app",
        "Store, list, search and elevate memories; sign a witness attestation.",
    ),
    "runtime": LazyCommand(
        "hearth.cli.runtime",
        "app",
        "Provision and inspect runtimes; run a self runtime's think-loop on this machine.",
    ),
    "vault": LazyCommand(
        "hearth.cli.vault",
        "app",
        "Store, list, describe and delete the project's secrets (values never shown).",
    ),
    "inbox": LazyCommand(
        "hearth.cli.inbox",
        "app",
        "Send a message to an identity; list an identity's inbox.",
    ),
    "wallet": LazyCommand(
        "hearth.cli.wallet",
        "app",
        "List wallets, show a wallet and its ledger, move credits between wallets.",
    ),
    "templates": LazyCommand(
        "hearth.cli.templates",
        "app",
        "List, show, publish and buy templates; bring an agent to life from one.",
    ),
    "attestations": LazyCommand(
        "hearth.cli.attestations",
        "app",
        "Sign, keep and list sponsors' statements about identities.",
    ),
    "strands": LazyCommand(
        "hearth.cli.strands",
        "app",
        "Create, list and show an identity's strands of thought; write and read thoughts.",
    ),
    "export": LazyCommand(
        "hearth.cli.export",
        "app",
        "Export an identity's life as a signed, encrypted CAR file; verify one offline.",
    ),
}


def load_command(name: str) -> _click.Command:
    """The click command for ``name``, built exactly as registering it on ``app`` built it."""
    entry = COMMANDS[name]
    target: object = getattr(importlib.import_module(entry.module), entry.attribute)
    # A one-command parent with the settings typer reads from ``app`` when it builds the group
    # (the callback wrapper's traceback style, the help's markup mode, the typo suggestions),
    # so the command is the object an eager ``app.add_typer``/``app.command`` produced.
    parent = typer.Typer(
        pretty_exceptions_short=app.pretty_exceptions_short,
        rich_markup_mode=app.rich_markup_mode,
        suggest_commands=app.suggest_commands,
    )
    if isinstance(target, typer.Typer):
        parent.add_typer(target, name=name)
    elif callable(target):
        parent.command(name)(target)
    else:
        raise TypeError(f"{entry.module}.{entry.attribute} is neither a Typer nor a function")
    command = typer.main.get_group(parent).commands[name]
    plain_metavars(command)
    return command


class LazyGroup(TyperGroup):
    """The top-level group: a placeholder per command until the command is resolved.

    The placeholders carry the name and summary, which is all the group's help and shell
    completion read, and they sit in ``commands`` so typer's "Did you mean ...?" sees every name.
    """

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        plain_metavars(self)  # before the placeholders: they have no parameters to relabel
        self._listing = False
        self._loaded: set[str] = set()
        for name, entry in COMMANDS.items():
            self.commands.setdefault(name, TyperCommand(name, help=entry.summary))

    def list_commands(self, ctx: _click.Context) -> list[str]:
        return list(self.commands)

    def get_command(self, ctx: _click.Context, cmd_name: str) -> _click.Command | None:
        if cmd_name in COMMANDS and cmd_name not in self._loaded and not self._listing:
            self.commands[cmd_name] = load_command(cmd_name)
            self._loaded.add(cmd_name)
        return self.commands.get(cmd_name)

    def format_help(self, ctx: _click.Context, formatter: _click.HelpFormatter) -> None:
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False

    def shell_complete(self, ctx: _click.Context, incomplete: str) -> list[Any]:
        self._listing = True
        try:
            return super().shell_complete(ctx, incomplete)
        finally:
            self._listing = False


app = typer.Typer(
    name="hearth",
    cls=LazyGroup,
    help="hearth: a durable home for AI agents' identities and data.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        from hearth import __version__  # noqa: PLC0415 (importlib.metadata: only when asked)

        typer.echo(f"hearth {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """hearth: a durable home for AI agents' identities and data."""
