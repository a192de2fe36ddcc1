"""Every command of ``hearth`` (walked from the table in ``hearth.cli.main``, so a new command
cannot be missed) either prints data, and then takes ``--json`` or prints one JSON document
by nature, or is listed here with the reason it prints none. Each data command is run against
the live service (SQLite) with ``--json`` where it takes it, and its standard output must parse
as one JSON document."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from hearth.client.home import read_api_key
from tests.support.cli_commands import leaf_commands, option_names
from tests.support.cli_homes import home_with_identity, ok, run
from tests.support.live import Live, live_on

Path_ = tuple[str, ...]  # a command as typed: ("adds", "head", "new")

# Commands that print no data: processes that run until stopped, confirmations, and the bytes
# of an object (whatever they are).
NO_DATA: dict[Path_, str] = {
    ("serve",): "runs the service until stopped",
    ("worker",): "runs an orchestrator worker until stopped",
    ("bridge",): "answers a runtime's bridge until stopped",
    ("runtime", "run"): "a think-loop that runs until stopped",
    ("keys", "revoke"): "a one-line confirmation",
    ("vault", "delete"): "a one-line confirmation",
    ("adds", "open"): "writes the object's own bytes",
    ("adds", "blocks", "copy"): "copies blocks; only a note on standard error",
}
# Commands whose standard output is one JSON document whatever is asked: signed documents,
# schemas, reports. A --json flag would change nothing.
ALWAYS_JSON: set[Path_] = {
    ("adds", "sign"),
    ("adds", "schema"),
    ("adds", "publish"),
    ("adds", "grant"),
    ("adds", "provider-record"),
    ("adds", "receipt"),
    ("adds", "head", "new"),
    ("adds", "head", "resolve"),
    ("memory", "attest"),
    ("attestations", "sign"),
}

ALL = leaf_commands()


@dataclass
class World:
    """What the commands act on: a home (with a memory, a strand, a runtime, a vault secret, a
    template, a child's wallet), a sponsor's home, ADDS keys and a published object."""

    live: Live
    tmp: Path
    home: Path
    identity: str
    sponsor_home: Path
    values: dict[str, str]

    def file(self, name: str) -> str:
        return str(self.tmp / name)


def made(result_stdout: str) -> dict[str, str]:
    data = json.loads(result_stdout)
    assert isinstance(data, dict)
    return data


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    tmp = tmp_path_factory.mktemp("json_everywhere")
    with live_on("sqlite", tmp / "service") as live, live_on("sqlite", tmp / "other") as other:
        for who in (
            "me",
            "sponsor",
            "elsewhere",
            "mover",
        ):  # where each home's recovery words are written
            (tmp / who).mkdir()
        home, profile = home_with_identity(live, tmp / "me", "Walker")
        sponsor_home, _sponsor = home_with_identity(live, tmp / "sponsor", "Sponsor")
        w = World(live, tmp, home, profile["identity_id"], sponsor_home, {})

        def j(args: list[str], where: Path = home) -> dict[str, str]:
            return made(ok(run(args, where)).stdout)

        v = w.values
        v["memory"] = j(["memory", "add", "Walked through.", "--json"])["id"]
        v["untrusted"] = j(["memory", "add", "Heard at the gate.", "--untrusted", "--json"])["id"]
        v["strand"] = j(["strands", "create", "walk", "--json"])["id"]
        v["runtime"] = j(["runtime", "create", "--name", "walker", "--json"])["id"]
        ok(run(["vault", "put", "walk-secret", "--file", "-"], home, input="v\n"))
        v["template"] = j(
            ["templates", "publish", "--name", "Free", "--description", "d", "--json"]
        )["id"]
        v["priced"] = j(
            [
                "templates",
                "publish",
                "--name",
                "Paid",
                "--description",
                "d",
                "--price",
                "1",
                "--json",
            ],
            sponsor_home,
        )["id"]
        ok(run(["fork", "--name", "Kid", "--save-key", w.file("kid.pem")], home))
        wallets = json.loads(ok(run(["wallet", "list", "--json"], home)).stdout)
        v["kid_wallet"] = next(x["id"] for x in wallets if x["identity_id"] != w.identity)
        statement = ok(run(["attestations", "sign", w.identity], sponsor_home)).stdout
        (tmp / "statement.json").write_text(statement)
        # ADDS: keys, a published object with its content key, a reader's key, a first head.
        ok(run(["adds", "keygen", "--out", w.file("ak")], home))
        (tmp / "object.bin").write_bytes(b"an object" * 100)
        publish = ["adds", "publish", w.file("object.bin"), "--key", w.file("ak.ed25519.pem")]
        publish += ["--publisher-id", "me", "--blocks", w.file("store"), "-q"]
        ok(run([*publish, "--content-key-out", w.file("ck"), "-o", w.file("m.json")], home))
        manifest = json.loads((tmp / "m.json").read_text())
        v["chunk"] = manifest["chunks"][0]["cid"]  # a block the store holds
        reader = ok(run(["adds", "keygen", "--out", w.file("reader"), "--json"], home)).stdout
        v["reader_key"] = made(reader)["x25519_public_key"]
        cid = ok(run(["adds", "cid", w.file("m.json")], home)).stdout.strip()
        v["manifest_cid"] = cid
        head = ["adds", "head", "new", "--key", w.file("ak.ed25519.pem"), "--issuer-id", "me"]
        ok(run([*head, "--head-id", "h", "--manifest", cid, "-o", w.file("head.json")], home))
        ok(run(["export", "-o", w.file("life.car"), "-q"], home))  # a life to verify
        # Another service, and a project there, for `hearth import`.
        elsewhere, _ = home_with_identity(other, tmp / "elsewhere", "Host")
        v["other_url"] = other.base_url
        v["other_key"] = read_api_key(elsewhere) or ""
        # An identity of its own for `hearth move` (after it, its mutations are refused).
        mover, _ = home_with_identity(live, tmp / "mover", "Mover")
        v["mover_home"] = str(mover)
        yield w


def keys(w: World) -> list[str]:
    """The ADDS signing key the world's documents are signed with."""
    return ["--key", w.file("ak.ed25519.pem")]


# The arguments that make each data command print (all given --json when it takes it).
ARGS: dict[Path_, Callable[[World], list[str]]] = {
    ("register",): lambda w: (
        [
            "register",
            "--name",
            "New",
            "--base-url",
            w.live.base_url,
            "--mnemonic-file",
            w.file("new-words.txt"),
            "--home",
            w.file("new-home"),
        ]
    ),
    ("recover",): lambda w: (
        [
            "recover",
            "--mnemonic-file",
            str(w.tmp / "me" / "words.txt"),
            "--home",
            w.file("recovered-home"),
            "--base-url",
            w.live.base_url,
        ]
    ),
    ("wake",): lambda w: ["wake"],
    ("voice",): lambda w: ["voice", "--count", "1"],
    ("fork",): lambda w: ["fork", "--name", "Walked", "--save-key", w.file("walked.pem")],
    ("elevate",): lambda w: ["elevate", w.file("statement.json")],
    ("chronicle",): lambda w: ["chronicle"],
    ("keys", "generate"): lambda w: ["keys", "generate", "--out", w.file("kg")],
    ("keys", "list"): lambda w: ["keys", "list"],
    ("keys", "create"): lambda w: ["keys", "create", "walker-key"],
    ("adds", "validate"): lambda w: ["adds", "validate", w.file("m.json")],
    ("adds", "sign"): lambda w: ["adds", "sign", *keys(w), "--resign", w.file("head.json")],
    ("adds", "cid"): lambda w: ["adds", "cid", w.file("m.json")],
    ("adds", "schema"): lambda w: ["adds", "schema", "grant"],
    ("adds", "keygen"): lambda w: ["adds", "keygen", "--out", w.file("kg2")],
    ("adds", "publish"): lambda w: (
        [
            "adds",
            "publish",
            w.file("object.bin"),
            *keys(w),
            "--publisher-id",
            "me",
            "--blocks",
            w.file("store"),
            "-q",
            "--content-key-out",
            w.file("ck2"),
        ]
    ),
    ("adds", "grant"): lambda w: (
        [
            "adds",
            "grant",
            w.file("m.json"),
            *keys(w),
            "--issuer-id",
            "me",
            "--audience",
            "you",
            "--content-key",
            w.file("ck"),
            "--audience-key",
            w.values["reader_key"],
        ]
    ),
    ("adds", "provider-record"): lambda w: (
        [
            "adds",
            "provider-record",
            *keys(w),
            "--provider-id",
            "p.example",
            "--record-id",
            "main",
            "--sequence",
            "1",
            "--blocks",
            w.file("store"),
            "--endpoint",
            "https://p.example/b/{cid}",
        ]
    ),
    ("adds", "receipt"): lambda w: (
        [
            "adds",
            "receipt",
            *keys(w),
            "--provider-id",
            "p.example",
            "--items",
            w.values["chunk"],
            "--commitment",
            "store",
            "--retention-days",
            "30",
            "--blocks",
            w.file("store"),
        ]
    ),
    ("adds", "head", "new"): lambda w: (
        [
            "adds",
            "head",
            "new",
            *keys(w),
            "--issuer-id",
            "me",
            "--head-id",
            "h",
            "--manifest",
            w.values["manifest_cid"],
            "--previous",
            w.file("head.json"),
        ]
    ),
    ("adds", "head", "resolve"): lambda w: ["adds", "head", "resolve", w.file("head.json")],
    ("backup", "push"): lambda w: ["backup", "push"],
    ("backup", "pull"): lambda w: ["backup", "pull", "--out", w.file("pulled.json")],
    ("mcp",): lambda w: ["mcp", "--print-config"],
    ("memory", "add"): lambda w: ["memory", "add", "Another."],
    ("memory", "list"): lambda w: ["memory", "list"],
    ("memory", "search"): lambda w: ["memory", "search", "walked"],
    ("memory", "history"): lambda w: ["memory", "history", w.values["memory"]],
    ("memory", "confirm"): lambda w: ["memory", "confirm", w.values["untrusted"]],
    ("memory", "elevate"): lambda w: (
        ["memory", "elevate", w.values["memory"], "--tier", "foundational"]
    ),
    ("memory", "attest"): lambda w: (
        ["memory", "attest", w.values["memory"], *keys(w), "--content", "Walked through."]
    ),
    ("runtime", "create"): lambda w: ["runtime", "create", "--name", "another"],
    ("runtime", "list"): lambda w: ["runtime", "list"],
    ("runtime", "show"): lambda w: ["runtime", "show", w.values["runtime"]],
    ("runtime", "events"): lambda w: ["runtime", "events", w.values["runtime"]],
    ("vault", "put"): lambda w: ["vault", "put", "walk-2", "--file", w.file("ck")],
    ("vault", "show"): lambda w: ["vault", "show", "walk-secret"],
    ("vault", "list"): lambda w: ["vault", "list"],
    ("inbox", "send"): lambda w: ["inbox", "send", "hello"],
    ("inbox", "list"): lambda w: ["inbox", "list"],
    ("wallet", "list"): lambda w: ["wallet", "list"],
    ("wallet", "show"): lambda w: ["wallet", "show"],
    ("wallet", "ledger"): lambda w: ["wallet", "ledger"],
    ("wallet", "fund"): lambda w: ["wallet", "fund", w.values["kid_wallet"], "1"],
    ("templates", "list"): lambda w: ["templates", "list"],
    ("templates", "show"): lambda w: ["templates", "show", w.values["template"]],
    ("templates", "publish"): lambda w: (
        ["templates", "publish", "--name", "T", "--description", "d"]
    ),
    ("templates", "buy"): lambda w: ["templates", "buy", w.values["priced"]],
    ("templates", "use"): lambda w: (
        ["templates", "use", w.values["template"], "--name", "U", "--save-key", w.file("born.pem")]
    ),
    ("attestations", "sign"): lambda w: ["attestations", "sign", w.identity],
    ("attestations", "add"): lambda w: ["attestations", "add", w.file("statement.json")],
    ("attestations", "list"): lambda w: ["attestations", "list"],
    ("strands", "create"): lambda w: ["strands", "create", "another"],
    ("strands", "show"): lambda w: ["strands", "show", w.values["strand"]],
    ("strands", "list"): lambda w: ["strands", "list"],
    ("strands", "write"): lambda w: ["strands", "write", w.values["strand"], "a thought"],
    ("strands", "thoughts"): lambda w: ["strands", "thoughts", w.values["strand"]],
    ("export", "verify"): lambda w: ["export", "verify", w.file("life.car"), "--open"],
    ("import",): lambda w: [
        "import",
        w.file("life.car"),
        "--to",
        w.values["other_url"],
        "--api-key",
        w.values["other_key"],
    ],
    ("move",): lambda w: [
        "move",
        "--to",
        w.values["other_url"],
        "--home",
        w.values["mover_home"],
    ],
    ("export", "add-reader"): lambda w: [
        "export",
        "add-reader",
        w.file("life.car"),
        "--audience",
        "reader",
        "--audience-key",
        w.values["reader_key"],
        "-o",
        w.file("life-for-reader.car"),
    ],
}

DATA = [path for path, _command in ALL if path not in NO_DATA]


def test_every_command_is_data_or_says_why_not() -> None:
    for path, command in ALL:
        takes_json = "--json" in option_names(command)
        kinds = [path in NO_DATA, path in ALWAYS_JSON, takes_json]
        assert sum(kinds) == 1, (path, "NO_DATA, ALWAYS_JSON, --json", kinds)
    assert set(ARGS) == set(DATA), "each data command needs its arguments in ARGS"
    assert set(NO_DATA) | ALWAYS_JSON <= {path for path, _ in ALL}  # no stale entries


@pytest.mark.parametrize("path", DATA, ids=" ".join)
def test_prints_one_json_document(world: World, path: Path_) -> None:
    args = ARGS[path](world)
    if path not in ALWAYS_JSON:
        args.append("--json")
    result = ok(run(args, world.home))
    json.loads(result.stdout)
