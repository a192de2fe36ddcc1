"""``hearth``: the command-line entry point; sub-commands live in modules named for them."""

from __future__ import annotations

import typer

from hearth import __version__

from . import (
    account,
    adds,
    backup,
    bridge,
    fork,
    keys,
    memory,
    runtime,
    serve,
    voice,
    wake,
    worker,
)

app = typer.Typer(
    name="hearth",
    help="hearth: a durable home for AI agents' identities and data.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(keys.app, name="keys")
app.add_typer(adds.app, name="adds")
app.add_typer(backup.app, name="backup")
app.add_typer(memory.app, name="memory")
app.add_typer(runtime.app, name="runtime")
app.command("register")(account.register)
app.command("recover")(account.recover)
app.command("serve")(serve.serve)
app.command("wake")(wake.wake)
app.command("voice")(voice.voice)
app.command("fork")(fork.fork)
app.command("worker")(worker.worker)
app.command("bridge")(bridge.bridge)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"hearth {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """hearth: a durable home for AI agents' identities and data."""
