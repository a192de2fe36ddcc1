"""Where a client finds its service and its bearer: the environment or a home that
``hearth register`` wrote. Both clients' ``from_env`` and ``from_home`` read through here, so the
sync and async clients find the same things the same way.

The environment: ``HEARTH_BASE_URL`` (required); the bearer from ``SERVICE_API_KEY``, else from
the file named by ``SERVICE_API_KEY_FILE`` (for a bearer kept out of the environment, like a
home's ``api_key`` file). No bearer at all is allowed: public routes and registration need none.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Self

from .home import HomeError, home_dir, read_api_key, read_profile

__all__ = ["API_KEY_ENV", "API_KEY_FILE_ENV", "BASE_URL_ENV", "FromSettings", "Settings"]

BASE_URL_ENV = "HEARTH_BASE_URL"
# The same name the scaffolded wake scripts read the bearer from (server/scaffold.py).
API_KEY_ENV = "SERVICE_API_KEY"
API_KEY_FILE_ENV = "SERVICE_API_KEY_FILE"


@dataclass(frozen=True)
class Settings:
    """A service address and the bearer for it (left out of the repr: it is a secret)."""

    base_url: str
    api_key: str | None = field(default=None, repr=False)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if environ is None else environ
        base_url = env.get(BASE_URL_ENV, "").strip()
        if not base_url:
            raise ValueError(f"{BASE_URL_ENV} is not set: export the service address in it")
        api_key = env.get(API_KEY_ENV, "").strip() or None
        key_file = env.get(API_KEY_FILE_ENV, "").strip()
        if api_key is None and key_file:
            try:
                api_key = Path(key_file).expanduser().read_text(encoding="utf-8").strip() or None
            except OSError as exc:
                # The OS reason only: the file's content is the secret.
                raise ValueError(
                    f"{API_KEY_FILE_ENV}: cannot read {key_file}: {exc.strerror}"
                ) from None
        return cls(base_url, api_key)

    @classmethod
    def from_home(cls, home: Path | str | None = None) -> Settings:
        """The profile's service and the home's bearer; the home is ``home``, else
        ``$HEARTH_HOME``, else ``~/.config/hearth`` (as the CLI chooses it)."""
        path = home_dir(home)
        profile = read_profile(path)
        if profile is None:
            raise HomeError(f"no identity in {path}: run `hearth register` or `hearth recover`")
        return cls(profile.base_url, read_api_key(path))


class FromSettings:
    """The two clients' constructors from settings, and what they share about their bearer."""

    @staticmethod
    def _default_headers() -> dict[str, str]:
        """What every request of either client carries."""
        from hearth import __version__  # noqa: PLC0415 - read lazily, as the package does

        return {"Accept": "application/json", "User-Agent": f"hearth-sdk/{__version__}"}

    base_url: str
    _api_key: str | None

    def __init__(self, base_url: str, *, api_key: str | None = None, timeout: float = 30.0) -> None:
        # Each client adds its own kind of httpx2 client, made with ``timeout``.
        self.base_url = base_url.rstrip("/")
        self._api_key = api_key
        self._timeout = timeout

    @classmethod
    def from_env(cls, *, timeout: float = 30.0) -> Self:
        """A client for ``$HEARTH_BASE_URL`` with the bearer of ``$SERVICE_API_KEY`` (else of the
        file ``$SERVICE_API_KEY_FILE`` names); see :class:`Settings`."""
        settings = Settings.from_env()
        return cls(settings.base_url, api_key=settings.api_key, timeout=timeout)

    @classmethod
    def from_home(cls, home: Path | str | None = None, *, timeout: float = 30.0) -> Self:
        """A client for the identity ``hearth register`` (or ``recover``) kept in ``home`` (else
        ``$HEARTH_HOME``, else ``~/.config/hearth``): its profile's service and its bearer."""
        settings = Settings.from_home(home)
        return cls(settings.base_url, api_key=settings.api_key, timeout=timeout)

    def __repr__(self) -> str:
        # The bearer itself never appears; only whether one is held.
        held = "set" if self._api_key else "none"
        return f"{type(self).__name__}(base_url={self.base_url!r}, api_key=<{held}>)"

    @property
    def api_key(self) -> str | None:
        return self._api_key

    @api_key.setter
    def api_key(self, value: str | None) -> None:
        self._api_key = value
