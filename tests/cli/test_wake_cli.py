"""``hearth wake`` and ``hearth voice`` against the real service over real HTTP,
on SQLite, and on PostgreSQL when SERVICE_TEST_DATABASE_URL is set."""

from __future__ import annotations

import json
import re
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import Result

from hearth.client import HearthClient
from tests.support.cli_homes import home_with_identity, ok, run
from tests.support.live import Live, live_on


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def live(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Live]:
    tmp = tmp_path_factory.mktemp(f"wake_cli_{request.param}")
    with live_on(request.param, tmp) as service:
        yield service


def client_of(live: Live, home: Path) -> HearthClient:
    return HearthClient(live.base_url, api_key=(home / "api_key").read_text().strip())


def test_wake_prints_markdown_as_is_and_json_documents(live: Live, tmp_path: Path) -> None:
    home, profile = home_with_identity(live, tmp_path, "Woken")
    ok(run(["memory", "add", "The lighthouse at noon."], home))

    markdown = ok(run(["wake", "--format", "md", "--refresh"], home)).stdout
    with client_of(live, home) as client:
        expected = client.wake("md", identity_id=profile["identity_id"], refresh=True)
    undated = re.compile(r"Generated at \S+")
    assert undated.sub("", markdown) == undated.sub("", expected)  # byte for byte but the time
    assert "The lighthouse at noon." in markdown

    document = json.loads(ok(run(["wake"], home)).stdout)
    assert document["document"] == "hearth-wake/v1"
    assert document["focus"] == {"identity_id": profile["identity_id"], "rule": "named"}
    payload = json.loads(ok(run(["wake", "--format", "openai"], home)).stdout)
    assert payload["messages"][0]["role"] == "system"
    assert "hearth-wake/v1" in ok(run(["wake", "--format", "math"], home)).stdout

    assert run(["wake", "--format", "yaml"], home).exit_code == 2
    unknown = run(["wake", "--identity", str(uuid.uuid4())], home)
    assert unknown.exit_code == 1
    assert "not_found" in unknown.output


def test_voice_prints_each_event_on_its_line(live: Live, tmp_path: Path) -> None:
    home, profile = home_with_identity(live, tmp_path, "Heard")
    first = ok(run(["voice", "--count", "1"], home)).stdout.splitlines()
    assert len(first) == 1
    assert first[0].startswith("connected ")
    assert json.loads(first[0].split(" ", 1)[1])["identity_id"] == profile["identity_id"]

    results: list[Result] = []
    listener = threading.Thread(
        target=lambda: results.append(run(["voice", "--until-change", "--json"], home))
    )
    listener.start()
    with client_of(live, home) as writer:
        # Every mutation after `connected` is a change; write until the listener has heard one.
        for attempt in range(100):
            writer.memory_store(f"a word {attempt}", agent_id=profile["identity_id"])
            listener.join(0.1)
            if not listener.is_alive():
                break
    listener.join(10)
    assert not listener.is_alive()
    lines = [json.loads(line) for line in ok(results[0]).stdout.splitlines()]
    assert lines[0]["event"] == "connected"
    assert lines[-1]["event"] == "change"
    assert (lines[-1]["data"]["kind"], lines[-1]["data"]["identity_id"]) == (
        "memory_stored",
        profile["identity_id"],
    )

    refused = run(["voice", "--identity", str(uuid.uuid4()), "--count", "1"], home)
    assert refused.exit_code == 1
    assert "not_found" in refused.output
