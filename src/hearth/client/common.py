"""What every part of the client shares: the error a refusal raises, the tolerant JSON field
readers the result types parse with, and an identity's authority state.

The readers never raise on a missing or mistyped field: they answer an empty value, so a result
type parses whatever a newer or older service sends; the call that needs a field checks it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar
from urllib.parse import quote

import httpx2
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

__all__ = [
    "Authority",
    "Expression",
    "HearthError",
    "InsufficientCredits",
    "Transport",
    "Wallet",
]


class HearthError(Exception):
    """The service refused a request: a non-2xx answer.

    ``status`` is the HTTP status, ``error`` the service's machine code (``http_<status>`` when
    the body has none), ``message`` its human text, ``details`` its structured details (or
    None) and ``body`` the whole decoded body (text when it was not JSON).
    """

    def __init__(
        self, status: int, error: str, message: str, details: Any = None, body: Any = None
    ) -> None:
        super().__init__(status, error, message)
        self.status = status
        self.error = error
        self.message = message
        self.details = details
        self.body = body

    @property
    def hint(self) -> str | None:
        hint = self.body.get("hint") if isinstance(self.body, dict) else None
        return hint if isinstance(hint, str) else None

    def __str__(self) -> str:
        return f"HTTP {self.status} {self.error}: {self.message}"

    def __repr__(self) -> str:
        return f"HearthError(status={self.status}, error={self.error!r}, message={self.message!r})"

    @classmethod
    def from_response(cls, response: httpx2.Response) -> HearthError:
        try:
            body: Any = response.json()
        except (ValueError, UnicodeDecodeError):
            body = response.text
        error = f"http_{response.status_code}"
        message = response.reason_phrase or "request refused"
        details = None
        if isinstance(body, dict):
            if isinstance(body.get("error"), str):
                error = body["error"]
            if isinstance(body.get("message"), str):
                message = body["message"]
            details = body.get("details")
        if response.status_code == 402 and error == "insufficient_credits":
            return InsufficientCredits(response.status_code, error, message, details, body)
        return cls(response.status_code, error, message, details, body)


class InsufficientCredits(HearthError):
    """A 402 ``insufficient_credits``: the paying wallet cannot pay, and nothing happened.

    Wall 2 (``no_auto_retry_payout``): the client never tops a wallet up and never repeats the
    request; what to do about the money is the caller's decision. The amounts are minor units
    of ``currency`` (1 credit = 1 minor unit of GBP); -1 when the service did not send one.
    """

    def _detail(self, name: str) -> Any:
        return self.details.get(name) if isinstance(self.details, dict) else None

    @property
    def balance(self) -> int:
        value = self._detail("balance")
        return value if isinstance(value, int) and not isinstance(value, bool) else -1

    @property
    def required(self) -> int:
        value = self._detail("required")
        return value if isinstance(value, int) and not isinstance(value, bool) else -1

    @property
    def wallet_id(self) -> str | None:
        value = self._detail("wallet_id")
        return value if isinstance(value, str) else None

    @property
    def currency(self) -> str | None:
        value = self._detail("currency")
        return value if isinstance(value, str) else None


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
    """What the call mixins (``life.py``, ``wake.py``) use of :class:`HearthClient`: its
    transport and proof methods. The mixins type ``self`` with it, so each module is checked on
    its own and :class:`HearthClient` is checked to provide all of it where it inherits them."""

    _http: httpx2.Client

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
    ) -> httpx2.Response: ...

    def _json(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        params: Mapping[str, str] | None = None,
        authenticated: bool = True,
        headers: Mapping[str, str] | None = None,
    ) -> dict[str, Any]: ...

    def _proven(
        self,
        method: str,
        path: str,
        body: Any,
        identity_id: str | None,
        root_key: Ed25519PrivateKey | None,
    ) -> Any: ...


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
