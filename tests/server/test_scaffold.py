"""The credential scaffold: each platform's script rendered, and the bash ones run for real.

The Linux script (and the macOS one, against a fake ``security``) runs under ``bash`` in a
sandboxed HOME with a PATH of a few chosen tools only, so that whatever secret store this
machine has is never touched. A local HTTP server stands in for the service when ``wake.sh``
runs. PowerShell is not available here: the Windows script gets structural checks.
"""

from __future__ import annotations

import http.server
import json
import re
import secrets
import shutil
import stat
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from hearth.server.scaffold import (
    BEARER_ENV,
    CONTENT_TYPE,
    PLATFORMS,
    ScaffoldIdentity,
    render_scaffold,
)

PROJECT_ID = "0b9d6c1e-7f0a-4c55-9a51-3f0e2d7c8a41"
IDENTITY_ID = "5e2a8f47-1c3b-4d9e-8a6f-2b7c9d0e1f32"
DID = f"did:svc:{IDENTITY_ID}"
CREDENTIAL_NAME = f"hearth-{PROJECT_ID}"
BASE = "https://hearth.example"
UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")

BASH = shutil.which("bash")
CURL = shutil.which("curl")
needs_bash = pytest.mark.skipif(BASH is None, reason="bash is not installed")
needs_curl = pytest.mark.skipif(CURL is None, reason="curl is not installed")

# The tools the scripts may run; touch is there so that an injected `touch` would work.
TOOLS = ("bash", "cat", "mkdir", "chmod", "rm", "curl", "touch")


def identity(name: str = "Ada") -> ScaffoldIdentity:
    return ScaffoldIdentity(id=IDENTITY_ID, did=DID, name=name)


def hostile_name(markers: Path) -> str:
    """A display name trying every way out of a shell or PowerShell string."""
    return (
        f"a'b\"c $(touch {markers}/subst) `touch {markers}/backtick` "
        f"$(printf x > {markers}/builtin) ${{HOME}} \\ \\\" '\"'\"' \n newline ünï \r\n"
        f"HEARTH_JSON_EOF\nHEARTH_WAKE_EOF\n'@\n@'\n$(touch {markers}/ps)\u2028\x00\x1b[31m 😀"
    )


def bearer() -> str:
    return "hrt_" + secrets.token_urlsafe(32)


def agent_document(base_url: str, name: str, credential: dict[str, str]) -> dict[str, object]:
    return {
        "base_url": base_url,
        "project_id": PROJECT_ID,
        "identity_id": IDENTITY_ID,
        "did": DID,
        "name": name,
        "credential": credential,
    }


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def heredoc(script: str, delimiter: str) -> list[str]:
    """The bodies of the quoted heredocs ending at ``delimiter``."""
    return re.findall(rf"<<'{delimiter}'\n(.*?)\n{delimiter}\n", script, flags=re.DOTALL)


def here_strings(script: str) -> list[str]:
    """The bodies of the single-quoted PowerShell here-strings."""
    return re.findall(r"@'\n(.*?)\n'@", script, flags=re.DOTALL)


def shell_commands(script: str) -> list[str]:
    """The script's commands, one per logical line: heredoc bodies and comments dropped,
    continuation lines joined, pipelines and lists split into their commands."""
    lines: list[str] = []
    ending: str | None = None
    for line in script.split("\n"):
        if ending is not None:
            if line == ending:
                ending = None
            continue
        opened = re.search(r"<<'([A-Z_]+)'", line)
        if opened:
            ending = opened.group(1)
        if line.lstrip().startswith("#"):
            continue
        lines.append(line)
    joined = "\n".join(lines).replace("\\\n", " ")
    commands: list[str] = []
    for line in joined.split("\n"):
        commands.extend(stage.strip() for stage in re.split(r"(?<![|;])[|;](?![|;])", line))
    return [command for command in commands if command]


def first_word(command: str) -> str:
    words = command.split()
    while words and words[0] in ("if", "elif", "then", "!", "while"):
        words = words[1:]
    return words[0] if words else ""


# --- the local sandbox --------------------------------------------------------------------------


