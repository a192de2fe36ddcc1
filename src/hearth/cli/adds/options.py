"""The options several ``hearth adds`` commands share, each naming its own document in the help."""

from __future__ import annotations

from typing import Any

import typer

from .report import note, usage

__all__ = [
    "BEARER_ENV",
    "BEARER_OPTION",
    "BLOCKS_HELP",
    "DEFAULT_EXPIRY",
    "FORCE_OPTION",
    "NOW_OPTION",
    "QUIET_OPTION",
    "SUBMIT_ALIAS",
    "node_option",
    "node_url",
    "out_option",
]

BEARER_ENV = "HEARTH_BEARER"
DEFAULT_EXPIRY = "30d"

BLOCKS_HELP = (
    "Block store: a hearth store directory, a plain directory of CID-named files, a "
    "provider node's http(s) URL, or s3://bucket/prefix (an S3-compatible object store; "
    "endpoint and keys from the standard AWS_* variables)."
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


def node_option(what: str) -> Any:
    """``--node URL``: the one name, in every ``hearth adds`` command, of the node (the hearth
    service's URL, or another provider node's) a document is sent to."""
    return typer.Option(
        None,
        "--node",
        help=f"Also send the {what} to this provider node (e.g. the hearth service's URL).",
        show_default=False,
    )


# The name --node replaced, still read so that scripts keep working; hidden from the help.
SUBMIT_ALIAS = typer.Option(None, "--submit", hidden=True, show_default=False)


def node_url(node: str | None, submit: str | None) -> str | None:
    """The node to send to: ``--node``, else the deprecated ``--submit`` (with a warning)."""
    if submit is None:
        return node
    if node is not None and node != submit:
        usage("--submit is the old name of --node; give one of them")
    note("--submit is deprecated: use --node")
    return submit


QUIET_OPTION = typer.Option(False, "--quiet", "-q", help="No progress bar or summary line.")
FORCE_OPTION = typer.Option(False, "--force", help="Replace an existing output file.")
NOW_OPTION = typer.Option(
    None, "--now", help="Epoch seconds to use as the current time.", show_default=False
)
