"""``hearth register / keys / backup / recover`` against the real service over real HTTP."""

from __future__ import annotations

import json
import re
import stat
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from hearth.client import HearthClient
from hearth.client.backup import open_backup
from hearth.client.mnemonic_keys import check_mnemonic, derive_keys, new_mnemonic
from tests.support.cli_homes import PASSPHRASE, ok, run
from tests.support.live import embedded_service

WORD = re.compile(r"\b\d{1,2}\. ([a-z]+)\b")


@pytest.fixture
def service(tmp_path: Path) -> Iterator[str]:
    directory = tmp_path / "service"
    directory.mkdir()
    with embedded_service(directory) as base_url:
        yield base_url


def words_from(stderr: str) -> str:
    found = WORD.findall(stderr)
    assert len(found) == 24, stderr
    return check_mnemonic(" ".join(found))


def files_under(home: Path) -> list[Path]:
    return sorted(p for p in home.rglob("*") if p.is_file())


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_register_keys_backup_then_recover_on_a_fresh_home(service: str, tmp_path: Path) -> None:
    home = tmp_path / "home"
    registered = ok(
        run(["register", "--name", "Ada", "--base-url", service, "--show-mnemonic"], home)
    )
    words = words_from(registered.stderr)
    assert "Write these words down" in registered.stderr
    did = re.search(r"did: (did:svc:[0-9a-f-]+)", registered.stdout)
    agent = re.search(r"agent id: ([0-9a-f-]+)", registered.stdout)
    assert did
    assert agent
    assert words not in registered.stdout

    # The home: three private files and a private directory; no words, no plaintext keys.
    assert [p.name for p in files_under(home)] == ["api_key", "keys.backup.json", "profile.json"]
    assert mode(home) == 0o700
    for path in files_under(home):
        assert mode(path) == 0o600, path
    keys = derive_keys(words)
    secrets = [*keys.private_material().values(), words, " ".join(words.split()[:3])]
    for path in files_under(home):
        text = path.read_text()
        for secret in secrets:
            assert secret not in text, path
    profile = json.loads((home / "profile.json").read_text())
    assert profile["did"] == did.group(1)
    assert profile["identity_id"] == agent.group(1)
    assert profile["base_url"] == service
    bearer = (home / "api_key").read_text().strip()
    assert bearer not in (home / "profile.json").read_text()
    sealed = json.loads((home / "keys.backup.json").read_text())
    assert open_backup(sealed["blob_base64"], sealed["key_derivation"], PASSPHRASE) == keys

    listed = ok(run(["keys", "list"], home))
    assert profile["key_id"] in listed.stdout
    assert bearer[:11] in listed.stdout  # the prefix, never the bearer
    assert bearer not in listed.stdout

    created = ok(run(["keys", "create", "ci"], home))
    new_bearer = created.stdout.strip()
    assert new_bearer.startswith("hk_")
    assert "shown once" in created.stderr
    with HearthClient(service, api_key=new_bearer) as client:
        key_ids = [k.id for k in client.keys_list() if k.name == "ci"]
    assert len(key_ids) == 1
    ok(run(["keys", "revoke", key_ids[0]], home))
    again = run(["keys", "revoke", key_ids[0]], home)
    assert again.exit_code == 1
    assert "not_found" in again.stderr

    pushed = ok(run(["backup", "push", "--label", "first"], home))
    assert did.group(1) in pushed.stdout

    # Pull into the home (over its own key file) and into a separate file.
    (home / "keys.backup.json").unlink()
    ok(run(["backup", "pull"], home))
    assert mode(home / "keys.backup.json") == 0o600
    assert (
        json.loads((home / "keys.backup.json").read_text())["blob_base64"]
        == (sealed["blob_base64"])
    )
    out = tmp_path / "pulled.json"
    ok(run(["backup", "pull", "-o", str(out)], home))
    assert mode(out) == 0o600
    assert run(["backup", "pull", "-o", str(out)], home).exit_code == 2  # no silent overwrite
    wrong = run(["backup", "pull", "-o", str(tmp_path / "x.json")], home, passphrase="nope")
    assert wrong.exit_code == 1
    assert "wrong passphrase" in wrong.stderr
    assert not (tmp_path / "x.json").exists()

    # A fresh home on another device: only the words came along (typed at the hidden prompt).
    fresh = tmp_path / "fresh"
    recovered = ok(
        run(
            ["recover", "--base-url", service, "--device-label", "laptop"],
            fresh,
            input=words + "\n",
        )
    )
    assert did.group(1) in recovered.stdout
    assert words not in recovered.output
    new_profile = json.loads((fresh / "profile.json").read_text())
    assert new_profile["did"] == did.group(1)
    assert new_profile["project_id"] == profile["project_id"]
    recovered_bearer = (fresh / "api_key").read_text().strip()
    assert recovered_bearer != bearer
    for path in files_under(fresh):
        assert mode(path) == 0o600
        for secret in secrets:
            assert secret not in path.read_text()
    listing = ok(run(["keys", "list"], fresh))
    assert "recovered:laptop" in listing.stdout
    # The recovered home's sealed keys open to the same keys.
    fresh_sealed = json.loads((fresh / "keys.backup.json").read_text())
    assert (
        open_backup(fresh_sealed["blob_base64"], fresh_sealed["key_derivation"], PASSPHRASE) == keys
    )


