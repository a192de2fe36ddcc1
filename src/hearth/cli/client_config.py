"""Local client state of the ``hearth`` command: one identity per home directory.

The home is ``--home``, else ``$HEARTH_HOME``, else ``~/.config/hearth`` (created mode 0700).
Its format (``profile.json``, ``api_key``, ``keys.backup.json``) is defined and read in
:mod:`hearth.client.home`, so the SDK's ``HearthClient.from_home`` reads exactly what this
module writes; here are the writing (each file mode 0600) and the command-line errors. The
mnemonic is never stored in a home at all.

The passphrase comes from ``--passphrase-file``, else ``$HEARTH_PASSPHRASE``, else a hidden
prompt (asked twice when it seals something new).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, Protocol, TypeVar

import typer
from rich.console import Console
from rich.markup import escape

# The home format itself; the module imports only the standard library (not the SDK).
from hearth.client.home import (
    API_KEY_FILE,
    HOME_ENV,
    KEYS_FILE,
    KEYS_FORMAT,
    PROFILE_FILE,
    HomeError,
    Profile,
    read_api_key,
    read_profile,
    read_sealed_keys_record,
)
from hearth.client.home import home_dir as _home_dir

from .files import write_private

# The client stack (httpx2, hearth.client, its crypto) costs about 0.2 s to import, and the
# ``hearth adds`` commands that work on local files use this module for the home alone; so the
# functions that talk to the service import it when they run.
if TYPE_CHECKING:
    import httpx2
    from rich.table import Table

    from hearth.client import HearthClient, HearthError
    from hearth.client.backup import SealedBackup
    from hearth.client.mnemonic_keys import IdentityKeys
    from hearth.proofs.key_types import Ed25519PrivateKey

__all__ = ["API_KEY_FILE", "HOME_ENV", "KEYS_FILE", "KEYS_FORMAT", "PROFILE_FILE", "Profile"]

PASSPHRASE_ENV = "HEARTH_PASSPHRASE"

errors = Console(stderr=True, highlight=False, soft_wrap=True)
output = Console(highlight=False, soft_wrap=True)


def print_table(table: Table, *, err: bool = False) -> None:
    """A table on the terminal, or unfolded when piped: ids must survive whole for copying."""
    console = errors if err else output
    if not console.is_terminal:
        console = Console(stderr=err, highlight=False, width=200)
    console.print(table)


def as_plain(value: Any) -> Any:
    """``value`` as JSON-ready data: dataclasses as objects, tuples as lists."""
    if is_dataclass(value) and not isinstance(value, type):
        return {name: as_plain(item) for name, item in asdict(value).items()}
    if isinstance(value, dict):
        return {str(name): as_plain(item) for name, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [as_plain(item) for item in value]
    return value


def print_json(value: Any) -> None:
    """What ``--json`` prints: one JSON document on standard output, for scripts."""
    typer.echo(json.dumps(as_plain(value), indent=2, ensure_ascii=False))


def usage_error(message: str) -> NoReturn:
    errors.print(f"[red]error:[/red] {escape(message)}")
    raise typer.Exit(2)


def failure(message: str) -> NoReturn:
    errors.print(f"[red]error:[/red] {escape(message)}")
    raise typer.Exit(1)


def http_failure(exc: HearthError | httpx2.HTTPError) -> NoReturn:
    from hearth.client import HearthError  # noqa: PLC0415 (the client stack: only when used)

    if isinstance(exc, HearthError):
        message = f"{exc.error} (HTTP {exc.status}): {exc.message}"
        if exc.hint:
            message += f"\nhint: {exc.hint}"
        failure(message)
    failure(f"cannot reach the service at {_tried_url(exc)}: {type(exc).__name__}: {exc}")


def _tried_url(exc: httpx2.HTTPError) -> str:
    """The URL the failed request went to, so that a wrong --base-url is plain to see."""
    try:
        url = exc.request.url
    except RuntimeError:  # an error raised before a request was built carries none
        return "(no request was built)"
    # The query may carry cursors or names; scheme, host and path are what the user can check.
    return f"{url.scheme}://{url.netloc.decode('ascii', 'replace')}{url.path}"


# ---- the home --------------------------------------------------------------------------------


def home_dir(home: Path | None) -> Path:
    return _home_dir(home)


def ensure_home(home: Path) -> Path:
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    return home


def _write_json(path: Path, data: dict[str, Any], *, overwrite: bool) -> None:
    text = json.dumps(data, indent=2, sort_keys=True) + "\n"
    write_private(path, text.encode("utf-8"), overwrite=overwrite)


def load_profile(home: Path) -> Profile | None:
    try:
        return read_profile(home)
    except HomeError as exc:
        usage_error(str(exc))


def require_profile(home: Path) -> Profile:
    profile = load_profile(home)
    if profile is None:
        usage_error(
            f"no identity in {home}: run `hearth register` or `hearth recover` first "
            f"(or point --home / ${HOME_ENV} at another home)"
        )
    return profile


def save_profile(home: Path, profile: Profile) -> None:
    # Deliberately replaced: callers have checked that the home holds this identity or none.
    _write_json(ensure_home(home) / PROFILE_FILE, asdict(profile), overwrite=True)


def load_api_key(home: Path) -> str | None:
    try:
        return read_api_key(home)
    except HomeError as exc:
        usage_error(str(exc))


def require_api_key(home: Path) -> str:
    key = load_api_key(home)
    if key is None:
        usage_error(f"no project bearer in {home}: run `hearth recover` to get a new one")
    return key


def save_api_key(home: Path, api_key: str) -> None:
    write_private(
        ensure_home(home) / API_KEY_FILE, (api_key + "\n").encode("ascii"), overwrite=True
    )


# ---- sealed keys -------------------------------------------------------------------------------


def sealed_keys_json(sealed: SealedBackup, *, agent_id: str, did: str) -> dict[str, Any]:
    return {
        "format": KEYS_FORMAT,
        "agent_id": agent_id,
        "did": did,
        "blob_base64": sealed.blob_base64,
        "key_derivation": sealed.key_derivation,
    }


def save_sealed_keys(
    path: Path, sealed: SealedBackup, *, agent_id: str, did: str, overwrite: bool
) -> None:
    _write_json(path, sealed_keys_json(sealed, agent_id=agent_id, did=did), overwrite=overwrite)


def load_sealed_keys(path: Path) -> tuple[SealedBackup, dict[str, Any]]:
    """The sealed keys in ``path`` and the whole record; exits 2 when missing or damaged."""
    try:
        data = read_sealed_keys_record(path)
    except FileNotFoundError:
        usage_error(f"no sealed keys at {path}")
    except HomeError as exc:
        usage_error(str(exc))
    from hearth.client.backup import SealedBackup  # noqa: PLC0415 (the client stack)

    return SealedBackup(data["blob_base64"], data["key_derivation"]), data


def keys_path(home: Path) -> Path:
    return home / KEYS_FILE


def open_home_keys(home: Path, profile: Profile, passphrase_file: Path | None) -> IdentityKeys:
    """The home identity's keys (root key, box key, strand master), opened from its sealed key
    file with the passphrase."""
    from hearth.client.backup import BackupError, open_backup  # noqa: PLC0415 (client stack)

    sealed, record = load_sealed_keys(keys_path(home))
    if record.get("agent_id") not in (None, profile.identity_id):
        usage_error(f"{keys_path(home)} holds the keys of another identity")
    passphrase = read_passphrase(passphrase_file, confirm=False)
    with errors.status("Opening the local key file (argon2id)..."):
        try:
            return open_backup(sealed.blob_base64, sealed.key_derivation, passphrase)
        except BackupError as exc:
            failure(f"cannot open {keys_path(home)}: {exc}")


def open_root_key(home: Path, profile: Profile, passphrase_file: Path | None) -> Ed25519PrivateKey:
    """The home identity's root key, opened from its sealed key file with the passphrase."""
    return open_home_keys(home, profile, passphrase_file).signing


