"""The route families' commands (issue 17) against the real service over real HTTP, on SQLite,
and on PostgreSQL when SERVICE_TEST_DATABASE_URL is set: each command's happy path with its
``--json``, and one refusal each, reported as the service's error code and HTTP status on
standard error with a non-zero exit and nothing on standard output."""

from __future__ import annotations

import base64
import json
import stat
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import Result

from tests.support.cli_homes import home_with_identity, ok, run
from tests.support.live import Live, live_on


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def live(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Live]:
    tmp = tmp_path_factory.mktemp(f"life_cli_{request.param}")
    with live_on(request.param, tmp) as service:
        yield service


def as_json(result: Result) -> Any:
    return json.loads(ok(result).stdout)


def refused(result: Result, code: str, status: int) -> None:
    """The refusal as the spec shapes it: ``code (HTTP status): message``, exit 1."""
    assert result.exit_code == 1, (result.exit_code, result.output)
    assert f"{code} (HTTP {status})" in result.stderr
    assert result.stdout == ""


def test_vault_stores_lists_and_deletes_without_showing_a_value(live: Live, tmp_path: Path) -> None:
    home, _profile = home_with_identity(live, tmp_path, "Keeper")
    secret = "s3cret-value-never-shown"
    put = run(
        ["vault", "put", "api-token", "--file", "-", "--description", "for tests", "--json"],
        home,
        input=secret + "\n",
    )
    stored = as_json(put)
    assert (stored["name"], stored["version"]) == ("api-token", 1)
    listed = as_json(run(["vault", "list", "--json"], home))
    assert "api-token" in [item["name"] for item in listed]
    shown = as_json(run(["vault", "show", "api-token", "--json"], home))
    assert shown["description"] == "for tests"
    table = ok(run(["vault", "list"], home))
    assert "api-token" in table.stdout
    for result in (put, table):
        assert secret not in result.output
    ok(run(["vault", "delete", "api-token"], home))
    refused(run(["vault", "show", "api-token"], home), "not_found", 404)
    # No --file and nothing to read (a script, CI): the error names --file, nothing is stored.
    blind = run(["vault", "put", "other-token"], home, input="")
    assert blind.exit_code == 2, blind.output
    assert "give --file" in blind.stderr
    refused(run(["vault", "show", "other-token"], home), "not_found", 404)


def test_wallet_shows_lists_and_moves_credits(live: Live, tmp_path: Path) -> None:
    home, profile = home_with_identity(live, tmp_path, "Spender")
    wallets = as_json(run(["wallet", "list", "--json"], home))
    (mine,) = [w for w in wallets if w["identity_id"] == profile["identity_id"]]
    shown = as_json(run(["wallet", "show", "--json"], home))
    assert (shown["id"], shown["balance"]) == (mine["id"], mine["balance"])
    # A second wallet of the project to move credits into: a child of this home's identity
    # (fork's parent defaults to it, as wake's identity does).
    forked = as_json(
        run(["fork", "--name", "Child", "--save-key", str(tmp_path / "child.pem"), "--json"], home)
    )
    assert forked["parent_identity_id"] == profile["identity_id"]
    (child,) = [
        w for w in as_json(run(["wallet", "list", "--json"], home)) if w["id"] != mine["id"]
    ]
    moved = as_json(run(["wallet", "fund", child["id"], "5", "--json"], home))
    assert (moved["transfer"]["amount"], moved["replayed"]) == (5, False)
    assert moved["wallet"]["balance"] == child["balance"] + 5
    ledger = as_json(run(["wallet", "ledger", child["id"], "--json"], home))
    assert ledger[0]["amount"] == 5
    assert "Ledger of wallet" in ok(run(["wallet", "ledger"], home)).stdout
    too_much = str(as_json(run(["wallet", "show", "--json"], home))["balance"] + 1)
    refused(run(["wallet", "fund", child["id"], too_much], home), "insufficient_credits", 402)


def test_templates_publish_show_and_use(live: Live, tmp_path: Path) -> None:
    home, _profile = home_with_identity(live, tmp_path, "Maker")
    published = as_json(
        run(["templates", "publish", "--name", "Calm", "--description", "steady", "--json"], home)
    )
    assert (published["name"], published["price"], published["mine"]) == ("Calm", 0, True)
    listed = as_json(run(["templates", "list", "--json"], home))
    assert published["id"] in [t["id"] for t in listed]
    shown = as_json(run(["templates", "show", published["id"], "--json"], home))
    assert shown["expression"] is not None
    key_file = tmp_path / "born.pem"
    use = ["templates", "use", published["id"], "--name", "Born", "--save-key", str(key_file)]
    born = as_json(run([*use, "--json"], home))
    assert (born["name"], born["template_id"]) == ("Born", published["id"])
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert "PRIVATE KEY" not in json.dumps(born)
    unknown = "00000000-0000-4000-8000-000000000000"
    refused(run(["templates", "show", unknown], home), "not_found", 404)