def test_register_with_a_mnemonic_file_and_recover_from_it(service: str, tmp_path: Path) -> None:
    home = tmp_path / "home"
    words_file = tmp_path / "words.txt"
    result = ok(
        run(
            [
                "register",
                "--name",
                "Bee",
                "--base-url",
                service,
                "--mnemonic-file",
                str(words_file),
            ],
            home,
        )
    )
    assert mode(words_file) == 0o600
    words = check_mnemonic(words_file.read_text())
    assert words not in result.output
    assert WORD.findall(result.stderr) == []
    for path in files_under(home):
        assert words not in path.read_text()
    did = json.loads((home / "profile.json").read_text())["did"]

    # The same home may recover its own identity (a lost bearer): it is replaced deliberately.
    old_bearer = (home / "api_key").read_text()
    ok(run(["recover", "--mnemonic-file", str(words_file), "--did", did], home))
    assert (home / "api_key").read_text() != old_bearer
    assert mode(home / "api_key") == 0o600

    # A passphrase file is read instead of the environment.
    passphrase_file = tmp_path / "pass.txt"
    passphrase_file.write_text("from a file\n")
    other = tmp_path / "other"
    ok(
        run(
            [
                *("recover", "--base-url", service, "--mnemonic-file", str(words_file)),
                *("--passphrase-file", str(passphrase_file)),
            ],
            other,
            passphrase=None,
        )
    )
    sealed = json.loads((other / "keys.backup.json").read_text())
    assert open_backup(sealed["blob_base64"], sealed["key_derivation"], "from a file") == (
        derive_keys(words)
    )


def test_usage_errors_exit_2(service: str, tmp_path: Path) -> None:
    home = tmp_path / "home"
    empty = run(["keys", "list"], home)
    assert empty.exit_code == 2
    assert "hearth register" in empty.stderr
    no_url = run(["register", "--name", "Ada", "--show-mnemonic"], home)
    assert no_url.exit_code == 2
    assert "--base-url" in no_url.stderr
    nowhere = run(["register", "--name", "Ada", "--base-url", service, "--no-show-mnemonic"], home)
    assert nowhere.exit_code == 2
    assert not home.exists() or files_under(home) == []

    not_a_terminal = run(["register", "--name", "Ada", "--base-url", service], home)
    assert not_a_terminal.exit_code == 2
    assert "--mnemonic-file" in not_a_terminal.stderr
    assert WORD.findall(not_a_terminal.output) == []

    ok(run(["register", "--name", "Ada", "--base-url", service, "--show-mnemonic"], home))
    twice = run(["register", "--name", "Eve", "--base-url", service, "--show-mnemonic"], home)
    assert twice.exit_code == 2
    assert "already holds an identity" in twice.stderr

    key_id = json.loads((home / "profile.json").read_text())["key_id"]
    own = run(["keys", "revoke", key_id], home)
    assert own.exit_code == 2
    assert "--force" in own.stderr

    bad_words = tmp_path / "bad.txt"
    bad_words.write_text("not twenty four words\n")
    bad = run(["recover", "--mnemonic-file", str(bad_words)], home)
    assert bad.exit_code == 2
    assert "expected 24 words" in bad.stderr

    # Another identity's words refused for this home without --force.
    stranger = tmp_path / "stranger.txt"
    stranger.write_text(new_mnemonic())
    with HearthClient(service) as client:
        registration = client.register(derive_keys(stranger.read_text()), "Stranger")
    clash = run(["recover", "--mnemonic-file", str(stranger)], home)
    assert clash.exit_code == 2
    assert "another identity" in clash.stderr
    assert registration.did in clash.stderr or "--force" in clash.stderr


