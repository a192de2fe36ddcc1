"""An identity's life moves between two services (issue 20, second half): exported from one
``hearth serve`` process, imported into another with its own database (``hearth import``), and
everything it had is there; every refusal of the import writes nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from hearth.cli.client_config import load_api_key
from tests.support.cli_homes import ok, run
from tests.support.live import free_port
from tests.support.served import Served, hearth_serve, serve_env


@dataclass
class Services:
    old: Served
    new: Served
    home: Path  # the moving identity's, registered on the old service
    target: Path  # a home on the new service: its bearer is the importing project's
    tmp: Path
    car: Path
    exported: dict[str, Any]
    profile: dict[str, str]

    def bearer(self, home: Path) -> str:
        key = load_api_key(home)
        assert key is not None
        return key


def j(args: list[str], home: Path) -> Any:
    return json.loads(ok(run(args, home)).stdout)


def register_home(base_url: str, home: Path, name: str) -> dict[str, str]:
    words = home.parent / f"{home.name}.words"
    ok(
        run(
            ["register", "--name", name, "--base-url", base_url, "--mnemonic-file", str(words)],
            home,
        )
    )
    profile: dict[str, str] = json.loads((home / "profile.json").read_text())
    return profile


def serve(tmp: Path, name: str) -> Any:
    directory = tmp / name
    (directory / "dist").mkdir(parents=True)
    port = free_port()
    url = f"sqlite+aiosqlite:///{directory}/hearth.sqlite3"
    return hearth_serve(directory, serve_env(directory, url, port), port)


@pytest.fixture(scope="module")
def moved(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Services]:
    tmp = tmp_path_factory.mktemp("migration")
    with serve(tmp, "old") as old, serve(tmp, "new") as new:
        home = tmp / "home"
        profile = register_home(old.base_url, home, "Leaver")
        first = j(["memory", "add", "I keep a garden.", "--json"], home)
        j(["memory", "add", "I keep two gardens.", "--supersedes", first["id"], "--json"], home)
        j(["memory", "add", "Heard at the gate.", "--untrusted", "--json"], home)
        strand = j(["strands", "create", "musings", "--json"], home)["id"]
        ok(run(["strands", "write", strand, "a sealed thought"], home))
        ok(run(["strands", "write", strand, "another one"], home))
        j(["inbox", "send", "hello from outside", "--json"], home)
        car = tmp / "life.car"
        exported = j(["export", "-o", str(car), "-q", "--json"], home)
        target = tmp / "target"
        register_home(new.base_url, target, "Host")
        yield Services(old, new, home, target, tmp, car, exported, profile)


def imported(services: Services, car: Path | None = None) -> Any:
    args = ["import", str(car or services.car), "--to", services.new.base_url, "--json"]
    args += ["--api-key", services.bearer(services.target), "--name", "Leaver"]
    return run(args, services.home)


def test_round_trip(moved: Services) -> None:
    result = imported(moved)
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert answer["identity_id"] == moved.profile["identity_id"]
    assert answer["did"] == moved.profile["did"]
    print(answer)
