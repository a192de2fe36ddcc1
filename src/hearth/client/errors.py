"""What the client side raises when a hearth service or provider node does not do what was asked.

One tree, for the SDK (``HearthClient``), the ADDS client (``AddsClient``, which the CLI's
``hearth adds`` commands and ``HttpBlockStore`` talk through) and the CLI::

    ClientError                     anything the client side raises about a remote hearth
     +-- TransportError             no answer: the request failed on the way (connect, timeout,
     |                              protocol); httpx2's error is its ``__cause__``
     +-- InvalidAnswer              an answer that breaks the route's promise: larger than allowed,
     |                              not the JSON expected, a document that does not hash to its CID
     +-- HearthError                an answer, and a refusal: ``status``, ``error`` (the service's
          |                         machine code), ``message``, ``details``, ``body``, ``hint``
          +-- InsufficientCredits   402 ``insufficient_credits``: nothing was paid or retried
          +-- AddsRefusal           a provider node refused an ADDS request: also the ``code`` it
                                    sent (or None) and the ``request`` it refused

Where each is raised:

- ``HearthClient`` raises HearthError (or InsufficientCredits) for every non-2xx answer. Its
  transport failures are httpx2's own exceptions, as docs/sdk.md promises its callers (and the
  CLI's commands catch them as ``httpx2.HTTPError``).
- ``AddsClient`` raises TransportError, InvalidAnswer and AddsRefusal. The CLI prints them as
  one line; the HTTP block store turns them into its own ``BlockStoreError``
  (``hearth.blockstore.base``: the server's stores raise it too, so it cannot root in the client)
  with the refusal's ``code`` and ``status``, and the client error as its ``__cause__``.

No message here holds a bearer: the ADDS client replaces it with ``[bearer]`` before raising.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx2

__all__ = [
    "AddsRefusal",
    "ClientError",
    "HearthError",
    "InsufficientCredits",
    "InvalidAnswer",
    "TransportError",
]


class ClientError(Exception):
    """The root: a remote hearth did not do what the client asked."""


class TransportError(ClientError):
    """The request got no answer (connection refused or lost, timeout, protocol error).

    ``method`` and ``url`` name the request; the message says what failed, without the bearer;
    the httpx2 exception is the ``__cause__``.
    """

    def __init__(self, message: str, *, method: str, url: str) -> None:
        super().__init__(message)
        self.method = method
        self.url = url


class InvalidAnswer(ClientError):
    """The service answered, but not as the route promises; the message says how (and names the
    node or the request)."""


class HearthError(ClientError):
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


class AddsRefusal(HearthError):
    """A provider node refused an ADDS request.

    Beyond a HearthError's fields: ``base_url`` is the node and ``request`` the refused
    ``METHOD /path``; ``code`` the error code the node sent, None when its answer had none
    (``error`` then reads ``http_<status>``); ``reason`` the node's own words, its ``message``
    or the start of an answer that was not JSON (None when it gave neither).
    """

    def __init__(
        self,
        status: int,
        *,
        base_url: str,
        request: str,
        code: str | None,
        reason: str | None,
        details: Any = None,
        body: Any = None,
    ) -> None:
        super().__init__(
            status, code or f"http_{status}", reason or "request refused", details, body
        )
        self.base_url = base_url
        self.request = request
        self.code = code
        self.reason = reason

    def __str__(self) -> str:
        text = f"{self.base_url}: {self.request}: HTTP {self.status}"
        if self.code:
            text += f" {self.code}"
        if self.reason:
            text += f": {self.reason}"
        return text

    def __repr__(self) -> str:
        return f"AddsRefusal(status={self.status}, request={self.request!r}, code={self.code!r})"