# ---- secrets from the user -------------------------------------------------------------------


def read_passphrase(passphrase_file: Path | None, *, confirm: bool) -> str:
    """From the file, else ``$HEARTH_PASSPHRASE``, else a hidden prompt."""
    if passphrase_file is not None:
        try:
            text = passphrase_file.read_text(encoding="utf-8")
        except OSError as exc:
            usage_error(f"cannot read the passphrase file {passphrase_file}: {exc.strerror}")
        passphrase = text.rstrip("\r\n")
    elif os.environ.get(PASSPHRASE_ENV):
        passphrase = os.environ[PASSPHRASE_ENV]
    else:
        passphrase = hidden_prompt(
            "Passphrase for the local key file" + (" (new)" if confirm else ""),
            confirm=confirm,
            instead=f"--passphrase-file or ${PASSPHRASE_ENV}",
        )
    if not passphrase:
        usage_error("the passphrase must not be empty")
    return passphrase


def read_mnemonic(mnemonic_file: Path | None) -> str:
    if mnemonic_file is not None:
        try:
            return mnemonic_file.read_text(encoding="utf-8")
        except OSError as exc:
            usage_error(f"cannot read the mnemonic file {mnemonic_file}: {exc.strerror}")
    return hidden_prompt("Your 24 words", confirm=False, instead="--mnemonic-file")