def test_http_errors_exit_1_with_code_and_message(service: str, tmp_path: Path) -> None:
    home = tmp_path / "home"
    ok(run(["register", "--name", "Ada", "--base-url", service, "--show-mnemonic"], home))
    (home / "api_key").write_text("hk_" + "y" * 43 + "\n")
    refused = run(["keys", "list"], home)
    assert refused.exit_code == 1
    assert "unauthorized" in refused.stderr
    assert "HTTP 401" in refused.stderr
    assert "y" * 43 not in refused.output

    unknown = tmp_path / "unknown.txt"
    unknown.write_text(new_mnemonic())
    missing = run(
        ["recover", "--base-url", service, "--mnemonic-file", str(unknown)], tmp_path / "n"
    )
    assert missing.exit_code == 1
    assert "no identity" in missing.stderr


def test_recover_with_several_candidates_requires_did(service: str, tmp_path: Path) -> None:
    words = new_mnemonic()
    keys = derive_keys(words)
    with HearthClient(service) as client:
        first = client.register(keys, "One")
        second = client.register(keys, "Two")
    words_file = tmp_path / "words.txt"
    words_file.write_text(words)
    home = tmp_path / "home"
    ambiguous = run(["recover", "--base-url", service, "--mnemonic-file", str(words_file)], home)
    assert ambiguous.exit_code == 2
    assert "--did" in ambiguous.stderr
    assert first.did in ambiguous.stderr
    assert second.did in ambiguous.stderr
    assert not (home / "api_key").exists()
    chosen = ok(
        run(
            [
                *("recover", "--base-url", service, "--mnemonic-file", str(words_file)),
                *("--did", second.did),
            ],
            home,
        )
    )
    assert second.did in chosen.stdout


def test_backup_push_without_a_key_file_needs_the_words(service: str, tmp_path: Path) -> None:
    home = tmp_path / "home"
    words_file = tmp_path / "words.txt"
    ok(
        run(
            [
                *("register", "--name", "Ada", "--base-url", service),
                *("--mnemonic-file", str(words_file)),
            ],
            home,
        )
    )
    (home / "keys.backup.json").unlink()
    missing = run(["backup", "push"], home)
    assert missing.exit_code == 2
    assert "--mnemonic-file" in missing.stderr

    stranger = tmp_path / "stranger.txt"
    stranger.write_text(new_mnemonic())
    wrong = run(["backup", "push", "--mnemonic-file", str(stranger)], home)
    assert wrong.exit_code == 1
    assert "not the root keys" in wrong.stderr

    ok(run(["backup", "push", "--mnemonic-file", str(words_file)], home))
    assert mode(home / "keys.backup.json") == 0o600
    ok(run(["backup", "pull"], home))


def test_a_lost_registration_answer_still_delivers_the_words(
    service: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent = HearthClient.register_prepared

    def answer_lost(self: HearthClient, body: dict[str, object]) -> None:
        sent(self, body)  # the service registers the identity ...
        raise httpx2.ReadTimeout("timed out")  # ... but its answer never arrives

    monkeypatch.setattr(HearthClient, "register_prepared", answer_lost)
    home = tmp_path / "home"
    words_file = tmp_path / "words.txt"
    lost = run(
        [
            *("register", "--name", "Ada", "--base-url", service),
            *("--mnemonic-file", str(words_file)),
        ],
        home,
    )
    assert lost.exit_code == 1
    assert "hearth recover" in lost.stderr
    assert not (home / "profile.json").exists()
    monkeypatch.undo()

    recovered = ok(
        run(["recover", "--base-url", service, "--mnemonic-file", str(words_file)], home)
    )
    assert "did:svc:" in recovered.stdout


def test_without_a_terminal_register_names_what_to_give_and_registers_nothing(
    service: str, tmp_path: Path
) -> None:
    # As in a script or CI: no passphrase given and nothing on stdin. A hidden prompt could only
    # abort; the error says which option or variable to use, and no identity is made.
    home = tmp_path / "home"
    words = tmp_path / "words.txt"
    args = ["register", "--name", "Wren", "--base-url", service, "--mnemonic-file", str(words)]
    refused = run(args, home, passphrase=None, input="")
    assert refused.exit_code == 2, refused.output
    assert "--passphrase-file or $HEARTH_PASSPHRASE" in refused.stderr
    assert not (home / "profile.json").exists()
    assert not words.exists()
    with httpx2.Client(base_url=service) as client:
        assert client.get("/public/agents").json()["agents"] == []
    # Piped, the first line of stdin is the passphrase.
    ok(run(args, home, passphrase=None, input="correct horse battery staple\n"))
    assert (home / "profile.json").exists()