def test_a_sponsor_signs_and_the_subject_elevates(live: Live, tmp_path: Path) -> None:
    sponsor_home, sponsor = home_with_identity(live, tmp_path / "sponsor", "Sponsor")
    home, subject = home_with_identity(live, tmp_path / "subject", "Subject")
    signed = ok(
        run(["attestations", "sign", subject["identity_id"], "--credits", "7"], sponsor_home)
    )
    statement = tmp_path / "statement.json"
    statement.write_text(signed.stdout)
    assert json.loads(signed.stdout)["agent_id"] == subject["identity_id"]

    # Itself as its own sponsor: refused, and recorded in its chronicle.
    own = ok(run(["attestations", "sign", subject["identity_id"]], home)).stdout
    refused(run(["elevate", "-"], home, input=own), "no_self_sponsorship", 403)
    refusals = as_json(run(["chronicle", "--kind", "refusal", "--mine", "--json"], home))
    assert refusals
    assert all(entry["kind"] == "refusal" for entry in refusals)

    elevation = as_json(run(["elevate", str(statement), "--json"], home))
    assert (elevation["agent_id"], elevation["level"]) == (subject["identity_id"], 1)
    assert elevation["sponsor_did"] == sponsor["did"]
    kept = as_json(run(["attestations", "list", "--json"], home))
    assert [item["attester_did"] for item in kept] == [sponsor["did"]]
    again = as_json(run(["attestations", "add", str(statement), "--json"], home))
    assert again["replayed"] is True
    assert "Attestations of project" in ok(run(["attestations", "list"], home)).stdout
    refused(run(["elevate", str(statement)], home), "already_elevated", 409)
    assert "Chronicle of project" in ok(run(["chronicle", "--limit", "5"], home)).stdout
    # Another project's identity does not exist here; a kind the chronicle has not, neither.
    refused(run(["chronicle", "--identity", sponsor["identity_id"]], home), "not_found", 404)
    refused(run(["chronicle", "--kind", "gossip"], home), "validation_error", 422)
    refused(run(["attestations", "add", "-"], home, input=own), "no_self_sponsorship", 403)


def test_strands_and_the_inbox(live: Live, tmp_path: Path) -> None:
    home, profile = home_with_identity(live, tmp_path, "Thinker")
    strand = as_json(run(["strands", "create", "musings", "--json"], home))
    assert (strand["name"], strand["identity_id"], strand["next_seq"]) == (
        "musings",
        profile["identity_id"],
        1,
    )
    assert as_json(run(["strands", "show", strand["id"], "--json"], home)) == strand
    listed = as_json(run(["strands", "list", "--identity", profile["identity_id"], "--json"], home))
    assert [item["id"] for item in listed] == [strand["id"]]
    unknown = "00000000-0000-4000-8000-000000000000"
    refused(run(["strands", "show", unknown], home), "not_found", 404)

    # A thought sealed here, the service keeping only its sealed bytes, opened here again.
    written = as_json(run(["strands", "write", strand["id"], "a quiet idea", "--json"], home))
    assert (written["seq"], written["next_seq"]) == (1, 2)
    read = as_json(run(["strands", "thoughts", strand["id"], "--json"], home))
    assert [(t["seq"], t["text"]) for t in read] == [(1, "a quiet idea")]
    assert "a quiet idea" in ok(run(["strands", "thoughts", strand["id"]], home)).stdout
    refused(run(["strands", "write", unknown, "lost"], home), "not_found", 404)

    sent = as_json(run(["inbox", "send", "hello there", "--sender", "tester", "--json"], home))
    assert (sent["identity_id"], sent["sender"]) == (profile["identity_id"], "tester")
    messages = as_json(run(["inbox", "list", "--json"], home))
    assert [(m["id"], m["body"]) for m in messages] == [(sent["id"], "hello there")]
    assert "hello there" in ok(run(["inbox", "list"], home)).stdout
    refused(run(["inbox", "send", "hi", "--identity", unknown], home), "not_found", 404)


def test_a_bridged_runtime_takes_the_key_keys_generate_prints(live: Live, tmp_path: Path) -> None:
    """``hearth keys generate`` prints base64url; ``runtime create --bridge-pubkey`` takes it
    as it is (the service is sent standard base64) and makes up the key id when none is given."""
    home, _profile = home_with_identity(live, tmp_path, "Bridger")
    generated = ok(run(["keys", "generate", "--out", str(tmp_path / "bridge")], home)).stdout
    printed = dict(line.split(": ") for line in generated.splitlines())["ed25519_public_key"]
    raw = base64.urlsafe_b64decode(printed + "=" * (-len(printed) % 4))
    create = ["runtime", "create", "--mode", "bridged", "--name", "Desk", "--json"]
    create += ["--provider", "anthropic", "--model", "claude-test", "--vault-key", "llm-key"]
    made = ok(run([*create, "--bridge-pubkey", printed], home))
    record = json.loads(made.stdout)
    assert record["bridge"]["pubkey"] == base64.b64encode(raw).decode()
    assert uuid.UUID(record["bridge"]["key_id"]).version == 4
    assert "control token" in made.stderr
    assert record["control_token"]  # shown once, inside the one JSON document
    wrong = run([*create, "--bridge-pubkey", printed[:-4]], home)
    assert wrong.exit_code == 2
    assert "--bridge-pubkey" in wrong.stderr
