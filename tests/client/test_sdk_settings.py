"""Where a client comes from: the environment, a home ``hearth register`` wrote, and fresh keys
from ``new_identity`` (registered against the live service)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hearth.client import HearthClient, HomeError, Settings, new_identity
from hearth.client.mnemonic_keys import derive_keys
from tests.support.cli_homes import ok, run


def test_new_identity_registers_and_its_words_derive_its_keys(live_service: str) -> None:
    made = new_identity()
    assert made.keys == derive_keys(made.mnemonic)
    assert made.mnemonic not in repr(made)
    with HearthClient(live_service) as client:
        registration = client.register(made.keys, "Ada")
        assert client.api_key == registration.api_key
        assert client.authority(registration.agent_id).mode == "agent_root"


def test_from_home_reads_what_hearth_register_wrote(live_service: str, tmp_path: Path) -> None:
    home = tmp_path / "home"
    register = ["register", "--name", "Ada", "--base-url", live_service]
    ok(run([*register, "--mnemonic-file", str(tmp_path / "words.txt")], home))
    bearer = (home / "api_key").read_text().strip()
    with HearthClient.from_home(home) as client:
        assert client.base_url == live_service
        assert client.api_key == bearer
        # The bearer is accepted, and it is this identity's project.
        assert (
            client.memories().items[0].agent_id
            == json.loads((home / "profile.json").read_text())["identity_id"]
        )
    with pytest.raises(HomeError, match="no identity"):
        HearthClient.from_home(tmp_path / "empty")


def test_from_home_defaults_to_hearth_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "profile.json").write_text(
        '{"base_url": "http://h.test", "project_id": "p", "identity_id": "i", "did": "d"}'
    )
    (tmp_path / "api_key").write_text("bearer-from-home\n")
    monkeypatch.setenv("HEARTH_HOME", str(tmp_path))
    settings = Settings.from_home()
    assert (settings.base_url, settings.api_key) == ("http://h.test", "bearer-from-home")
    assert "bearer-from-home" not in repr(settings)
    (tmp_path / "profile.json").write_text("{}")
    with pytest.raises(HomeError, match="damaged"):
        Settings.from_home()


def test_from_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("SERVICE_API_KEY", raising=False)
    monkeypatch.delenv("SERVICE_API_KEY_FILE", raising=False)
    monkeypatch.delenv("HEARTH_BASE_URL", raising=False)
    with pytest.raises(ValueError, match="HEARTH_BASE_URL"):
        HearthClient.from_env()
    monkeypatch.setenv("HEARTH_BASE_URL", "http://h.test/")
    with HearthClient.from_env() as client:
        assert (client.base_url, client.api_key) == ("http://h.test", None)
    key_file = tmp_path / "key"
    key_file.write_text("from-file\n")
    monkeypatch.setenv("SERVICE_API_KEY_FILE", str(key_file))
    with HearthClient.from_env() as client:
        assert client.api_key == "from-file"
    monkeypatch.setenv("SERVICE_API_KEY", "from-env")
    with HearthClient.from_env() as client:
        assert client.api_key == "from-env"
    monkeypatch.delenv("SERVICE_API_KEY")
    monkeypatch.setenv("SERVICE_API_KEY_FILE", str(tmp_path / "missing"))
    with pytest.raises(ValueError, match="SERVICE_API_KEY_FILE"):
        HearthClient.from_env()
