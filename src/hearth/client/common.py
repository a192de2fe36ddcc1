"""What every part of the client shares: the tolerant JSON field readers the result types parse
with, and an identity's authority state. The errors are in ``errors.py``.

The readers never raise on a missing or mistyped field: they answer an empty value, so a result
type parses whatever a newer or older service sends; the call that needs a field checks it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol, TypeVar
from urllib.parse import quote

import httpx2

from hearth.proofs import b64_encode, format_timestamp
from hearth.proofs.key_types import Ed25519PrivateKey, X25519PrivateKey

from .calls import Call

__all__ = [
    "Authority",
    "Expression",
    "Transport",
    "Wallet",
]


# ---- field readers ------------------------------------------------------------------------


def _str(data: Mapping[str, Any], name: str) -> str:
    value = data.get(name)
    return value if isinstance(value, str) else ""


T = TypeVar("T")


def _opt_str(data: Mapping[str, Any], name: str) -> str | None:
    value = data.get(name)
    return value if isinstance(value, str) else None


def _objects(data: Any, parse: Callable[[Mapping[str, Any]], T]) -> tuple[T, ...]:
    """Each JSON object of a list, parsed; anything that is not a list of objects is empty."""
    return tuple(
        parse(item) for item in (data if isinstance(data, list) else []) if isinstance(item, dict)
    )


def _obj(data: Any) -> dict[str, Any]:
    return data if isinstance(data, dict) else {}


def _now() -> str:
    """Now, as the proofs' timestamps are written."""
    return format_timestamp(datetime.now(UTC))


def _public_b64(key: Ed25519PrivateKey | X25519PrivateKey) -> str:
    return b64_encode(key.public_key().public_bytes_raw())


@dataclass(frozen=True)
class Authority:
    """An identity's authority state: whether it is rooted, and its next proof sequence."""

    identity_id: str
    did: str
    mode: str  # "agent_root" or "legacy_bearer"
    next_sequence: int
    root_public_key: str | None = None
    kid: str | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Authority:
        return cls(
            identity_id=_str(data, "identity_id"),
            did=_str(data, "did"),
            mode=_str(data, "mode"),
            next_sequence=int(data.get("next_sequence") or 0),
            root_public_key=_opt_str(data, "root_public_key"),
            kid=_opt_str(data, "kid"),
        )


@dataclass(frozen=True)
class Wallet:
    id: str
    name: str
    balance: int
    currency: str

    @classmethod
    def from_json(cls, data: Any) -> Wallet | None:
        if not isinstance(data, dict):
            return None
        return cls(
            id=_str(data, "id"),
            name=_str(data, "name"),
            balance=int(data.get("balance") or 0),
            currency=_str(data, "currency"),
        )


@dataclass(frozen=True)
class Expression:
    """An identity's declared voice."""

    register: str
    walls: tuple[str, ...]
    subagents: tuple[dict[str, Any], ...]
    wake_text: str

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Expression:
        walls = data.get("walls")
        subagents = data.get("subagents")
        return cls(
            register=_str(data, "register"),
            walls=tuple(w for w in walls if isinstance(w, str)) if isinstance(walls, list) else (),
            subagents=(
                tuple(s for s in subagents if isinstance(s, dict))
                if isinstance(subagents, list)
                else ()
            ),
            wake_text=_str(data, "wake_text"),
        )


class Transport(Protocol):
    """What the call mixins (``identity.py``, ``memories.py``, ``project.py``, ``life.py``,
    ``wake.py``, ``runtimes.py``) use of a client: the bearer and the request-building steps of
    ``core.CoreCalls``, each a generator of requests (``calls.py``), so a mixin's methods run on
    the sync and the async client alike. The mixins type ``self`` with it, so each module is
    checked on its own. Root proofs and the authority read are reached as
    ``CoreCalls.root_request.gen(self, ...)`` and ``CoreCalls.authority.gen(self, ...)``."""

    _api_key: str | None

    # Read-only here: each client holds its own kind of httpx2 client, and the calls only build
    # requests with it (``build_request``, ``timeout``), which both kinds do alike.
    @property
    def _http(self) -> httpx2.Client | httpx2.AsyncClient: ...

    def _headers(
        self, authenticated: bool, extra: Mapping[str, str] | None = None
    ) -> dict[str, str]: ...

    def _send(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        params: Mapping[str, str] | None = None,
        authenticated: bool = True,
        headers: Mapping[str, str] | None = None,
    ) -> Call[httpx2.Response]: ...

    def _json(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        params: Mapping[str, str] | None = None,
        authenticated: bool = True,
        headers: Mapping[str, str] | None = None,
    ) -> Call[dict[str, Any]]: ...

    def _proven(
        self,
        method: str,
        path: str,
        body: Any,
        identity_id: str | None,
        root_key: Ed25519PrivateKey | None,
    ) -> Call[Any]: ...


def query(**values: str | int | bool | None) -> dict[str, str]:
    """Query parameters: None is left out, booleans are ``true``/``false`` as FastAPI reads them."""
    params: dict[str, str] = {}
    for name, value in values.items():
        if value is None:
            continue
        params[name] = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return params


def segment(value: str) -> str:
    """One path segment, percent-encoded: a name or id can never reach another route."""
    return quote(value, safe=":@")
