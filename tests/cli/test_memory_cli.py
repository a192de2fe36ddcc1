"""``hearth memory add / list / search / elevate / attest`` against the real service over
real HTTP."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

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
