"""Local credential scaffolding: the install script ``GET /v1/bootstrap/scaffold`` hands out.

:func:`render_scaffold` writes, for one identity of one project, a script that an operator runs
on the machine where the agent lives (bash on Linux and macOS, PowerShell on Windows). The
script stores the project bearer in the operating system's credential store under a
project-specific name (``hearth-<project_id>``), then writes, in a per-user configuration
directory, a project-namespaced ``agent.json`` and a wake helper (``wake.sh``, or ``wake.ps1``
on Windows) that reads the bearer back from the store and fetches the identity's wake document.

The bearer is never an input here, so it can never appear in the generated text. A script is
a file: it is downloaded, saved, pasted into tickets and read over shoulders, and anything
written in it is as good as published. The script instead reads the bearer at run time from
the environment variable ``SERVICE_API_KEY``, which the operator exports, and passes it to the
store on standard input, never on a command line (the arguments of a process are visible to
every local user through ``ps``).

Everything spliced into the scripts as code is validated to a strict shape here, and quoted
all the same: project and identity ids are UUIDs, the DID is ``did:svc:<uuid>``, the base URL
is a plain http(s) URL of host, port and path, in characters that mean nothing to a shell or
to PowerShell (anything else is a :class:`ValueError`). The identity's display name is
untrusted user text and is never spliced into code at all: it only travels inside
``agent.json``, serialized with ``json.dumps(ensure_ascii=True)`` (ASCII, every control
character escaped, so no raw newline) and embedded in a quoted heredoc (``<<'HEARTH_JSON_EOF'``,
in which the shell expands nothing) or a single-quoted PowerShell here-string (``@' ... '@``,
likewise literal). The only way out of either is a line equal to the delimiter (or starting
with ``'@``), which a JSON text never has; the renderer checks anyway.

Nothing here imports web code: the route turns a :class:`Scaffold` into a response.
"""

from __future__ import annotations

import json
import re
import shlex
import uuid
from dataclasses import dataclass, field
from urllib.parse import urlsplit

__all__ = [
    "BEARER_ENV",
    "CONTENT_TYPE",
    "PLATFORMS",
    "Scaffold",
    "ScaffoldIdentity",
    "render_scaffold",
]

PLATFORMS = ("linux", "macos", "windows")

BEARER_ENV = "SERVICE_API_KEY"
"""The environment variable the scripts read the project bearer from."""

CONTENT_TYPE = "text/x-shellscript"
"""The content type of script output, for every platform (as the specification names it)."""

ENV_HELP = {
    BEARER_ENV: (
        "export your project bearer in this variable before running; the script never contains it"
    )
}

_UUID_RE = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
)
_DID_RE = re.compile(r"did:svc:(" + _UUID_RE.pattern + r")")
# A base URL is scheme, host (a name, or an IP literal in brackets), port and path: the RFC 3986
# unreserved characters, ":", "/", "[", "]" and percent escapes. Nothing else is needed, and
# leaving out the sub-delimiters keeps out every character that means something to a shell or
# to PowerShell ($ ( ) ; & ' and friends), along with spaces, quotes, backslashes and controls.
# There is no "?", "#" or "@": a base URL has no query, fragment or user info.
_BASE_URL_RE = re.compile(r"https?://[A-Za-z0-9\-._~:/\[\]%]+")
_BASE_URL_MAX = 2048

_SH_JSON_EOF = "HEARTH_JSON_EOF"
_SH_WAKE_EOF = "HEARTH_WAKE_EOF"

# A bearer credential is an RFC 6750 b64token. The scripts refuse anything else, which also
# keeps it free of whitespace, quotes and newlines on its way to the stores and into the
# Authorization header.
_SH_NOT_TOKEN = "*[!A-Za-z0-9._~+/=-]*"
_PS_TOKEN = "^[A-Za-z0-9._~+/-]+=*$"


@dataclass(frozen=True)
class ScaffoldIdentity:
    """The identity a scaffold is for. ``name`` is untrusted user text."""

    id: str
    did: str
    name: str


