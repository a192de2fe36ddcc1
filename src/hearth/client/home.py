"""The home format: what ``hearth register`` and ``hearth recover`` keep in a directory, and how
it is read. The format is defined here, in the client, so an agent's own code reads a home with
:meth:`~hearth.client.HearthClient.from_home` exactly as the CLI does (the CLI writes and reads
through this module; the client never imports the CLI).

The home is the given path, else ``$HEARTH_HOME``, else ``~/.config/hearth``. It holds:

- ``profile.json``: base_url, project_id, identity_id, did, name and the id of the bearer in
  use (key_id). Nothing secret.
- ``api_key``: the project bearer, alone, so that no other file ever carries it.
- ``keys.backup.json``: the identity's private keys sealed under a passphrase (the key backup
  format of :mod:`hearth.client.backup`, plus the identity they belong to). Never plaintext.

Only the standard library is imported here: the CLI's local-file commands read the home without
loading the SDK.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "API_KEY_FILE",
    "HOME_ENV",
    "KEYS_FILE",
    "KEYS_FORMAT",
    "PROFILE_FILE",
    "HomeError",
    "Profile",
    "home_dir",
    "read_api_key",
    "read_profile",
    "read_sealed_keys_record",
]

HOME_ENV = "HEARTH_HOME"
PROFILE_FILE = "profile.json"
API_KEY_FILE = "api_key"
KEYS_FILE = "keys.backup.json"
KEYS_FORMAT = "hearth-sealed-keys/v1"


class HomeError(ValueError):
    """A home file that exists but cannot be read or is damaged. The message names the file and
    never its content (the bearer file's content is a secret)."""


def home_dir(home: Path | str | None = None) -> Path:
    """The home: ``home``, else ``$HEARTH_HOME``, else ``~/.config/hearth``."""
    if home is not None:
        return Path(home).expanduser()
    env = os.environ.get(HOME_ENV)
    if env:
        return Path(env).expanduser()
    return Path.home() / ".config" / "hearth"


@dataclass(frozen=True)
class Profile:
    """``profile.json``: which service and identity a home belongs to."""

    base_url: str
    project_id: str
    identity_id: str
    did: str
    name: str = ""
    key_id: str = ""

    @classmethod
    def from_json(cls, data: Any) -> Profile:
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        fields = {}
        for name in ("base_url", "project_id", "identity_id", "did", "name", "key_id"):
            value = data.get(name, "")
            if not isinstance(value, str):
                raise ValueError(f"{name} is not a string")
            fields[name] = value
        for name in ("base_url", "project_id", "identity_id", "did"):
            if not fields[name]:
                raise ValueError(f"{name} is missing")
        return cls(**fields)


def read_profile(home: Path) -> Profile | None:
    """The home's profile; None when the home has none. Raises :class:`HomeError` when it is
    unreadable or damaged."""
    path = home / PROFILE_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise HomeError(f"cannot read {path}: {exc}") from None
    try:
        return Profile.from_json(data)
    except ValueError as exc:
        raise HomeError(f"{path} is damaged: {exc}") from None


def read_api_key(home: Path) -> str | None:
    """The home's project bearer; None when it has none. Raises :class:`HomeError` when the file
    cannot be read (the error carries the OS reason, never the file's content)."""
    try:
        value = (home / API_KEY_FILE).read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise HomeError(f"cannot read the bearer file in {home}: {exc.strerror}") from None
    return value or None


def read_sealed_keys_record(path: Path) -> dict[str, Any]:
    """The sealed-keys record at ``path`` (``blob_base64`` and ``key_derivation`` are checked to
    be strings). Raises :class:`FileNotFoundError` when absent and :class:`HomeError` when
    unreadable or not a sealed key file."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise
    except (OSError, ValueError) as exc:
        raise HomeError(f"cannot read {path}: {exc}") from None
    if (
        not isinstance(data, dict)
        or not isinstance(data.get("blob_base64"), str)
        or not isinstance(data.get("key_derivation"), str)
    ):
        raise HomeError(f"{path} is not a sealed key file")
    return data
