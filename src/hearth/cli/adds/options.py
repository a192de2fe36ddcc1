"""The options several ``hearth adds`` commands share, each naming its own document in the help."""

from __future__ import annotations

from typing import Any

import typer

__all__ = [
    "BEARER_ENV",
    "BEARER_OPTION",
    "BLOCKS_HELP",
    "DEFAULT_EXPIRY",
    "FORCE_OPTION",
    "NOW_OPTION",
    "QUIET_OPTION",
    "out_option",
    "submit_option",
]

BEARER_ENV = "HEARTH_BEARER"
DEFAULT_EXPIRY = "30d"

BLOCKS_HELP = (
    "Block store: a hearth store directory, a plain directory of CID-named files, or a "
    "provider node's http(s) URL."
)
BEARER_OPTION = typer.Option(
    None,
    "--bearer-file",
    help=f"File holding the bearer for a URL (else ${BEARER_ENV}, else the hearth home's key "
    "for that service).",
    show_default=False,
)


# The options several commands share, each naming its own document in the help.
def out_option(what: str) -> Any:
    return typer.Option(
        None, "--out", "-o", help=f"Write the {what} here (default: stdout).", show_default=False
    )


def submit_option(what: str) -> Any:
    return typer.Option(
        None,
        "--submit",
        help=f"Also POST the {what} to this provider node URL.",
        show_default=False,
    )


QUIET_OPTION = typer.Option(False, "--quiet", "-q", help="No progress bar or summary line.")
FORCE_OPTION = typer.Option(False, "--force", help="Replace an existing output file.")
NOW_OPTION = typer.Option(
    None, "--now", help="Epoch seconds to use as the current time.", show_default=False
)