@dataclass(frozen=True)
class Scaffold:
    """A generated install script and what it does, for the route to serve."""

    platform: str
    filename: str
    content_type: str
    script: str
    config_dir: str
    credential_name: str
    files: list[str]
    notes: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, object]:
        """The JSON form of the scaffold (the route's default ``format``)."""
        return {
            "platform": self.platform,
            "filename": self.filename,
            "content_type": self.content_type,
            "config_dir": self.config_dir,
            "credential_name": self.credential_name,
            "files": list(self.files),
            "script": self.script,
            "env": dict(ENV_HELP),
            "usage": _usage(self.platform, self.filename),
            "notes": list(self.notes),
        }


def render_scaffold(
    platform: str, *, base_url: str, project_id: str, identity: ScaffoldIdentity
) -> Scaffold:
    """The install script for ``identity`` of ``project_id`` on ``platform``.

    Raises :class:`ValueError` for an unknown platform, ids that are not UUIDs, a DID that is
    not ``did:svc:<uuid>`` or a base URL that is not a plain http(s) URL.
    """
    if platform not in PLATFORMS:
        raise ValueError(f"unknown platform {platform!r}: expected one of {', '.join(PLATFORMS)}")
    values = _Values(
        base_url=_check_base_url(base_url),
        project_id=_check_uuid(project_id, "project_id"),
        identity_id=_check_uuid(identity.id, "identity id"),
        did=_check_did(identity.did),
        name=_check_name(identity.name),
    )
    if platform == "linux":
        return _render_linux(values)
    if platform == "macos":
        return _render_macos(values)
    return _render_windows(values)


# --- validation -------------------------------------------------------------------------------


def _check_uuid(value: object, what: str) -> str:
    if not isinstance(value, str) or not _UUID_RE.fullmatch(value):
        raise ValueError(f"{what} must be a UUID")
    return str(uuid.UUID(value))


def _check_did(value: object) -> str:
    match = _DID_RE.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        raise ValueError("did must be did:svc:<uuid>")
    return "did:svc:" + str(uuid.UUID(match.group(1)))


