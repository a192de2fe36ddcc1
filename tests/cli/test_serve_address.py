"""``hearth serve`` and the public address: refused without one beyond loopback or behind a
proxy (before anything is migrated or served); on loopback the bound address is the default.
uvicorn is never started: its ``run`` is replaced by a recorder."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from typer.testing import CliRunner

from hearth.cli.main import app as cli_app

# Every variable `hearth serve` reads or sets: CliRunner restores each after the run.
SERVE_ENV = [
    "SERVICE_PUBLIC_BASE_URL",
    "SERVICE_BEHIND_TLS_PROXY",
    "SERVICE_TRUST_PROXY",
    "SERVICE_AUTO_MIGRATE",
    "SERVICE_TLS_CERTFILE",
    "SERVICE_TLS_KEYFILE",
]


def serve(tmp_path: Path, *args: str, **env: str) -> tuple[int, str, list[dict[str, Any]]]:
    """Exit code, stderr and the uvicorn.run calls of one ``hearth serve``."""
    calls: list[dict[str, Any]] = []
    seen_env: dict[str, str | None] = {}

    def recorder(*_: Any, **kwargs: Any) -> None:
        calls.append(kwargs)
        seen_env.update({key: os.environ.get(key) for key in SERVE_ENV})

    environment: dict[str, str | None] = dict.fromkeys(SERVE_ENV)
    environment["SERVICE_DATABASE_URL"] = f"sqlite:///{tmp_path}/db.sqlite3"
    environment.update(env)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(uvicorn, "run", recorder)
        result = CliRunner().invoke(cli_app, ["serve", *args], env=environment)
    for call in calls:
        call["env"] = seen_env
    return result.exit_code, result.stderr, calls


@pytest.mark.parametrize(
    ("args", "env"),
    [
        (["--host", "0.0.0.0", "--certfile", "c.pem", "--keyfile", "k.pem"], {}),
        (["--host", "192.0.2.10", "--behind-proxy"], {}),
        (["--behind-proxy"], {}),  # a proxy in front on loopback: the bound address is not it
        ([], {"SERVICE_BEHIND_TLS_PROXY": "true"}),
    ],
)
def test_serve_refuses_without_a_public_address(
    tmp_path: Path, args: list[str], env: dict[str, str]
) -> None:
    code, stderr, calls = serve(tmp_path, *args, **env)
    assert code == 2
    assert "SERVICE_PUBLIC_BASE_URL is required" in stderr
    assert calls == []
    assert not (tmp_path / "db.sqlite3").exists()  # refused before migrating


def test_serve_beyond_loopback_with_a_public_address(tmp_path: Path) -> None:
    code, stderr, calls = serve(
        tmp_path,
        "--host",
        "0.0.0.0",
        "--port",
        "8443",
        "--behind-proxy",
        SERVICE_PUBLIC_BASE_URL="https://hearth.example.org",
    )
    assert code == 0, stderr
    (call,) = calls
    assert call["env"]["SERVICE_PUBLIC_BASE_URL"] == "https://hearth.example.org"
    assert call["env"]["SERVICE_TRUST_PROXY"] == "true"
    # The app reads X-Forwarded-For by its own rule; uvicorn must leave the peer as it is.
    assert call["proxy_headers"] is False


@pytest.mark.parametrize(
    ("host", "tls", "expected"),
    [
        ("127.0.0.1", False, "http://127.0.0.1:8123"),
        ("::1", False, "http://[::1]:8123"),
        ("localhost", True, "https://localhost:8123"),
    ],
)
def test_serve_on_loopback_defaults_to_the_bound_address(
    tmp_path: Path, host: str, tls: bool, expected: str
) -> None:
    args = ["--host", host, "--port", "8123"]
    if tls:
        args += ["--certfile", "c.pem", "--keyfile", "k.pem"]
    code, stderr, calls = serve(tmp_path, *args)
    assert code == 0, stderr
    (call,) = calls
    assert call["env"]["SERVICE_PUBLIC_BASE_URL"] == expected
    assert call["env"]["SERVICE_TRUST_PROXY"] is None
    assert call["proxy_headers"] is False
