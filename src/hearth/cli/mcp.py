"""``hearth mcp``: serve this home's identity to an MCP host over stdio (docs/mcp.md), or print
the ``mcpServers`` block that starts it (``--print-config``)."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import typer

from hearth.client.settings import BASE_URL_ENV

from .client_config import HOME_OPTION, PASSPHRASE_FILE_OPTION, home_dir, usage_error


def _command() -> str:
    """The ``hearth`` executable a host should start: the one running now, by absolute path
    (a host does not search the user's shell PATH)."""
    beside = Path(sys.executable).parent / "hearth"
    if beside.exists():
        return str(beside)
    return shutil.which("hearth") or "hearth"


def server_block(home: Path, passphrase_file: Path | None) -> dict[str, Any]:
    """The ``mcpServers`` entry for this home. No secret goes in it: the bearer and the sealed
    keys stay in the home's files, the passphrase in its own file."""
    args = ["mcp", "--home", str(home.expanduser().resolve())]
    if passphrase_file is not None:
        args += ["--passphrase-file", str(passphrase_file.expanduser().resolve())]
    return {"mcpServers": {"hearth": {"command": _command(), "args": args}}}


def mcp(
    print_config: bool = typer.Option(
        False,
        "--print-config",
        help="Print the mcpServers JSON block that starts this server for the current home.",
    ),
    as_json: bool = typer.Option(
        False, "--json", help="With --print-config: the block as one JSON document (as always)."
    ),
    home: Path | None = HOME_OPTION,
    passphrase_file: Path | None = PASSPHRASE_FILE_OPTION,
) -> None:
    """Serve this home's identity to an MCP host over stdio (--print-config: the host's JSON).

    Wake, memory, chronicle, inbox, runtimes and wallet, for the home's identity (or, with no
    --home, from HEARTH_BASE_URL and SERVICE_API_KEY when set); the root-signed tools need the
    key file's passphrase (docs/mcp.md)."""
    from hearth.mcp.stdio import (  # noqa: PLC0415 - the SDK and MCP stacks, when used
        config_from_env,
        config_from_home,
    )

    path = home_dir(home)
    try:
        if print_config:
            config_from_home(path, environ={})  # the home has an identity; no key is opened
            block = server_block(path, passphrase_file)
            typer.echo(json.dumps(block, indent=None if as_json else 2))
            return
        if home is None and os.environ.get(BASE_URL_ENV):
            config = config_from_env(passphrase_file=passphrase_file)
        else:
            config = config_from_home(path, passphrase_file=passphrase_file)
    except ValueError as exc:
        usage_error(str(exc))
    import anyio  # noqa: PLC0415

    from hearth.mcp.stdio import serve_stdio  # noqa: PLC0415

    anyio.run(serve_stdio, config)