class Sandbox:
    """A HOME, a PATH of chosen tools and a markers directory an injection would write to."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.home = root / "home"
        self.bin = root / "bin"
        self.markers = root / "markers"
        self.log = root / "log"
        for directory in (self.home, self.bin, self.markers, self.log):
            directory.mkdir()
        for tool in TOOLS:
            real = shutil.which(tool)
            if real is not None:
                (self.bin / tool).symlink_to(real)
        assert not (self.bin / "secret-tool").exists()

    def env(self, key: str | None, **extra: str) -> dict[str, str]:
        env = {"PATH": str(self.bin), "HOME": str(self.home), **extra}
        if key is not None:
            env[BEARER_ENV] = key
        return env

    def fake(self, name: str, body: str) -> None:
        """An executable ``name`` on the sandbox PATH, written in bash."""
        path = self.bin / name
        path.write_text(f"#!{BASH}\nset -eu\nlog={self.log}\n{body}")
        path.chmod(0o755)

    def run(self, script: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        """``bash install-hearth.sh`` with ``script`` as the file."""
        assert BASH is not None
        path = self.root / "install-hearth.sh"
        path.write_text(script)
        return self.execute([BASH, str(path)], env)

    def execute(
        self, command: list[str], env: dict[str, str], cwd: Path | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            command,
            check=False,
            env=env,
            cwd=cwd or self.root,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
        )


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    return Sandbox(tmp_path)


# A fake secret-tool: records each call's arguments (one per line, then "--") and what a store
# reads on standard input; a lookup prints what was stored.
FAKE_SECRET_TOOL = """\
printf '%s\\n' "$@" -- >> "$log/secret-tool.argv"
case "$1" in
  store) cat > "$log/secret-tool.stdin" ;;
  lookup) cat "$log/secret-tool.stdin" ;;
esac
"""

# A fake macOS security: `-i` reads commands on standard input and keeps the value given to
# -w (as `security` splits the line: the double quotes are removed); find-generic-password
# prints it back.
FAKE_SECURITY = """\
if [ "$1" = -i ]; then
  while IFS= read -r line; do
    printf '%s\\n' "$line" >> "$log/security.stdin"
    value="${line##*-w \\"}"
    printf '%s' "${value%\\"}" > "$log/security.stored"
  done
  exit 0
fi
printf '%s\\n' "$@" -- >> "$log/security.argv"
case "$1" in
  find-generic-password) cat "$log/security.stored" ;;
  *) exit 2 ;;