def _check_base_url(value: object) -> str:
    if not isinstance(value, str) or len(value) > _BASE_URL_MAX:
        raise ValueError("base_url must be an http(s) URL")
    url = value.rstrip("/")
    if not _BASE_URL_RE.fullmatch(url):
        raise ValueError(
            "base_url must be an http(s) URL of host, port and path only (letters, digits, "
            "'-._~:/[]' and %-escapes: no quotes, spaces, shell characters, user info, query "
            "or fragment)"
        )
    try:
        parts = urlsplit(url)
        _ = parts.port  # raises ValueError for a port that is not a number
    except ValueError as exc:
        raise ValueError(f"base_url is not a valid URL: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("base_url must be an http(s) URL with a host")
    return url


def _check_name(value: object) -> str:
    if not isinstance(value, str):
        raise ValueError("identity name must be a string")
    return value


@dataclass(frozen=True)
class _Values:
    base_url: str
    project_id: str
    identity_id: str
    did: str
    name: str

    @property
    def credential_name(self) -> str:
        return f"hearth-{self.project_id}"

    @property
    def wake_url(self) -> str:
        return f"{self.base_url}/v1/wake?identity_id={self.identity_id}"

    def agent_json(self, credential: dict[str, str]) -> str:
        document = {
            "base_url": self.base_url,
            "project_id": self.project_id,
            "identity_id": self.identity_id,
            "did": self.did,
            "name": self.name,
            "credential": credential,
        }
        return json.dumps(document, indent=2, ensure_ascii=True)


# --- text helpers -----------------------------------------------------------------------------


def _fill(template: str, **values: str) -> str:
    """``template`` with each ``{{NAME}}`` replaced; every placeholder must be given."""
    text = template
    for key, value in values.items():
        placeholder = "{{" + key + "}}"
        if placeholder not in text:
            raise AssertionError(f"placeholder {placeholder} is not in the template")
        text = text.replace(placeholder, value)
    if "{{" in text:
        raise AssertionError("a placeholder was left unfilled")
    return text


def _heredoc(body: str, delimiter: str) -> str:
    """``body`` as the lines of a quoted heredoc: nothing in it is expanded."""
    if any(line == delimiter for line in body.split("\n")) or "\r" in body:
        raise AssertionError("heredoc body would end early")
    return body


def _ps_quote(value: str) -> str:
    """A PowerShell single-quoted string: literal, quotes doubled (PowerShell also takes the
    typographic single quotes as quote characters, so those are doubled too)."""
    quoted = "".join(c + c if c in "'\u2018\u2019\u201a\u201b" else c for c in value)
    return f"'{quoted}'"


def _here_string(body: str) -> str:
    """``body`` in a single-quoted PowerShell here-string (literal; ends at a line starting
    with ``'@``, which ``body`` must not have)."""
    if any(line.startswith("'@") for line in body.split("\n")) or "\r" in body:
        raise AssertionError("here-string body would end early")
    return "@'\n" + body + "\n'@"


def _usage(platform: str, filename: str) -> str:
    if platform == "windows":
        return (
            f"With $env:{BEARER_ENV} set to your project bearer, run: "
            f"powershell -NoProfile -ExecutionPolicy Bypass -File .\\{filename}"
        )
    return f"With {BEARER_ENV} exported (your project bearer), run: bash {filename}"


# --- linux and macos --------------------------------------------------------------------------

_SH_PREAMBLE = """\
set -euo pipefail
umask 077
LC_ALL=C

project_id={{PROJECT_ID}}
identity_id={{IDENTITY_ID}}
credential_name={{CREDENTIAL_NAME}}

die() {
  printf 'install-hearth: %s\\n' "$1" >&2
  exit 1
}

if [ -z "${SERVICE_API_KEY:-}" ]; then
  die 'SERVICE_API_KEY is not set: export your project bearer in it, then run this script again.'
fi
case "$SERVICE_API_KEY" in
  {{NOT_TOKEN}})
    die 'SERVICE_API_KEY does not look like a bearer token (RFC 6750 characters only).' ;;
esac
if [ -z "${HOME:-}" ]; then
  die 'HOME is not set.'
fi
"""

_SH_FINISH = """\
rm -f "$config_dir/wake.sh"
cat > "$config_dir/wake.sh" <<'HEARTH_WAKE_EOF'
{{WAKE}}
HEARTH_WAKE_EOF
chmod 700 "$config_dir/wake.sh"

printf 'hearth: wrote %s\\n' "$config_dir/agent.json" "$config_dir/wake.sh"
"""

_SH_HOW_TO_WAKE = """\
printf 'hearth: fetch the wake document of %s with:\\n  %q\\n' "$identity_id" "$config_dir/wake.sh"
"""

_SH_WAKE = """\
#!/usr/bin/env bash
# hearth wake helper: fetches the wake document of identity
# {{IDENTITY_ID_TEXT}}. Extra arguments are passed to curl.
# The bearer is read back from {{STORE_TEXT}} and handed to curl on
# standard input (-H @-, curl 7.55 or later), never on its command line.
set -euo pipefail

base_url={{BASE_URL}}
identity_id={{IDENTITY_ID}}
credential_name={{CREDENTIAL_NAME}}

die() {
  printf 'wake.sh: %s\\n' "$1" >&2
  exit 1
}

case "${BASH_SOURCE[0]}" in
  */*) here="${BASH_SOURCE[0]%/*}" ;;
  *) here=. ;;
esac

{{READ_KEY}}
if [ -z "$key" ]; then
  die 'the stored bearer is empty: run the install script again.'
fi

printf 'Authorization: Bearer %s\\n' "$key" \\
  | curl -fsS -H @- "$base_url/v1/wake?identity_id=$identity_id" "$@"
"""

_LINUX_READ_KEY = """\
if [ -f "$here/api_key" ]; then
  key="$(<"$here/api_key")"
elif command -v secret-tool >/dev/null 2>&1; then
  key="$(secret-tool lookup service "$credential_name" account "$identity_id")" \\
    || die "no bearer for $credential_name in the secret service: run the install script again."
else
  die "no key file and no secret-tool: run the install script again."
fi"""

_MACOS_READ_KEY = """\
key="$(security find-generic-password -s "$credential_name" -a "$identity_id" -w)" \\
  || die "no bearer for $credential_name in the keychain: run the install script again."\
"""

_LINUX_SCRIPT = """\
#!/usr/bin/env bash
# hearth: local credentials for identity {{IDENTITY_ID_TEXT}}
# of project {{PROJECT_ID_TEXT}}, on Linux.
#
# This script contains no secret. It reads the project bearer from the environment variable
# SERVICE_API_KEY and stores it in the Secret Service (secret-tool, reading it on standard
# input) or, when no secret service is reachable, in a key file of mode 0600. It then writes
# agent.json and wake.sh in ${XDG_CONFIG_HOME:-$HOME/.config}/hearth/<project_id>.
{{PREAMBLE}}
config_home="${XDG_CONFIG_HOME:-}"
case "$config_home" in
  /*) ;;
  *) config_home="$HOME/.config" ;;  # unset, empty or relative: the XDG default
esac
config_dir="$config_home/hearth/$project_id"
key_file="$config_dir/api_key"
mkdir -p "$config_dir"
chmod 700 "$config_dir"

store=file
if command -v secret-tool >/dev/null 2>&1 \\
  && { [ -n "${DBUS_SESSION_BUS_ADDRESS:-}" ] \\
    || [ -S "${XDG_RUNTIME_DIR:-/nonexistent}/bus" ]; }; then
  # The bearer goes to secret-tool on standard input, never as an argument; the lookup
  # checks it was really kept (a store without a running keyring can fail quietly).
  if printf '%s' "$SERVICE_API_KEY" \\
    | secret-tool store --label="hearth $project_id ($identity_id)" \\
      service "$credential_name" account "$identity_id"; then
    stored="$(secret-tool lookup service "$credential_name" account "$identity_id" || true)"
    if [ "$stored" = "$SERVICE_API_KEY" ]; then
      store=secret-service
    fi
    unset stored
  fi
  if [ "$store" != secret-service ]; then
    printf 'install-hearth: the secret service did not keep the bearer; using a key file.\\n' >&2
  fi
fi

rm -f "$key_file"
if [ "$store" = file ]; then
  # printf is a bash builtin: the bearer is on no command line. The file is created under
  # umask 077 (and never over an existing one: set -C), so it is never readable by others.
  (set -C; printf '%s' "$SERVICE_API_KEY" > "$key_file")
  chmod 600 "$key_file"
fi

rm -f "$config_dir/agent.json"
if [ "$store" = secret-service ]; then
  cat > "$config_dir/agent.json" <<'HEARTH_JSON_EOF'
{{AGENT_JSON_SECRET_SERVICE}}
HEARTH_JSON_EOF
else
  cat > "$config_dir/agent.json" <<'HEARTH_JSON_EOF'
{{AGENT_JSON_FILE}}
HEARTH_JSON_EOF
fi
chmod 600 "$config_dir/agent.json"

{{FINISH}}
if [ "$store" = secret-service ]; then
  printf 'hearth: bearer stored in the secret service as %s (account %s)\\n' \\
    "$credential_name" "$identity_id"
else
  printf 'hearth: bearer stored in %s (mode 0600): no secret service was available\\n' \\
    "$key_file"
fi
{{HOW_TO_WAKE}}"""

_MACOS_SCRIPT = """\
#!/bin/bash
# hearth: local credentials for identity {{IDENTITY_ID_TEXT}}
# of project {{PROJECT_ID_TEXT}}, on macOS.
#
# This script contains no secret. It reads the project bearer from the environment variable
# SERVICE_API_KEY and stores it in the login keychain, then writes agent.json and wake.sh in
# $HOME/Library/Application Support/hearth/<project_id>.
{{PREAMBLE}}
if [ "${#SERVICE_API_KEY}" -gt 2048 ]; then
  die 'SERVICE_API_KEY is longer than 2048 characters.'
fi
if ! command -v security >/dev/null 2>&1; then
  die 'the macOS security tool was not found.'
fi

config_dir="$HOME/Library/Application Support/hearth/$project_id"
mkdir -p "$config_dir"
chmod 700 "$config_dir"

# Keeping the bearer off command lines: `security add-generic-password -w <bearer>` would show
# it to every local user in ps, and a bare `-w` prompts on the terminal instead of reading
# standard input. So the command is written to `security -i`, which reads its commands from
# standard input: the bearer only travels through a pipe (printf is a shell builtin). This is
# why SERVICE_API_KEY must be a plain token of bounded length: `security` splits the line
# itself (quotes, backslashes) into a 4096-byte buffer. The lookup then checks the keychain
# really kept it (a locked keychain refuses the write).
printf 'add-generic-password -U -s %s -a %s -w "%s"\\n' \\
  "$credential_name" "$identity_id" "$SERVICE_API_KEY" | security -i >/dev/null
stored="$(security find-generic-password -s "$credential_name" -a "$identity_id" -w 2>/dev/null \\
  || true)"
if [ "$stored" != "$SERVICE_API_KEY" ]; then
  die 'the login keychain did not keep the bearer (is it unlocked? try: security unlock-keychain).'
fi
unset stored

rm -f "$config_dir/agent.json"
cat > "$config_dir/agent.json" <<'HEARTH_JSON_EOF'
{{AGENT_JSON}}
HEARTH_JSON_EOF
chmod 600 "$config_dir/agent.json"

{{FINISH}}
printf 'hearth: bearer stored in the login keychain as %s (account %s)\\n' \\
  "$credential_name" "$identity_id"
{{HOW_TO_WAKE}}"""


def _sh_common(values: _Values) -> dict[str, str]:
    return {
        "PROJECT_ID": shlex.quote(values.project_id),
        "IDENTITY_ID": shlex.quote(values.identity_id),
        "CREDENTIAL_NAME": shlex.quote(values.credential_name),
        "NOT_TOKEN": _SH_NOT_TOKEN,
    }


def _sh_wake(values: _Values, *, store_text: str, read_key: str) -> str:
    wake = _fill(
        _SH_WAKE,
        IDENTITY_ID_TEXT=values.identity_id,
        STORE_TEXT=store_text,
        BASE_URL=shlex.quote(values.base_url),
        IDENTITY_ID=shlex.quote(values.identity_id),
        CREDENTIAL_NAME=shlex.quote(values.credential_name),
        READ_KEY=read_key,
    )
    return _heredoc(wake.rstrip("\n"), _SH_WAKE_EOF)


def _render_linux(values: _Values) -> Scaffold:
    name = values.credential_name
    wake = _sh_wake(
        values, store_text="the key file or the Secret Service", read_key=_LINUX_READ_KEY
    )
    secret_service = values.agent_json({"store": "secret-service", "name": name})
    key_file = values.agent_json({"store": "file", "name": name, "path": "api_key"})
    script = _fill(
        _LINUX_SCRIPT,
        IDENTITY_ID_TEXT=values.identity_id,
        PROJECT_ID_TEXT=values.project_id,
        PREAMBLE=_fill(_SH_PREAMBLE, **_sh_common(values)),
        AGENT_JSON_SECRET_SERVICE=_heredoc(secret_service, _SH_JSON_EOF),
        AGENT_JSON_FILE=_heredoc(key_file, _SH_JSON_EOF),
        FINISH=_fill(_SH_FINISH, WAKE=wake),
        HOW_TO_WAKE=_SH_HOW_TO_WAKE,
    )
    return Scaffold(
        platform="linux",
        filename="install-hearth.sh",
        content_type=CONTENT_TYPE,
        script=script,
        config_dir=f"${{XDG_CONFIG_HOME:-$HOME/.config}}/hearth/{values.project_id}",
        credential_name=name,
        files=["agent.json", "wake.sh"],
        notes=[
            f"The bearer is read from ${BEARER_ENV} and never written into this script.",
            f"It is stored with secret-tool (service {name}, account {values.identity_id}), "
            "given on standard input, when a secret service is reachable.",
            "Without one, it is written to api_key (mode 0600) in the configuration "
            "directory, and agent.json says so.",
            "wake.sh hands the bearer to curl on standard input (-H @-), never on its "
            "command line; extra arguments are passed to curl.",
        ],
    )


def _render_macos(values: _Values) -> Scaffold:
    name = values.credential_name
    wake = _sh_wake(values, store_text="the login keychain", read_key=_MACOS_READ_KEY)
    script = _fill(
        _MACOS_SCRIPT,
        IDENTITY_ID_TEXT=values.identity_id,
        PROJECT_ID_TEXT=values.project_id,
        PREAMBLE=_fill(_SH_PREAMBLE, **_sh_common(values)),
        AGENT_JSON=_heredoc(values.agent_json({"store": "keychain", "name": name}), _SH_JSON_EOF),
        FINISH=_fill(_SH_FINISH, WAKE=wake),
        HOW_TO_WAKE=_SH_HOW_TO_WAKE,
    )
    return Scaffold(
        platform="macos",
        filename="install-hearth.sh",
        content_type=CONTENT_TYPE,
        script=script,
        config_dir=f"$HOME/Library/Application Support/hearth/{values.project_id}",
        credential_name=name,
        files=["agent.json", "wake.sh"],
        notes=[
            f"The bearer is read from ${BEARER_ENV} and never written into this script.",
            f"It is stored in the login keychain (service {name}, account "
            f"{values.identity_id}) by writing the command to `security -i` on standard "
            "input: `security add-generic-password -w <bearer>` would put it on a command "
            "line, visible to other local users in ps, and a bare -w prompts on the terminal.",
            "For that reason the bearer must be a plain RFC 6750 token; the script refuses "
            "anything else, and checks the keychain kept it.",
            "wake.sh hands the bearer to curl on standard input (-H @-), never on its "
            "command line; extra arguments are passed to curl.",
        ],
    )


# --- windows ----------------------------------------------------------------------------------

_PS_VAULT_TYPE = (
    "[Windows.Security.Credentials.PasswordVault, Windows.Security.Credentials, "
    "ContentType = WindowsRuntime]"
)

# Runs a vault snippet. The WinRT PasswordVault loads in Windows PowerShell 5.1 but not in
# PowerShell 7.1+ (.NET dropped the WinRT projection), so there the snippet runs in Windows
# PowerShell (-EncodedCommand: no quoting games). The bearer reaches that process through the
# inherited environment and comes back on its standard output: never on a command line.
_PS_INVOKE_VAULT = """\
function Invoke-HearthVault([string] $Snippet) {
    if ($PSVersionTable.PSVersion.Major -le 5) {
        return (& ([scriptblock]::Create($Snippet)))
    }
    $windowsPowerShell = Join-Path $env:SystemRoot `
        'System32\\WindowsPowerShell\\v1.0\\powershell.exe'
    $encoded = [Convert]::ToBase64String([Text.Encoding]::Unicode.GetBytes($Snippet))
    $output = & $windowsPowerShell -NoProfile -NonInteractive -EncodedCommand $encoded
    if ($LASTEXITCODE -ne 0) {
        throw "Windows PowerShell could not reach the credential vault (exit $LASTEXITCODE)."
    }
    return ($output -join '')
}"""

_PS_STORE_SNIPPET = """\
$ErrorActionPreference = 'Stop'
$null = {{VAULT_TYPE}}
$resource = {{RESOURCE}}
$user = {{USER}}
$vault = New-Object Windows.Security.Credentials.PasswordVault
try { $vault.Remove($vault.Retrieve($resource, $user)) } catch { }  # none stored yet
$credential = New-Object -TypeName Windows.Security.Credentials.PasswordCredential `
    -ArgumentList $resource, $user, $env:SERVICE_API_KEY
$vault.Add($credential)"""

_PS_READ_SNIPPET = """\
$ErrorActionPreference = 'Stop'
$null = {{VAULT_TYPE}}
$resource = {{RESOURCE}}
$user = {{USER}}
$vault = New-Object Windows.Security.Credentials.PasswordVault
$credential = $vault.Retrieve($resource, $user)
$credential.RetrievePassword()
$credential.Password"""

_PS_WAKE = """\
# hearth wake helper: fetches the wake document of identity
# {{IDENTITY_ID_TEXT}}. Extra arguments are passed to Invoke-RestMethod.
# The bearer is read back from the Windows credential vault (resource
# {{RESOURCE_TEXT}}) and only ever held in memory.
$ErrorActionPreference = 'Stop'

$BaseUrl = {{BASE_URL}}
$IdentityId = {{IDENTITY_ID}}
$ReadVault = {{READ_SNIPPET}}

{{INVOKE_VAULT}}

$Key = Invoke-HearthVault $ReadVault
if ([string]::IsNullOrEmpty($Key)) {
    throw 'The stored bearer is empty: run the install script again.'
}
$Uri = "$BaseUrl/v1/wake?identity_id=$IdentityId"
Invoke-RestMethod -UseBasicParsing -Uri $Uri -Headers @{ Authorization = "Bearer $Key" } @args"""

_PS_SCRIPT = """\
# hearth: local credentials for identity {{IDENTITY_ID_TEXT}}
# of project {{PROJECT_ID_TEXT}}, on Windows.
#
# This script contains no secret. It reads the project bearer from the environment variable
# SERVICE_API_KEY, stores it in the Windows credential vault (PasswordVault, resource
# hearth-<project_id>, user = identity id), then writes agent.json and wake.ps1 in
# $env:APPDATA\\hearth\\<project_id>. Windows PowerShell 5.1 or PowerShell 7.
$ErrorActionPreference = 'Stop'

$ProjectId = {{PROJECT_ID}}
$IdentityId = {{IDENTITY_ID}}
$CredentialName = {{CREDENTIAL_NAME}}

function Stop-Hearth([string] $Message) {
    [Console]::Error.WriteLine("install-hearth: $Message")
    exit 1
}

$Key = $env:SERVICE_API_KEY
if ([string]::IsNullOrEmpty($Key)) {
    Stop-Hearth 'SERVICE_API_KEY is not set: set your project bearer in it, then run again.'
}
if ($Key -cnotmatch {{TOKEN_PATTERN}}) {
    Stop-Hearth 'SERVICE_API_KEY does not look like a bearer token (RFC 6750 characters only).'
}
Remove-Variable Key
if ([string]::IsNullOrEmpty($env:APPDATA)) {
    Stop-Hearth 'APPDATA is not set.'
}

{{INVOKE_VAULT}}

$StoreVault = {{STORE_SNIPPET}}

$ConfigDir = Join-Path (Join-Path $env:APPDATA 'hearth') $ProjectId
$null = New-Item -ItemType Directory -Force -Path $ConfigDir

$null = Invoke-HearthVault $StoreVault

$Utf8 = New-Object System.Text.UTF8Encoding($false)
$AgentJson = {{AGENT_JSON}}
[IO.File]::WriteAllText((Join-Path $ConfigDir 'agent.json'), $AgentJson + "`n", $Utf8)

$WakeScript = {{WAKE}}
[IO.File]::WriteAllText((Join-Path $ConfigDir 'wake.ps1'), $WakeScript + "`n", $Utf8)

Write-Output "hearth: bearer stored in the Windows credential vault as $CredentialName"
Write-Output "hearth: wrote $(Join-Path $ConfigDir 'agent.json')"
Write-Output "hearth: wrote $(Join-Path $ConfigDir 'wake.ps1')"
$WakePath = Join-Path $ConfigDir 'wake.ps1'
Write-Output "hearth: fetch the wake document with:"
Write-Output "  powershell -NoProfile -ExecutionPolicy Bypass -File `"$WakePath`""
"""


def _render_windows(values: _Values) -> Scaffold:
    name = values.credential_name
    vault_names = {
        "VAULT_TYPE": _PS_VAULT_TYPE,
        "RESOURCE": _ps_quote(name),
        "USER": _ps_quote(values.identity_id),
    }
    read_snippet = _fill(_PS_READ_SNIPPET, **vault_names)
    wake = _fill(
        _PS_WAKE,
        IDENTITY_ID_TEXT=values.identity_id,
        RESOURCE_TEXT=name,
        BASE_URL=_ps_quote(values.base_url),
        IDENTITY_ID=_ps_quote(values.identity_id),
        READ_SNIPPET=_ps_quote(read_snippet),
        INVOKE_VAULT=_PS_INVOKE_VAULT,
    )
    script = _fill(
        _PS_SCRIPT,
        IDENTITY_ID_TEXT=values.identity_id,
        PROJECT_ID_TEXT=values.project_id,
        PROJECT_ID=_ps_quote(values.project_id),
        IDENTITY_ID=_ps_quote(values.identity_id),
        CREDENTIAL_NAME=_ps_quote(name),
        TOKEN_PATTERN=_ps_quote(_PS_TOKEN),
        INVOKE_VAULT=_PS_INVOKE_VAULT,
        STORE_SNIPPET=_here_string(_fill(_PS_STORE_SNIPPET, **vault_names)),
        AGENT_JSON=_here_string(values.agent_json({"store": "password-vault", "name": name})),
        WAKE=_here_string(wake),
    )
    return Scaffold(
        platform="windows",
        filename="install-hearth.ps1",
        content_type=CONTENT_TYPE,
        script=script,
        config_dir=f"$env:APPDATA\\hearth\\{values.project_id}",
        credential_name=name,
        files=["agent.json", "wake.ps1"],
        notes=[
            f"The bearer is read from $env:{BEARER_ENV} and never written into this script.",
            f"It is stored in the Windows credential vault (PasswordVault, resource {name}, "
            f"user {values.identity_id}).",
            "PowerShell 7 cannot load the WinRT PasswordVault, so there the vault is reached "
            "through Windows PowerShell 5.1, which inherits the bearer in its environment "
            "(never on its command line).",
            "wake.ps1 passes extra arguments to Invoke-RestMethod.",
        ],
    )
