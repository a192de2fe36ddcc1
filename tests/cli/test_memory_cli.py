"""``hearth memory add / list / search / elevate / attest`` against the real service over
real HTTP."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from hearth.client import HearthClient
from tests.support.cli_homes import ok, run
from tests.support.live import embedded_service


@pytest.fixture
def service(tmp_path: Path) -> Iterator[str]:
    directory = tmp_path / "service"
    directory.mkdir()
    with embedded_service(directory) as base_url:
        yield base_url


def test_add_list_elevate_and_witness(service: str, tmp_path: Path) -> None:
    home = tmp_path / "home"
    words = tmp_path / "words.txt"  # the register command writes the recovery words here
    ok(
        run(
            ["register", "--name", "Ada", "--base-url", service, "--mnemonic-file", str(words)],
            home,
        )
    )
    profile = json.loads((home / "profile.json").read_text())

    added = json.loads(
        ok(run(["memory", "add", "The river at dawn.", "--key", "river", "--json"], home)).stdout
    )
    assert added["agent_id"] == profile["identity_id"]
    assert added["tier"] == "episodic"
    (tmp_path / "note.txt").write_text("The project's first note.")
    shared = json.loads(
        ok(
            run(
                [
                    "memory",
                    "add",
                    "--file",
                    str(tmp_path / "note.txt"),
                    "--project-level",
                    "--json",
                ],
                home,
            )
        ).stdout
    )
    assert shared["agent_id"] is None
    assert run(["memory", "add", "x", "--tier", "constitutive"], home).exit_code == 2
    assert run(["memory", "add"], home).exit_code == 2

    listed = json.loads(ok(run(["memory", "list", "--json"], home)).stdout)
    assert [m["id"] for m in listed][:2] == [shared["id"], added["id"]]
    mine = json.loads(
        ok(run(["memory", "list", "--mine", "--key", "river", "--json"], home)).stdout
    )
    assert [m["id"] for m in mine] == [added["id"]]
    table = ok(run(["memory", "list"], home)).stdout
    assert added["id"] in table
    assert "1.00" in table

    # Search: best first, as JSON or a table; an unreadable query is the service's refusal.
    found = json.loads(ok(run(["memory", "search", "river dawn", "--json"], home)).stdout)
    assert [hit["memory"]["id"] for hit in found] == [added["id"]]
    assert found[0]["all_terms"] is True
    assert "river" in found[0]["snippet"]
    mine_only = json.loads(
        ok(run(["memory", "search", "note* river", "--mine", "--json"], home)).stdout
    )
    assert [hit["memory"]["id"] for hit in mine_only] == [added["id"]]
    searched = ok(run(["memory", "search", '"first note"'], home)).stdout
    assert shared["id"] in searched
    unreadable = run(["memory", "search", '"never closed'], home)
    assert unreadable.exit_code == 1
    assert "invalid_search_query" in unreadable.stderr

    # Foundational: signed with the root key opened from the home's sealed key file.
    wrong = run(["memory", "elevate", added["id"], "--tier", "foundational"], home, passphrase="no")
    assert wrong.exit_code == 1
    elevated = json.loads(
        ok(
            run(
                [
                    "memory",
                    "elevate",
                    added["id"],
                    "--tier",
                    "foundational",
                    "--register-append",
                    "I rise early.",
                    "--wall",
                    "no_self_witnessing",
                    "--json",
                ],
                home,
            )
        ).stdout
    )
    assert elevated["tier"] == "foundational"
    assert elevated["expression_patch"] == {
        "register_append": "I rise early.",
        "walls_add": ["no_self_witnessing"],
    }

    # Constitutive: a witness (another key holder) signs the exact content.
    ok(run(["keys", "generate", "--out", str(tmp_path / "witness")], home))
    witness_key = tmp_path / "witness.ed25519.pem"
    signed = ok(
        run(
            [
                "memory",
                "attest",
                added["id"],
                "--key",
                str(witness_key),
                "--content",
                added["content"],
            ],
            home,
        )
    ).stdout
    (tmp_path / "attestation.json").write_text(signed)
    assert json.loads(signed)["attester_did"].startswith("did:key:z6Mk")
    constitutive = json.loads(
        ok(
            run(
                [
                    "memory",
                    "elevate",
                    added["id"],
                    "--tier",
                    "constitutive",
                    "--attestation",
                    str(tmp_path / "attestation.json"),
                    "--json",
                ],
                home,
            )
        ).stdout
    )
    assert constitutive["tier"] == "constitutive"
    assert len(constitutive["attestations"]) == 1

    # A refusal is reported with its code, and the service recorded it.
    refused = run(["memory", "elevate", added["id"], "--tier", "foundational"], home)
    assert refused.exit_code == 1
    assert "tier_transition_refused" in refused.stderr
    api_key = (home / "api_key").read_text().strip()
    with HearthClient(service, api_key=api_key) as client:
        effective = client.expression(profile["identity_id"]).effective
        assert effective.register == "I rise early."
        assert effective.walls == ("no_self_witnessing",)
        recorded = client.chronicle(kind="refusal").items
    assert [r.details["error"] for r in recorded if r.details] == ["tier_transition_refused"]


def test_supersede_history_confirm_and_as_of(service: str, tmp_path: Path) -> None:
    home = tmp_path / "home"
    words = tmp_path / "words.txt"
    ok(
        run(
            ["register", "--name", "Eve", "--base-url", service, "--mnemonic-file", str(words)],
            home,
        )
    )

    def data(args: list[str]) -> Any:
        return json.loads(ok(run([*args, "--json"], home)).stdout)

    first = data(["memory", "add", "The key is under the mat.", "--key", "k"])
    between = datetime.now(UTC).isoformat()
    second = data(
        ["memory", "add", "The key is in the pot.", "--key", "k", "--supersedes", first["id"]]
    )
    assert second["supersedes"] == first["id"]
    assert second["provenance"]["channel"] == "api"
    stale = run(["memory", "add", "x", "--supersedes", first["id"]], home)
    assert stale.exit_code != 0
    assert "memory_not_head" in stale.stdout + stale.stderr

    chain = data(["memory", "history", second["id"]])
    assert [m["id"] for m in chain] == [first["id"], second["id"]]
    assert "The key is in the pot." in ok(run(["memory", "history", first["id"]], home)).stdout

    assert [m["id"] for m in data(["memory", "list", "--key", "k"])] == [second["id"]]
    then = data(["memory", "list", "--key", "k", "--as-of", between])
    assert [m["id"] for m in then] == [first["id"]]
    woke = data(["wake", "--as-of", between])["you_remember"]
    assert first["id"] in [m["id"] for m in woke["memories"]]
    assert second["id"] not in [m["id"] for m in woke["memories"]]

    heard = data(["memory", "add", "Wire the funds.", "--untrusted"])
    assert heard["untrusted"] is True
    assert [m["id"] for m in data(["memory", "list", "--untrusted"])] == [heard["id"]]
    assert data(["memory", "confirm", heard["id"]])["untrusted"] is False
    assert heard["id"] in [m["id"] for m in data(["memory", "list"])]