esac
"""


class RecordingServer(http.server.ThreadingHTTPServer):
    seen: list[tuple[str, dict[str, str]]]
    status: int


class RecordingHandler(http.server.BaseHTTPRequestHandler):
    server: RecordingServer
    body = b'{"wake": "hello"}'

    def do_GET(self) -> None:
        self.server.seen.append((self.path, dict(self.headers.items())))
        self.send_response(self.server.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def service() -> Iterator[RecordingServer]:
    server = RecordingServer(("127.0.0.1", 0), RecordingHandler)
    server.seen = []
    server.status = 200
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def service_url(server: RecordingServer) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}"


# --- rendering ----------------------------------------------------------------------------------

EXPECTED = {
    "linux": (
        "install-hearth.sh",
        f"${{XDG_CONFIG_HOME:-$HOME/.config}}/hearth/{PROJECT_ID}",
        ["agent.json", "wake.sh"],
    ),
    "macos": (
        "install-hearth.sh",
        f"$HOME/Library/Application Support/hearth/{PROJECT_ID}",
        ["agent.json", "wake.sh"],
    ),
    "windows": (
        "install-hearth.ps1",
        f"$env:APPDATA\\hearth\\{PROJECT_ID}",
        ["agent.json", "wake.ps1"],
    ),
}


@pytest.mark.parametrize("platform", PLATFORMS)
def test_scaffold_fields_and_json_form(platform: str) -> None:
    scaffold = render_scaffold(
        platform, base_url=BASE + "/", project_id=PROJECT_ID, identity=identity()
    )
    filename, config_dir, files = EXPECTED[platform]
    assert scaffold.platform == platform
    assert scaffold.filename == filename
    assert scaffold.content_type == CONTENT_TYPE == "text/x-shellscript"
    assert scaffold.config_dir == config_dir
    assert scaffold.credential_name == CREDENTIAL_NAME
    assert scaffold.files == files
    document = scaffold.as_json()
    assert json.loads(json.dumps(document)) == document
    assert set(document) == {
        "platform",
        "filename",
        "content_type",
        "config_dir",
        "credential_name",
        "files",
        "script",
        "env",
        "usage",
        "notes",
    }
    assert document["script"] == scaffold.script
    assert document["files"] == files
    assert document["content_type"] == "text/x-shellscript"
    env = document["env"]
    assert isinstance(env, dict)
    assert list(env) == ["SERVICE_API_KEY"]
    assert "never contains it" in env["SERVICE_API_KEY"]
    usage = document["usage"]
    assert isinstance(usage, str)
    assert filename in usage
    assert "SERVICE_API_KEY" in usage
    assert "\n" not in usage
    assert document["notes"]


@pytest.mark.parametrize("platform", PLATFORMS)
def test_script_content(platform: str) -> None:
    script = render_scaffold(
        platform, base_url=BASE, project_id=PROJECT_ID, identity=identity()
    ).script
    assert script.isascii()
    assert "\r" not in script
    assert BEARER_ENV in script
    assert CREDENTIAL_NAME in script
    assert IDENTITY_ID in script
    assert f"{BASE}" in script
    if platform == "windows":
        for expected in (
            "$ErrorActionPreference = 'Stop'",
            "[Windows.Security.Credentials.PasswordVault, Windows.Security.Credentials, "
            "ContentType = WindowsRuntime]",
            "$env:SERVICE_API_KEY",
            "$env:APPDATA",
            "'wake.ps1'",
            "'agent.json'",
            "Invoke-RestMethod",
        ):
            assert expected in script
    else:
        assert script.startswith(
            "#!/usr/bin/env bash\n" if platform == "linux" else "#!/bin/bash\n"
        )
        assert "set -euo pipefail\numask 077\n" in script
        assert 'chmod 600 "$config_dir/agent.json"' in script
        assert 'chmod 700 "$config_dir/wake.sh"' in script
        if platform == "linux":
            assert "secret-tool store" in script
            assert "secret-tool lookup" in script
            assert 'chmod 600 "$key_file"' in script
            assert "${XDG_CONFIG_HOME:-}" in script
        else:
            assert "add-generic-password -U -s %s -a %s -w" in script
            assert "security -i" in script
            assert "security find-generic-password" in script
            assert 'config_dir="$HOME/Library/Application Support/hearth/$project_id"' in script


@pytest.mark.parametrize("platform", PLATFORMS)
def test_script_holds_no_bearer(platform: str, monkeypatch: pytest.MonkeyPatch) -> None:
    sentinel = bearer()
    monkeypatch.setenv(BEARER_ENV, sentinel)  # the renderer must never read it
    scaffold = render_scaffold(platform, base_url=BASE, project_id=PROJECT_ID, identity=identity())
    text = json.dumps(scaffold.as_json())
    assert sentinel not in text
    # Every "Bearer" is followed by a variable or a format, never by a value.
    for after in re.findall(r"Bearer (\S+)", scaffold.script):
        assert after.startswith(("%s", "$Key")), after
    # Nothing long and opaque, once the UUIDs are set aside.
    opaque = re.findall(r"[A-Za-z0-9_+/=-]{32,}", UUID_RE.sub("", scaffold.script))
    assert opaque == []


def test_identifiers_are_normalized() -> None:
    upper = ScaffoldIdentity(id=IDENTITY_ID.upper(), did="did:svc:" + IDENTITY_ID.upper(), name="x")
    scaffold = render_scaffold(
        "linux",
        base_url="http://[::1]:8080/hearth//",
        project_id=PROJECT_ID.upper(),
        identity=upper,
    )
    assert scaffold.credential_name == CREDENTIAL_NAME
    documents = [json.loads(body) for body in heredoc(scaffold.script, "HEARTH_JSON_EOF")]
    assert len(documents) == 2
    for document in documents:
        assert document["project_id"] == PROJECT_ID
        assert document["identity_id"] == IDENTITY_ID
        assert document["did"] == DID
        assert document["base_url"] == "http://[::1]:8080/hearth"
    assert "base_url='http://[::1]:8080/hearth'" in scaffold.script


# --- validation ---------------------------------------------------------------------------------


@pytest.mark.parametrize("platform", ["freebsd", "Linux", "", "linux "])
def test_unknown_platform(platform: str) -> None:
    with pytest.raises(ValueError, match="platform"):
        render_scaffold(platform, base_url=BASE, project_id=PROJECT_ID, identity=identity())


BAD_UUIDS = [
    "not-a-uuid",
    "",
    "../../etc/passwd",
    PROJECT_ID.replace("-", ""),
    "{" + PROJECT_ID + "}",
    "urn:uuid:" + PROJECT_ID,
    PROJECT_ID + "\n",
    PROJECT_ID + "'; rm -rf ~; '",
    PROJECT_ID[:-1] + "g",
]


@pytest.mark.parametrize("project_id", BAD_UUIDS)
def test_project_id_must_be_a_uuid(project_id: str) -> None:
    with pytest.raises(ValueError, match="project_id"):
        render_scaffold("linux", base_url=BASE, project_id=project_id, identity=identity())


@pytest.mark.parametrize("identity_id", BAD_UUIDS)
def test_identity_id_must_be_a_uuid(identity_id: str) -> None:
    bad = ScaffoldIdentity(id=identity_id, did=DID, name="x")
    with pytest.raises(ValueError, match="identity id"):
        render_scaffold("macos", base_url=BASE, project_id=PROJECT_ID, identity=bad)


@pytest.mark.parametrize(
    "did",
    [
        "did:svc:not-a-uuid",
        f"did:web:{IDENTITY_ID}",
        IDENTITY_ID,
        f"did:svc:{IDENTITY_ID}\n",
        f"did:svc:{IDENTITY_ID}'",
        f"did:svc:{IDENTITY_ID}$(id)",
        f" did:svc:{IDENTITY_ID}",
    ],
)
def test_did_must_be_svc(did: str) -> None:
    bad = ScaffoldIdentity(id=IDENTITY_ID, did=did, name="x")
    with pytest.raises(ValueError, match="did"):
        render_scaffold("windows", base_url=BASE, project_id=PROJECT_ID, identity=bad)


@pytest.mark.parametrize(
    "base_url",
    [
        "ftp://hearth.example",
        "hearth.example",
        "https://",
        "https:///path",
        "https://hearth example",
        "https://hearth.example/a b",
        "https://hearth.example'",
        'https://hearth.example"',
        "https://hearth.example/`id`",
        "https://hearth.example/$(id)",
        "https://hearth.example/;id",
        "https://hearth.example\\x",
        "https://hearth.example\n",
        "https://hearth.example\t",
        "https://hearth.example\x00",
        "https://hearth.example?x=1",
        "https://hearth.example#top",
        "https://user:pw@hearth.example",
        "https://hearth.example:port",
        "https://ünï.example",
        "javascript:alert(1)",
        "https://" + "a" * 2100,
    ],
)
@pytest.mark.parametrize("platform", PLATFORMS)
def test_base_url_must_be_plain_http(platform: str, base_url: str) -> None:
    with pytest.raises(ValueError, match="base_url"):
        render_scaffold(platform, base_url=base_url, project_id=PROJECT_ID, identity=identity())


# --- linux, for real ----------------------------------------------------------------------------


def linux_config(sandbox: Sandbox) -> Path:
    return sandbox.home / ".config" / "hearth" / PROJECT_ID


@needs_bash
def test_linux_install_falls_back_to_a_key_file(sandbox: Sandbox) -> None:
    name = hostile_name(sandbox.markers)
    script = render_scaffold(
        "linux", base_url=BASE, project_id=PROJECT_ID, identity=identity(name)
    ).script
    key = bearer()
    result = sandbox.run(script, sandbox.env(key))
    assert result.returncode == 0, result.stderr

    config = linux_config(sandbox)
    assert sorted(p.name for p in config.iterdir()) == ["agent.json", "api_key", "wake.sh"]
    agent = json.loads((config / "agent.json").read_text())
    credential = {"store": "file", "name": CREDENTIAL_NAME, "path": "api_key"}
    assert agent == agent_document(BASE, name, credential)
    assert agent["name"] == name
    assert (config / "api_key").read_bytes() == key.encode()
    assert mode(config / "api_key") == 0o600
    assert mode(config / "agent.json") == 0o600
    assert mode(config / "wake.sh") == 0o700
    assert mode(config) == 0o700
    assert list(sandbox.markers.iterdir()) == []  # no injection ran
    assert key not in result.stdout + result.stderr
    assert str(config / "wake.sh") in result.stdout
    assert "api_key" in result.stdout


@needs_bash
@pytest.mark.parametrize("xdg", ["absolute", "relative", "empty"])
def test_linux_config_dir_follows_xdg(sandbox: Sandbox, xdg: str) -> None:
    script = render_scaffold(
        "linux", base_url=BASE, project_id=PROJECT_ID, identity=identity()
    ).script
    chosen = sandbox.root / "xdg"
    value = {"absolute": str(chosen), "relative": "xdg", "empty": ""}[xdg]
    result = sandbox.run(script, sandbox.env(bearer(), XDG_CONFIG_HOME=value))
    assert result.returncode == 0, result.stderr
    config = chosen / "hearth" / PROJECT_ID if xdg == "absolute" else linux_config(sandbox)
    assert (config / "agent.json").is_file()


@needs_bash
@pytest.mark.parametrize(
    "key", [None, "", "two words", "line\nbreak", 'quo"te', "semi;colon", "\u00fcnicode"]
)
def test_linux_install_refuses_without_a_bearer(sandbox: Sandbox, key: str | None) -> None:
    script = render_scaffold(
        "linux", base_url=BASE, project_id=PROJECT_ID, identity=identity()
    ).script
    result = sandbox.run(script, sandbox.env(key))
    assert result.returncode == 1
    assert "SERVICE_API_KEY" in result.stderr
    assert list(sandbox.home.iterdir()) == []  # nothing written


@needs_bash
def test_linux_install_stores_in_the_secret_service_over_stdin(sandbox: Sandbox) -> None:
    sandbox.fake("secret-tool", FAKE_SECRET_TOOL)
    name = hostile_name(sandbox.markers)
    script = render_scaffold(
        "linux", base_url=BASE, project_id=PROJECT_ID, identity=identity(name)
    ).script
    key = bearer()
    config = linux_config(sandbox)
    config.mkdir(parents=True)
    (config / "api_key").write_text("a stale key file from an earlier install")

    result = sandbox.run(script, sandbox.env(key, DBUS_SESSION_BUS_ADDRESS="unix:path=/nowhere"))
    assert result.returncode == 0, result.stderr

    assert (sandbox.log / "secret-tool.stdin").read_text() == key
    calls = (sandbox.log / "secret-tool.argv").read_text()
    assert key not in calls
    store, lookup = (call.strip("\n").split("\n") for call in calls.split("--\n")[:2])
    assert store == [
        "store",
        f"--label=hearth {PROJECT_ID} ({IDENTITY_ID})",
        "service",
        CREDENTIAL_NAME,
        "account",
        IDENTITY_ID,
    ]
    assert lookup == ["lookup", "service", CREDENTIAL_NAME, "account", IDENTITY_ID]
    assert sorted(p.name for p in config.iterdir()) == ["agent.json", "wake.sh"]  # no key file
    agent = json.loads((config / "agent.json").read_text())
    credential = {"store": "secret-service", "name": CREDENTIAL_NAME}
    assert agent == agent_document(BASE, name, credential)
    assert list(sandbox.markers.iterdir()) == []
    assert key not in result.stdout + result.stderr


@needs_bash
@pytest.mark.parametrize("failure", ["store fails", "lookup differs", "no bus"])
def test_linux_install_falls_back_when_the_secret_service_fails(
    sandbox: Sandbox, failure: str
) -> None:
    if failure == "store fails":
        sandbox.fake("secret-tool", "printf 'no keyring\\n' >&2\nexit 1\n")
    elif failure == "lookup differs":
        sandbox.fake(
            "secret-tool", 'if [ "$1" = store ]; then cat > /dev/null; else printf other; fi\n'
        )
    else:
        sandbox.fake("secret-tool", 'touch "$log/called"\n')
    env = (
        sandbox.env(bearer())
        if failure == "no bus"
        else sandbox.env(bearer(), DBUS_SESSION_BUS_ADDRESS="x")
    )
    script = render_scaffold(
        "linux", base_url=BASE, project_id=PROJECT_ID, identity=identity()
    ).script
    result = sandbox.run(script, env)
    assert result.returncode == 0, result.stderr
    config = linux_config(sandbox)
    assert (config / "api_key").read_text() == env[BEARER_ENV]
    assert json.loads((config / "agent.json").read_text())["credential"]["store"] == "file"
    if failure == "no bus":
        assert not (sandbox.log / "called").exists()
    else:
        assert "key file" in result.stderr


# --- wake.sh, for real --------------------------------------------------------------------------


@needs_bash
@needs_curl
@pytest.mark.parametrize("store", ["file", "secret-service"])
@pytest.mark.parametrize("invocation", ["path", "./wake.sh", "bash wake.sh"])
def test_wake_sends_the_bearer(
    sandbox: Sandbox, service: RecordingServer, store: str, invocation: str
) -> None:
    extra: dict[str, str] = {}
    if store == "secret-service":
        sandbox.fake("secret-tool", FAKE_SECRET_TOOL)
        extra["DBUS_SESSION_BUS_ADDRESS"] = "unix:path=/nowhere"
    base_url = service_url(service)
    name = hostile_name(sandbox.markers)
    script = render_scaffold(
        "linux", base_url=base_url, project_id=PROJECT_ID, identity=identity(name)
    ).script
    key = bearer()
    assert sandbox.run(script, sandbox.env(key, **extra)).returncode == 0
    config = linux_config(sandbox)
    assert json.loads((config / "agent.json").read_text())["credential"]["store"] == store

    env = sandbox.env(None, **extra)  # wake.sh needs no SERVICE_API_KEY: it reads the store
    assert BASH is not None
    command = {
        "path": [str(config / "wake.sh")],
        "./wake.sh": ["./wake.sh"],
        "bash wake.sh": [BASH, "wake.sh"],
    }[invocation]
    result = sandbox.execute([*command, "-H", "X-Extra: passed through"], env, cwd=config)
    assert result.returncode == 0, result.stderr
    assert result.stdout == RecordingHandler.body.decode()
    ((path, headers),) = service.seen
    assert path == f"/v1/wake?identity_id={IDENTITY_ID}"
    assert headers["Authorization"] == f"Bearer {key}"
    assert headers["X-Extra"] == "passed through"
    assert list(sandbox.markers.iterdir()) == []


@needs_bash
@needs_curl
def test_wake_fails_when_the_service_refuses(sandbox: Sandbox, service: RecordingServer) -> None:
    service.status = 401
    base_url = service_url(service)
    script = render_scaffold(
        "linux", base_url=base_url, project_id=PROJECT_ID, identity=identity()
    ).script
    assert sandbox.run(script, sandbox.env(bearer())).returncode == 0
    result = sandbox.execute([str(linux_config(sandbox) / "wake.sh")], sandbox.env(None))
    assert result.returncode == 22  # curl -f: an HTTP error
    assert len(service.seen) == 1


@needs_bash
def test_wake_refuses_without_a_stored_bearer(sandbox: Sandbox) -> None:
    script = render_scaffold(
        "linux", base_url=BASE, project_id=PROJECT_ID, identity=identity()
    ).script
    assert sandbox.run(script, sandbox.env(bearer())).returncode == 0
    config = linux_config(sandbox)
    (config / "api_key").unlink()
    result = sandbox.execute([str(config / "wake.sh")], sandbox.env(None))
    assert result.returncode == 1
    assert "run the install script again" in result.stderr


@pytest.mark.parametrize("platform", ["linux", "macos"])
def test_bearer_never_reaches_an_external_command_line(platform: str) -> None:
    """Structural: wherever the bearer (or the key read back) is mentioned, the command is a
    shell builtin; it reaches secret-tool, security and curl only through a pipe."""
    script = render_scaffold(
        platform, base_url=BASE, project_id=PROJECT_ID, identity=identity()
    ).script
    (wake,) = heredoc(script, "HEARTH_WAKE_EOF")
    builtins = {"printf", "[", "case"}
    for text, variable in ((script, "SERVICE_API_KEY"), (wake, "key")):
        mentioning = [c for c in shell_commands(text) if re.search(rf"\${{?{variable}\b", c)]
        assert mentioning
        for command in mentioning:
            assert first_word(command) in builtins or command.startswith(f"{variable}="), command
    curl = [c for c in shell_commands(wake) if first_word(c) == "curl"]
    assert curl == ['curl -fsS -H @- "$base_url/v1/wake?identity_id=$identity_id" "$@"']
    assert "printf 'Authorization: Bearer %s\\n' \"$key\"" in shell_commands(wake)
    store = [c for c in shell_commands(script) if re.match(r"(secret-tool store|security -i)", c)]
    assert len(store) == 1
    assert "SERVICE_API_KEY" not in store[0]


@needs_bash
@pytest.mark.parametrize("platform", ["linux", "macos"])
def test_scripts_parse(platform: str, tmp_path: Path) -> None:
    assert BASH is not None
    script = render_scaffold(
        platform, base_url=BASE, project_id=PROJECT_ID, identity=identity()
    ).script
    (wake,) = heredoc(script, "HEARTH_WAKE_EOF")
    for name, text in (("install-hearth.sh", script), ("wake.sh", wake)):
        path = tmp_path / name
        path.write_text(text)
        result = subprocess.run(
            [BASH, "-n", str(path)], check=False, capture_output=True, text=True, timeout=30
        )
        assert result.returncode == 0, result.stderr


# --- macos, against a fake security --------------------------------------------------------------


def macos_config(sandbox: Sandbox) -> Path:
    return sandbox.home / "Library" / "Application Support" / "hearth" / PROJECT_ID


@needs_bash
@needs_curl
def test_macos_install_feeds_the_keychain_on_stdin(
    sandbox: Sandbox, service: RecordingServer
) -> None:
    sandbox.fake("security", FAKE_SECURITY)
    name = hostile_name(sandbox.markers)
    base_url = service_url(service)
    script = render_scaffold(
        "macos", base_url=base_url, project_id=PROJECT_ID, identity=identity(name)
    ).script
    key = bearer()
    result = sandbox.run(script, sandbox.env(key))
    assert result.returncode == 0, result.stderr

    commands = (sandbox.log / "security.stdin").read_text()
    assert commands == f'add-generic-password -U -s {CREDENTIAL_NAME} -a {IDENTITY_ID} -w "{key}"\n'
    argv = (sandbox.log / "security.argv").read_text()
    assert key not in argv
    assert argv == "\n".join(
        ["find-generic-password", "-s", CREDENTIAL_NAME, "-a", IDENTITY_ID, "-w", "--", ""]
    )
    config = macos_config(sandbox)
    assert sorted(p.name for p in config.iterdir()) == ["agent.json", "wake.sh"]
    agent = json.loads((config / "agent.json").read_text())
    assert agent == agent_document(base_url, name, {"store": "keychain", "name": CREDENTIAL_NAME})
    assert mode(config / "agent.json") == 0o600
    assert mode(config / "wake.sh") == 0o700
    assert list(sandbox.markers.iterdir()) == []
    assert key not in result.stdout + result.stderr

    wake = sandbox.execute([str(config / "wake.sh")], sandbox.env(None))
    assert wake.returncode == 0, wake.stderr
    ((path, headers),) = service.seen
    assert path == f"/v1/wake?identity_id={IDENTITY_ID}"
    assert headers["Authorization"] == f"Bearer {key}"


@needs_bash
def test_macos_install_fails_when_the_keychain_keeps_nothing(sandbox: Sandbox) -> None:
    sandbox.fake("security", 'if [ "$1" = -i ]; then cat > /dev/null; exit 0; fi\nexit 44\n')
    script = render_scaffold(
        "macos", base_url=BASE, project_id=PROJECT_ID, identity=identity()
    ).script
    result = sandbox.run(script, sandbox.env(bearer()))
    assert result.returncode == 1
    assert "keychain" in result.stderr
    assert not (macos_config(sandbox) / "agent.json").exists()


@needs_bash
@pytest.mark.parametrize("key", [None, "", "x" * 2049, 'a"b', "a\\b"])
def test_macos_install_refuses_bad_bearers(sandbox: Sandbox, key: str | None) -> None:
    sandbox.fake("security", 'touch "$log/called"\n')
    script = render_scaffold(
        "macos", base_url=BASE, project_id=PROJECT_ID, identity=identity()
    ).script
    result = sandbox.run(script, sandbox.env(key))
    assert result.returncode == 1
    assert "SERVICE_API_KEY" in result.stderr
    assert list(sandbox.home.iterdir()) == []
    assert not (sandbox.log / "called").exists()


# --- windows, structurally ----------------------------------------------------------------------


def test_windows_script_embeds_the_name_only_as_literal_json(tmp_path: Path) -> None:
    name = hostile_name(tmp_path)
    script = render_scaffold(
        "windows", base_url=BASE, project_id=PROJECT_ID, identity=identity(name)
    ).script
    bodies = here_strings(script)
    assert len(bodies) == 3  # the vault snippet, agent.json and wake.ps1
    documents = [json.loads(body) for body in bodies if body.startswith("{")]
    assert documents == [
        agent_document(BASE, name, {"store": "password-vault", "name": CREDENTIAL_NAME})
    ]
    for body in bodies:
        assert not any(line.startswith("'@") for line in body.split("\n"))
    # Outside the here-strings, nothing of the name is left.
    outside = re.sub(r"@'\n.*?\n'@", "", script, flags=re.DOTALL)
    assert "touch" not in outside
    assert "HEARTH_JSON_EOF" not in outside


def test_windows_script_keeps_the_bearer_off_command_lines() -> None:
    script = render_scaffold(
        "windows", base_url=BASE, project_id=PROJECT_ID, identity=identity()
    ).script
    code = [line.strip() for line in script.split("\n") if not line.lstrip().startswith("#")]
    mentioning = [line for line in code if "SERVICE_API_KEY" in line and "Stop-Hearth" not in line]
    assert mentioning == [
        "$Key = $env:SERVICE_API_KEY",
        "-ArgumentList $resource, $user, $env:SERVICE_API_KEY",  # a .NET constructor, in process
    ]
    # Under PowerShell 7 the snippet runs in Windows PowerShell, which inherits the environment.
    assert "= & $windowsPowerShell -NoProfile -NonInteractive -EncodedCommand $encoded\n" in script
    (wake,) = [body for body in here_strings(script) if "Invoke-RestMethod" in body]
    header = '-Headers @{ Authorization = "Bearer $Key" }'
    assert f"Invoke-RestMethod -UseBasicParsing -Uri $Uri {header} @args" in wake
    assert '$Uri = "$BaseUrl/v1/wake?identity_id=$IdentityId"' in wake
    assert f"$BaseUrl = '{BASE}'" in wake
    assert "$Key = Invoke-HearthVault $ReadVault" in wake
    assert ".Retrieve($resource, $user)" in wake
    assert "$env:SERVICE_API_KEY" not in wake


def test_windows_quotes_every_value() -> None:
    script = render_scaffold(
        "windows", base_url=BASE, project_id=PROJECT_ID, identity=identity()
    ).script
    assert f"$ProjectId = '{PROJECT_ID}'" in script
    assert f"$IdentityId = '{IDENTITY_ID}'" in script
    assert f"$CredentialName = '{CREDENTIAL_NAME}'" in script
    assert f"$resource = '{CREDENTIAL_NAME}'" in script
    assert f"$user = '{IDENTITY_ID}'" in script
    assert "if ($Key -cnotmatch '^[A-Za-z0-9._~+/-]+=*$')" in script
