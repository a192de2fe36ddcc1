"""``hearth bridge`` (``python -m hearth.cli.bridge``) as a user runs it: a real process against
the live service, its keys from files, stopped with Ctrl-C (SIGINT)."""

from __future__ import annotations

import signal
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hearth.cli.bridge import app
from hearth.client.mnemonic_keys import derive_keys, new_mnemonic
from hearth.server.bridge import BridgeRefused
from tests.support.bridge import (
    bridge_args,
    hub,
    on_server,
    provision,
    sealed_thought,
    start_bridge,
)
from tests.support.live import Live, live_service, sqlite_settings
from tests.support.polling import eventually
from tests.support.processes import finish, stop

WAIT_S = 20.0


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    with live_service(sqlite_settings(tmp_path_factory.mktemp("bridge_cli"))) as live:
        yield live


def test_a_real_bridge_process_decrypts_under_the_users_k_master(
    live: Live, tmp_path: Path
) -> None:
    bridged = provision(live)
    thought = b"what I would rather keep to myself"
    strand_id = str(uuid.uuid4())
    nonce, ciphertext = sealed_thought(bridged.k_master, strand_id, 4, thought)
    stranger_nonce, stranger_ct = sealed_thought(
        derive_keys(new_mnemonic()).strand_master, strand_id, 4, thought
    )
    process = start_bridge(
        [*bridge_args(tmp_path, bridged), "--initial-delay", "0.05", "-v"], tmp_path
    )
    try:
        eventually(
            lambda: bridged.record()["bridge_connected"] or process.poll() is not None,
            "the bridge process to connect",
            WAIT_S,
        )
        assert process.poll() is None, process.communicate()[1]
        assert bridged.record()["status"] == "running"
        opened = on_server(
            live, hub(live).decrypt(bridged.runtime_id, strand_id, 4, nonce, ciphertext)
        )
        assert opened == thought
        with pytest.raises(BridgeRefused) as refused:
            on_server(
                live,
                hub(live).decrypt(bridged.runtime_id, strand_id, 4, stranger_nonce, stranger_ct),
            )
        assert refused.value.code == "decrypt_failed"
    finally:
        _, stderr = stop(process, signal.SIGINT, WAIT_S)
    assert process.returncode == 0, stderr
    assert "bridge stopped" in stderr
    assert "refused: decrypt_failed" in stderr  # -v logs outcomes...
    # ...and never a secret or a thought.
    for secret in (bridged.control_token, bridged.mnemonic.split()[0] + " ", thought.decode()):
        assert secret not in stderr
    eventually(lambda: not bridged.record()["bridge_connected"], "bridge_connected false")
    assert bridged.events()[-1] == "bridge_disconnected"


def test_a_refused_control_token_ends_the_process_with_status_1(live: Live, tmp_path: Path) -> None:
    bridged = provision(live)
    process = start_bridge(bridge_args(tmp_path, bridged, token="hrt_wrong"), tmp_path)
    _, stderr = finish(process, WAIT_S)
    assert process.returncode == 1
    assert "HTTP 401" in stderr
    assert "invalid_control_token" in stderr
    assert "hrt_wrong" not in stderr


def test_usage_errors_exit_2(live: Live, tmp_path: Path) -> None:
    bridged = provision(live, bind=False)
    args = bridge_args(tmp_path, bridged)
    runner = CliRunner()
    missing_key = [*args]
    missing_key[missing_key.index("--bridge-key") + 1] = str(tmp_path / "absent.pem")
    result = runner.invoke(app, missing_key)
    assert result.exit_code == 2
    assert "cannot read the bridge key" in result.output

    (tmp_path / "bad-words").write_text("one two three\n", encoding="utf-8")
    bad_words = [*args]
    bad_words[bad_words.index("--mnemonic-file") + 1] = str(tmp_path / "bad-words")
    result = runner.invoke(app, bad_words)
    assert result.exit_code == 2
    assert "recovery words" in result.output

    no_token = [*args]
    index = no_token.index("--control-token-file")
    del no_token[index : index + 2]
    result = runner.invoke(app, no_token, env={"HEARTH_BRIDGE_CONTROL_TOKEN": ""})
    assert result.exit_code == 2
    assert "no control token" in result.output
