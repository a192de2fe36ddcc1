"""``hearth fork`` against the real service over real HTTP, on SQLite, and on PostgreSQL when
SERVICE_TEST_DATABASE_URL is set: the key saved 0600 or printed once, never over a file, and a
402 reported with the balance and the price, nothing made and nothing retried."""

from __future__ import annotations

import json
import stat
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from hearth.adds.keys import load_ed25519_private_key
from hearth.client import HearthClient
from hearth.proofs import b64_encode
from tests.support.cli_homes import home_with_identity, ok, run
from tests.support.live import Live, live_on


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def live(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Live]:
    tmp = tmp_path_factory.mktemp(f"fork_cli_{request.param}")
    with live_on(request.param, tmp) as service:
        yield service


def client_of(live: Live, home: Path) -> HearthClient:
    return HearthClient(live.base_url, api_key=(home / "api_key").read_text().strip())


def test_fork_saves_the_key_once_and_reports_a_402(live: Live, tmp_path: Path) -> None:
    home, profile = home_with_identity(live, tmp_path, "Elder")
    ok(run(["memory", "add", "Carried along.", "--key", "carry"], home))
    key_file = tmp_path / "child.pem"
    result = ok(
        run(
            [
                "fork",
                profile["identity_id"],
                "--name",
                "Child",
                "--tier",
                "episodic",
                "--limit",
                "5",
                "--note",
                "for the road",
                "--save-key",
                str(key_file),
                "--json",
            ],
            home,
        )
    )
    summary = json.loads(result.stdout)
    assert (summary["name"], summary["parent_identity_id"]) == ("Child", profile["identity_id"])
    assert len(summary["memories"]) == 1
    assert summary["charged"]["amount"] == 10
    assert "private_key" not in result.stdout
    assert "PRIVATE KEY" not in result.output
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    key = load_ed25519_private_key(key_file.read_bytes())
    assert b64_encode(key.public_key().public_bytes_raw()) == summary["public_key"]

    # Never over an existing file, and refused before anything is paid.
    again = run(["fork", profile["identity_id"], "--name", "X", "--save-key", str(key_file)], home)
    assert again.exit_code == 2
    assert run(["fork", profile["identity_id"], "--name", "X", "--json"], home).exit_code == 2
    assert (
        run(["fork", profile["identity_id"], "--name", "X", "--tier", "all"], home).exit_code == 2
    )

    # Without --save-key the key is printed once on standard output, with a warning.
    printed = ok(
        run(["fork", profile["identity_id"], "--name", "Printed", "--no-expression"], home)
    )
    assert printed.stdout.startswith("-----BEGIN PRIVATE KEY-----")
    load_ed25519_private_key(printed.stdout.encode())
    assert "shown once" in printed.stderr

    with client_of(live, home) as client:
        wallet = next(w for w in client.wallets() if w.identity_id == profile["identity_id"])
        sink = next(w for w in client.wallets() if w.identity_id != profile["identity_id"])
        client.wallet_fund(
            sink.id, wallet.balance, source_wallet_id=wallet.id, idempotency_key=str(uuid.uuid4())
        )
        identities_before = len(client.wallets())
    broke = run(["fork", profile["identity_id"], "--name", "Unpaid"], home)
    assert broke.exit_code == 1
    assert "insufficient_credits" in broke.stderr
    assert "holds 0 and 10 is required" in broke.stderr
    assert "no payment was retried" in broke.stderr
    assert broke.stdout == ""
    with client_of(live, home) as client:
        assert len(client.wallets()) == identities_before