def hidden_prompt(text: str, *, confirm: bool, instead: str) -> str:
    """A hidden prompt on a terminal. Without one (a pipe, a script, CI) the answer is the first
    line of stdin, asked once; with nothing there it says what to give instead of aborting."""
    if sys.stdin.isatty():
        answer: str = typer.prompt(text, hide_input=True, confirmation_prompt=confirm, err=True)
        return answer
    line = sys.stdin.readline()
    if not line:
        usage_error(f"no terminal to ask for {text[0].lower() + text[1:]!r} on: give {instead}")
    return line.rstrip("\r\n")


# ---- clients -------------------------------------------------------------------------------


def resolve_base_url(base_url: str | None, profile: Profile | None) -> str:
    if base_url:
        return base_url.rstrip("/")
    if profile is not None:
        return profile.base_url
    usage_error("no service address: pass --base-url URL")


def client_for(home: Path, base_url: str | None) -> tuple[HearthClient, Profile]:
    """A client with this home's bearer, for its profile's service (or ``base_url``)."""
    from hearth.client import HearthClient  # noqa: PLC0415 (the client stack: only when used)

    profile = require_profile(home)
    return HearthClient(resolve_base_url(base_url, profile), api_key=require_api_key(home)), profile


T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


def ask(
    home: Path | None, base_url: str | None, call: Callable[[HearthClient], T]
) -> tuple[T, Profile]:
    """One command's call to the service: the home's client (for ``base_url`` when given),
    ``call`` made with it, and a refusal or an unreachable service turned into the command's
    one-line error (exit 1). Answers the call's result and the home's profile."""
    import httpx2  # noqa: PLC0415 (the client stack: only when used)

    from hearth.client import HearthError  # noqa: PLC0415

    client, profile = client_for(home_dir(home), base_url)
    with client:
        try:
            return call(client), profile
        except (HearthError, httpx2.HTTPError) as exc:
            http_failure(exc)


class Page(Protocol[T_co]):
    """What every listing of the SDK answers: a page of items and the cursor of the next."""

    @property
    def items(self) -> tuple[T_co, ...]: ...

    @property
    def next_cursor(self) -> str | None: ...


def gather(page: Callable[[str | None, int], Page[T]], limit: int) -> list[T]:
    """Up to ``limit`` items over as many pages as it takes: ``page(cursor, size)`` is one
    page (200 is the smallest page cap among the service's listings)."""
    found: list[T] = []
    cursor: str | None = None
    while len(found) < limit:
        answer = page(cursor, min(limit - len(found), 200))
        found += answer.items
        cursor = answer.next_cursor
        if cursor is None:
            break
    return found[:limit]


def identity_or_home(identity: str | None, profile: Profile) -> str:
    """The identity a command acts on: the one named, else this home's."""
    return identity or profile.identity_id


# ---- options every client command shares ---------------------------------------------------

HOME_OPTION = typer.Option(
    None,
    "--home",
    help=f"Local state directory (default: ${HOME_ENV}, else ~/.config/hearth).",
    show_default=False,
)
BASE_URL_OPTION = typer.Option(
    None, "--base-url", help="Service address (default: the profile's).", show_default=False
)
PASSPHRASE_FILE_OPTION = typer.Option(
    None,
    "--passphrase-file",
    help=f"Read the key-file passphrase from this file (else ${PASSPHRASE_ENV}, else a prompt).",
    show_default=False,
)
JSON_OPTION = typer.Option(False, "--json", help="Print the result as JSON, for scripts.")
IDENTITY_OPTION = typer.Option(
    None,
    "--identity",
    help="The identity (id or DID; default: this home's identity).",
    show_default=False,
)
LIMIT_OPTION = typer.Option(50, "--limit", min=1, max=1000, help="How many at most, newest first.")
