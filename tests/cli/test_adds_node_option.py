"""``--node URL`` is the one name of the node a ``hearth adds`` command sends a document to;
``--submit``, its old name, is still read (hidden from the help, with a warning)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from hearth.cli.main import app

CID = "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy"
COMMANDS = [
    ["adds", "grant", "m.json", "--key", "k.pem", "--audience", "reader"],
    ["adds", "head", "new", "--key", "k.pem", "--issuer-id", "me", "--head-id", "h"],
]


@pytest.mark.parametrize("args", COMMANDS, ids=["grant", "head new"])
def test_node_is_listed_and_submit_is_not(args: list[str]) -> None:
    shown = CliRunner().invoke(
        app, [*args[:3], "--help"] if args[1] == "head" else [*args[:2], "--help"]
    )
    assert shown.exit_code == 0, shown.output
    assert "--node" in shown.output
    assert "--submit" not in shown.output


@pytest.mark.parametrize("args", COMMANDS, ids=["grant", "head new"])
def test_the_old_name_and_the_new_one_cannot_disagree(args: list[str]) -> None:
    extra = ["--manifest", CID] if args[1] == "head" else []
    both = ["--node", "http://127.0.0.1:9/a", "--submit", "http://127.0.0.1:9/b"]
    result = CliRunner().invoke(app, [*args, *extra, *both])
    assert result.exit_code == 2, result.output
    assert "--submit is the old name of --node" in result.stderr


def test_the_old_name_still_works_with_a_warning() -> None:
    args = [*COMMANDS[1], "--manifest", CID, "--submit", "http://127.0.0.1:9"]
    result = CliRunner().invoke(app, args)
    assert "--submit is deprecated: use --node" in result.stderr
    # The run goes on as --node would, to the missing key file.
    assert result.exit_code != 0
    assert "k.pem" in result.stderr
