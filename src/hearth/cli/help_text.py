"""How ``--help`` names each parameter's value: once, here, for every command.

typer 0.29 labels every value with its Python type (``--json <bool>``, ``--home <path>``, an
argument as ``name <str>``, a required one as ``{name}`` in the usage line); a flag takes no
value at all, and a type says less than a name. :func:`plain_metavars` gives a flag no label,
an option the upper-cased name of its longest spelling (``--limit LIMIT``; ``--base-url URL``,
``--home DIR``, ``--...-file FILE``), an argument its upper-cased name with no type beside it
(``NAME``, ``[NAME]`` when optional), as click's own help does. ``hearth.cli.main`` applies it
to each command as it is loaded, so every command, new ones included, reads alike; a command
sets a metavar itself only where its option's name would mislead (``wallet fund --from``).
"""

from __future__ import annotations

from typer import _click
from typer.core import TyperArgument, TyperGroup, TyperOption

# Where the option's name is not the best word for its value.
_KNOWN = {"--base-url": "URL", "--node": "URL", "--home": "DIR"}


def _option_metavar(name: str) -> str:
    """``--base-url URL``, ``--home DIR``, ``--passphrase-file FILE``, else ``--limit LIMIT``."""
    if name in _KNOWN:
        return _KNOWN[name]
    if name.endswith("-file"):
        return "FILE"
    return name.lstrip("-").upper()


class PlainArgument(TyperArgument):
    """An argument shown by its metavar only: no type label, no braces in the usage line."""

    def display_type_rich(self, ctx: _click.Context) -> str | None:
        return None

    def _usage_display_name(self) -> str:
        name = self.display_name_raw if self.required else f"[{self.display_name_raw}]"
        return name + ("..." if self.nargs != 1 else "")


def plain_metavars(command: _click.Command) -> None:
    """Relabel ``command``'s parameters (and its sub-commands', recursively) in place."""
    for param in command.params:
        if isinstance(param, TyperArgument):
            param.metavar = param.metavar or (param.name or "value").upper()
            # The class, not a flag: typer reads the type label from this method alone.
            param.__class__ = PlainArgument
        elif isinstance(param, TyperOption):
            if param.is_flag:
                param.metavar = ""
            elif param.metavar is None:
                param.metavar = _option_metavar(max(param.opts, key=len))
    # --help is made on first use and kept on the command; made now, it is relabelled too.
    help_option = command.get_help_option(_click.Context(command))
    if help_option is not None:
        help_option.metavar = ""
    if isinstance(command, TyperGroup):
        for sub in command.commands.values():
            plain_metavars(sub)
