"""Every command of ``hearth``, as the table in ``hearth.cli.main`` loads it: walked by the tests
that hold the whole command line to one rule (its help, its ``--json``)."""

from __future__ import annotations

from typer import _click
from typer.core import TyperGroup

from hearth.cli.main import COMMANDS, load_command


def leaf_commands() -> list[tuple[tuple[str, ...], _click.Command]]:
    """Each runnable command with its path (``("adds", "head", "new")``), in listing order."""
    found: list[tuple[tuple[str, ...], _click.Command]] = []

    def walk(command: _click.Command, path: tuple[str, ...]) -> None:
        if isinstance(command, TyperGroup):
            ctx = _click.Context(command)
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                assert sub is not None
                walk(sub, (*path, name))
            return
        found.append((path, command))

    for name in COMMANDS:
        walk(load_command(name), (name,))
    return found


def option_names(command: _click.Command) -> set[str]:
    return {name for param in command.params for name in getattr(param, "opts", [])}
