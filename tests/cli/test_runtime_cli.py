"""``hearth runtime`` as a user runs it. ``run --once`` is a real process
(``python -m hearth.cli.runtime``) against the live service: the provider is called on the
user's side, through the vendors' official SDKs pointed at the fake LLM server, or through a
``--command``; the stored thought opens with the user's K_master and with no other; a provider
failure leaves the message pending. ``create``, ``list``, ``show`` and ``events`` through
typer's runner. On SQLite, and on PostgreSQL when SERVICE_TEST_DATABASE_URL is set."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from typer.testing import CliRunner

from hearth.adds.keys import private_key_pem
from hearth.cli.client_config import Profile, save_api_key, save_profile
from hearth.cli.runtime import app
from hearth.client import HearthClient
from hearth.client.mnemonic_keys import IdentityKeys, derive_keys, new_mnemonic
from hearth.proofs import b64_decode
from hearth.proofs.thoughts import ThoughtOpenError, open_thought
from tests.support.agents import Agent, register
from tests.support.fake_llm import FakeLlm, reply_text
from tests.support.live import Live, live_on
from tests.support.processes import as_background, finish, stop

WAIT_S = 30.0
API_KEY = "sk-user-own-key-0123456789"


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def live(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Live]:
    tmp = tmp_path_factory.mktemp(f"runtime_cli_{request.param}")
    with live_on(request.param, tmp) as service:
        yield service


@dataclass
class User:
    """A registered identity with a home (profile and bearer) and its words in a file."""

    live: Live
    home: Path
    words_file: Path
    mnemonic: str
    keys: IdentityKeys
    bearer: str
    identity_id: str

    def http(self) -> httpx2.Client:
        return self.live.client(self.bearer)

    def get(self, path: str, **params: Any) -> Any:
        with self.http() as client:
            response = client.get(path, params=params)
        assert response.status_code == 200, response.text
        return response.json()

    def send(self, body: str) -> str:
        with self.http() as client:
            response = client.post(
                f"/v1/identities/{self.identity_id}/inbox", json={"sender": "ada", "body": body}
            )
        assert response.status_code == 201, response.text
        message_id: str = response.json()["id"]
        return message_id

    def message(self, message_id: str) -> dict[str, Any]:
        items = self.get(f"/v1/identities/{self.identity_id}/inbox", limit=200)["items"]
        found: dict[str, Any] = next(m for m in items if m["id"] == message_id)
        return found

    def provision(self, **llm: str) -> str:
        args = ["create", "--name", "laptop", "--home", str(self.home), "--json"]
        for name, value in llm.items():
            args += [f"--{name}", value]
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 0, result.output
        created = json.loads(result.stdout)
        assert (created["mode"], created["identity_id"]) == ("self", self.identity_id)
        runtime_id: str = created["id"]
        return runtime_id

    def strand_thoughts(self, runtime_id: str) -> tuple[str, list[dict[str, Any]]]:
        [strand] = self.get("/v1/strands", runtime_id=runtime_id)["items"]
        return strand["id"], self.get(f"/v1/strands/{strand['id']}/thoughts")["items"]


@pytest.fixture
def user(live: Live, tmp_path: Path) -> User:
    mnemonic = new_mnemonic()
    keys = derive_keys(mnemonic)
    _, registered = register(live, Agent(keys.signing, keys.box))
    home = tmp_path / "home"
    profile = Profile(
        base_url=live.base_url,
        project_id=registered["project"]["id"],
        identity_id=registered["agent"]["id"],
        did=registered["agent"]["did"],
        name="Wren",
    )
    save_profile(home, profile)
    save_api_key(home, registered["project"]["api_key"])
    words = tmp_path / "words"
    words.write_text(mnemonic + "\n", encoding="utf-8")
    return User(
        live,
        home,
        words,
        mnemonic,
        keys,
        registered["project"]["api_key"],
        registered["agent"]["id"],
    )


def start(
    user: User,
    runtime_id: str,
    *args: str,
    env: dict[str, str] | None = None,
    background: bool = False,
) -> Any:
    command = [
        sys.executable,
        "-m",
        "hearth.cli.runtime",
        "run",
        "--runtime",
        runtime_id,
        "--home",
        str(user.home),
        "--mnemonic-file",
        str(user.words_file),
        *args,
    ]
    environment = {"PATH": "/usr/bin:/bin", "HOME": str(user.home.parent)}
    environment.update(env or {})
    return subprocess.Popen(
        as_background(command) if background else command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=user.home.parent,
        env=environment,
    )


def run_once(user: User, runtime_id: str, *args: str, **env: str) -> tuple[int, str]:
    process = start(user, runtime_id, "--once", "-v", *args, env=env)
    _, stderr = finish(process, WAIT_S)
    return process.returncode, stderr


def assert_no_secret(user: User, stderr: str, *plaintexts: str) -> None:
    for secret in (API_KEY, user.bearer, user.mnemonic.split()[0] + " ", *plaintexts):
        assert secret not in stderr


def opens_only_with_the_users_k_master(user: User, strand_id: str, thought: dict[str, Any]) -> Any:
    nonce, ciphertext = b64_decode(thought["nonce"]), b64_decode(thought["ciphertext"])
    stranger = derive_keys(new_mnemonic()).strand_master
    with pytest.raises(ThoughtOpenError):
        open_thought(stranger, strand_id, thought["seq"], nonce, ciphertext)
    plaintext = open_thought(user.keys.strand_master, strand_id, thought["seq"], nonce, ciphertext)
    return json.loads(plaintext)


@pytest.mark.parametrize(
    ("vendor", "model", "env_name"),
    [("anthropic", "claude-test", "ANTHROPIC_API_KEY"), ("openai", "gpt-test", "OPENAI_API_KEY")],
)
def test_run_once_thinks_through_the_vendor_sdk_on_the_users_side(
    user: User, fake: FakeLlm, vendor: str, model: str, env_name: str
) -> None:
    runtime_id = user.provision(provider=vendor, model=model)
    message_id = user.send("what do you keep?")
    before = fake.count(vendor)
    base_url = fake.anthropic_base_url if vendor == "anthropic" else fake.openai_base_url
    code, stderr = run_once(user, runtime_id, "--llm-base-url", base_url, **{env_name: API_KEY})
    assert code == 0, stderr
    assert "cycle done" in stderr
    assert fake.count(vendor) == before + 1
    assert fake.requests[-1].api_key == API_KEY  # the user's own key, from their environment

    assert user.message(message_id)["status"] == "done"
    strand_id, [thought] = user.strand_thoughts(runtime_id)
    assert thought["signing_key_id"] == "primary"
    stored = opens_only_with_the_users_k_master(user, strand_id, thought)
    assert stored["in_reply_to"] == message_id
    assert stored["reply"] == reply_text(model, "what do you keep?")
    assert (stored["provider"], stored["model"]) == (vendor, model)

    record = user.get(f"/v1/runtimes/{runtime_id}")
    assert record["status"] == "running"
    assert record["last_seen_at"] is not None
    assert record["last_thought_at"] is not None
    assert record["thought_count_24h"] == 1
    wake = user.get("/v1/wake", identity_id=user.identity_id, refresh="true")
    entry = next(r for r in wake["you_run"]["runtimes"] if r["id"] == runtime_id)
    assert entry["last_thought_at"] is not None
    assert entry["last_seen_at"] is not None
    assert_no_secret(user, stderr, "what do you keep?", stored["reply"])


def test_run_once_with_any_provider_as_a_command(user: User, tmp_path: Path) -> None:
    script = tmp_path / "echo_model.py"
    script.write_text(
        "import sys\n"
        "prompt = sys.stdin.read()\n"
        "assert prompt.startswith('You are the agent described by this wake document.')\n"
        "print('echo: ' + prompt.strip().splitlines()[-1])\n",
        encoding="utf-8",
    )
    runtime_id = user.provision(provider="my-local-model", model="tiny")
    message_id = user.send("say something")
    code, stderr = run_once(user, runtime_id, "--command", f"{sys.executable} {script}")
    assert code == 0, stderr
    assert user.message(message_id)["status"] == "done"
    strand_id, [thought] = user.strand_thoughts(runtime_id)
    stored = opens_only_with_the_users_k_master(user, strand_id, thought)
    assert stored["reply"] == "echo: say something"
    assert (stored["provider"], stored["model"]) == ("command", "tiny")
    assert_no_secret(user, stderr, "say something")

    # The second message's prompt carries the first exchange: the thought was opened here.
    script.write_text(
        "import sys\nprompt = sys.stdin.read()\n"
        "print('seen' if 'echo: say something' in prompt else 'not seen')\n",
        encoding="utf-8",
    )
    user.send("and again")
    code, stderr = run_once(user, runtime_id, "--command", f"{sys.executable} {script}")
    assert code == 0, stderr
    strand_id, thoughts = user.strand_thoughts(runtime_id)
    assert opens_only_with_the_users_k_master(user, strand_id, thoughts[1])["reply"] == "seen"


def test_a_provider_failure_leaves_the_message_pending(
    user: User, fake: FakeLlm, tmp_path: Path
) -> None:
    runtime_id = user.provision(provider="anthropic", model="claude-test")
    message_id = user.send("this will fail")
    fake.fail_next(500, 1)
    try:
        code, stderr = run_once(
            user,
            runtime_id,
            "--llm-base-url",
            fake.anthropic_base_url,
            "--llm-max-retries",
            "0",
            ANTHROPIC_API_KEY=API_KEY,
        )
    finally:
        fake.clear_failures()
    assert code == 1, stderr
    assert "stage=provider" in stderr
    assert "HTTP 500" in stderr
    assert user.message(message_id)["status"] == "pending"
    _, thoughts = user.strand_thoughts(runtime_id)
    assert thoughts == []
    events = user.get(f"/v1/runtimes/{runtime_id}/events")["items"]
    assert [e["event"] for e in events][-2:] == ["think_cycle_start", "think_cycle_error"]

    # A failing command is a provider failure too; then a working one completes the message.
    failing = tmp_path / "failing.py"
    failing.write_text("import sys\nsys.stdin.read()\nsys.exit(3)\n", encoding="utf-8")
    code, stderr = run_once(user, runtime_id, "--command", f"{sys.executable} {failing}")
    assert code == 1
    assert "exited with status 3" in stderr
    assert user.message(message_id)["status"] == "pending"
    code, stderr = run_once(
        user,
        runtime_id,
        "--llm-base-url",
        fake.anthropic_base_url,
        ANTHROPIC_API_KEY=API_KEY,
    )
    assert code == 0, stderr
    assert user.message(message_id)["status"] == "done"
    assert_no_secret(user, stderr, "this will fail")


def test_a_device_key_signs_and_nothing_waiting_exits_cleanly(user: User, tmp_path: Path) -> None:
    runtime_id = user.provision()
    code, stderr = run_once(user, runtime_id, "--command", "true")
    assert code == 0, stderr
    assert "processed 0 message(s), 0 failed" in stderr
    assert user.get(f"/v1/runtimes/{runtime_id}")["status"] == "running"

    # A registered device key instead of the root key (registration needs the root proof).
    device = Ed25519PrivateKey.generate()
    with HearthClient(user.live.base_url, api_key=user.bearer) as client:
        client.identity_key_register(user.identity_id, "desk-1", device, root_key=user.keys.signing)
    key_file = tmp_path / "desk.pem"
    key_file.write_bytes(private_key_pem(device))
    message_id = user.send("sign this with the desk key")
    script = tmp_path / "ok.py"
    script.write_text("import sys\nsys.stdin.read()\nprint('ok')\n", encoding="utf-8")
    code, stderr = run_once(
        user,
        runtime_id,
        "--command",
        f"{sys.executable} {script}",
        "--signing-key",
        str(key_file),
        "--kid",
        "desk-1",
    )
    assert code == 0, stderr
    assert user.message(message_id)["status"] == "done"
    _, [thought] = user.strand_thoughts(runtime_id)
    assert thought["signing_key_id"] == "desk-1"


@pytest.mark.parametrize("job", ["foreground", "background"])
def test_ctrl_c_stops_the_loop(user: User, tmp_path: Path, job: str) -> None:
    # In the background (SIGINT ignored from the start, as under `setsid make test &`) Ctrl-C
    # must stop the loop all the same: the loop sets its own handler instead of inheriting one.
    runtime_id = user.provision()
    script = tmp_path / "ok.py"
    script.write_text("import sys\nsys.stdin.read()\nprint('ok')\n", encoding="utf-8")
    process = start(
        user,
        runtime_id,
        "--command",
        f"{sys.executable} {script}",
        "--poll",
        "0.05",
        background=job == "background",
    )
    try:
        message_id = user.send("while you run")
        deadline = time.monotonic() + WAIT_S
        while user.message(message_id)["status"] != "done":
            assert process.poll() is None, process.communicate()[1]
            assert time.monotonic() < deadline, "the loop did not complete the message"
            time.sleep(0.05)
    finally:
        _, stderr = stop(process, signal.SIGINT, WAIT_S)
    assert process.returncode == 0, stderr
    assert "runtime loop stopped" in stderr


def test_list_show_events_and_usage_errors(user: User, live: Live) -> None:
    runtime_id = user.provision(provider="anthropic", model="claude-test")
    runner = CliRunner()
    home = ["--home", str(user.home)]
    listed = runner.invoke(app, ["list", *home, "--json"])
    assert listed.exit_code == 0, listed.output
    assert [r["id"] for r in json.loads(listed.stdout)] == [runtime_id]
    shown = runner.invoke(app, ["show", runtime_id, *home])
    assert shown.exit_code == 0, shown.output
    assert "status: provisioned" in shown.stdout
    assert f"id: {runtime_id}" in shown.stdout
    events = runner.invoke(app, ["events", runtime_id, *home, "--json"])
    assert events.exit_code == 0, events.output
    assert [e["event"] for e in json.loads(events.stdout)] == ["provisioned"]

    base = ["run", "--runtime", runtime_id, *home, "--mnemonic-file", str(user.words_file)]
    no_key = runner.invoke(app, base, env={"ANTHROPIC_API_KEY": ""})
    assert no_key.exit_code == 2
    assert "ANTHROPIC_API_KEY" in no_key.output
    half = runner.invoke(app, [*base, "--signing-key", str(user.words_file)])
    assert half.exit_code == 2
    assert "--signing-key and --kid go together" in half.output
    missing = runner.invoke(app, ["show", "00000000-0000-4000-8000-000000000000", *home])
    assert missing.exit_code == 1
    assert "not_found" in missing.output
    bad_words = user.home.parent / "bad-words"
    bad_words.write_text("one two three\n", encoding="utf-8")
    bad = ["run", "--runtime", runtime_id, *home, "--mnemonic-file", str(bad_words)]
    result = runner.invoke(app, [*bad, "--command", "true"])
    assert result.exit_code == 2
    assert "recovery words" in result.output
