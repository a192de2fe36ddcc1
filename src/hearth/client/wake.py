"""The wake and its voice, as calls: ``GET /v1/wake`` in its five formats, and
``GET /v1/wake/voice`` (Server-Sent Events) as an iterator of parsed events.

:class:`WakeCalls` is a mixin of both clients, typed with the
:class:`~hearth.client.common.Transport` self-type: the wake's request and the voice's are built
here once; each client's ``wake`` and ``voice`` send them (``sdk.py``, ``aio.py``).

The voice (docs/voice.md): ``voice`` returns once the service has sent
``connected``; the subscription is live from then on, so every change committed afterwards is
delivered while the connection lasts. The stream keeps no history and has no resume: after a
reconnection, read the wake again to catch up. Reconnecting is off by default; when asked
(``reconnect=N``) it happens at most N times, with a growing pause, and each reconnection is
visible as a new ``connected`` event. A refusal (401, 404, 422) is never retried.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx2

from .calls import Call, op
from .common import Transport, _opt_str, query
from .errors import HearthError

__all__ = ["VoiceEvent", "VoiceStream", "WakeCalls"]

WakeFormat = Literal["json", "md", "math", "anthropic", "openai"]

WAKE_FORMATS = ("json", "md", "math", "anthropic", "openai")
TEXT_FORMATS = frozenset({"md", "math"})
# The service sends `welcome` about every 15 s, and FastAPI a ping comment when idle: four
# intervals of silence mean the connection is gone, not that nothing happened.
DEFAULT_VOICE_READ_TIMEOUT = 60.0
MAX_BACKOFF = 30.0


@dataclass(frozen=True)
class VoiceEvent:
    """One event of the voice: ``event`` is ``connected``, ``change`` or ``welcome`` (any other
    name a newer service sends is passed on as is); ``data`` is its JSON object (empty when the
    data line was not one; ``raw`` keeps the text)."""

    event: str
    data: dict[str, Any]
    raw: str = field(default="", repr=False, compare=False)

    @classmethod
    def from_sse(cls, event: str, text: str) -> VoiceEvent:
        try:
            data = json.loads(text) if text else {}
        except ValueError:
            data = {}
        return cls(event=event, data=data if isinstance(data, dict) else {}, raw=text)

    @property
    def key(self) -> str | None:
        """The wake section a ``change`` is about (``you_remember``, ``you_own``, ...)."""
        return _opt_str(self.data, "key")

    @property
    def kind(self) -> str | None:
        """What happened, for a ``change`` (``memory_stored``, ``wallet_funded``, ...)."""
        return _opt_str(self.data, "kind")

    @property
    def identity_id(self) -> str | None:
        return _opt_str(self.data, "identity_id")

    @property
    def at(self) -> str | None:
        return _opt_str(self.data, "at")


class VoiceStream:
    """An open voice stream: iterate it for :class:`VoiceEvent`; close it (or use it as a
    context manager) to leave, which drops the service's subscription at once.

    Iteration ends when the service ends the stream (overflow, shutdown) and no reconnection is
    left; a broken connection raises httpx2's transport error in the same case. ``reconnects``
    counts the reconnections made so far.
    """

    def __init__(
        self,
        connect: Callable[[], httpx2.Response],
        *,
        reconnect: int,
        backoff: float,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._connect = connect
        self._reconnects_left = reconnect
        self._backoff = backoff
        self._sleep = sleep
        self._response: httpx2.Response | None = None
        self._events: Iterator[httpx2.ServerSentEvent] = iter(())
        self._pending: list[VoiceEvent] = []
        self._closed = False
        self.reconnects = 0
        self._open()

    def _open(self) -> None:
        """Connect and read up to ``connected``, so that the subscription is live on return."""
        response = self._connect()
        self._response = response
        self._events = iter(httpx2.EventSource(response))
        try:
            first = next(self._events)
        except StopIteration:
            self._drop()
            raise HearthError(
                response.status_code, "invalid_response", "the voice ended before `connected`"
            ) from None
        except BaseException:
            self._drop()
            raise
        if first.event != "connected":
            self._drop()
            raise HearthError(
                response.status_code,
                "invalid_response",
                f"the voice began with {first.event!r}, not `connected`",
            )
        self._pending.append(VoiceEvent.from_sse(first.event, first.data))

    def _drop(self) -> None:
        if self._response is not None:
            self._response.close()
            self._response = None
        self._events = iter(())

    def _reconnect(self) -> bool:
        """One more connection if any is left: True when connected again. Transport failures
        while reconnecting use up attempts too, so the loop always ends."""
        while self._reconnects_left > 0 and not self._closed:
            self._reconnects_left -= 1
            self._sleep(min(self._backoff * 2**self.reconnects, MAX_BACKOFF))
            self.reconnects += 1
            try:
                self._open()
            except httpx2.TransportError:
                continue
            return True
        return False

    def __iter__(self) -> VoiceStream:
        return self

    def __next__(self) -> VoiceEvent:
        while True:
            if self._pending:
                return self._pending.pop(0)
            if self._closed:
                raise StopIteration
            try:
                sse = next(self._events)
            except (StopIteration, httpx2.TransportError):
                # Ended by the service, or broken: open again only if the caller asked to.
                self._drop()
                try:
                    again = self._reconnect()
                except BaseException:
                    self.close()
                    raise
                if again:
                    continue
                self.close()
                raise
            return VoiceEvent.from_sse(sse.event, sse.data)

    def close(self) -> None:
        self._closed = True
        self._pending.clear()
        self._drop()

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> VoiceStream:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


class WakeCalls:
    """The wake document; the voice's request. Each client's public ``wake`` (overloaded: the
    format decides between a JSON object and text, which ``op`` cannot carry) and ``voice`` (a
    stream, sync or async) call these."""

    @op
    def _wake(
        self: Transport,
        format: str = "json",
        *,
        identity_id: str | None = None,
        refresh: bool = False,
        as_of: str | None = None,
    ) -> Call[dict[str, Any] | str]:
        params = query(
            format=format,
            identity_id=identity_id,
            refresh=True if refresh else None,
            as_of=as_of,
        )
        if format in TEXT_FORMATS:
            return (yield from self._send("GET", "/v1/wake", params=params)).text
        return (yield from self._json("GET", "/v1/wake", params=params))


def voice_request(
    t: Transport, identity_id: str, reconnect: int, read_timeout: float
) -> httpx2.Request:
    """The voice's streaming request, which each client sends its own way."""
    if reconnect < 0:
        raise ValueError("reconnect is a number of attempts, 0 or more")
    timeout = httpx2.Timeout(t._http.timeout.connect, read=read_timeout)
    headers = t._headers(True, {"Accept": "text/event-stream"})
    return t._http.build_request(
        "GET",
        "/v1/wake/voice",
        params=query(identity_id=identity_id),
        headers=headers,
        timeout=timeout,
    )


WAKE_DOC = """The wake of the caller's project: the JSON document (``json``, the default), the
Markdown (``md``) or one-fact-per-line (``math``) text, or the provider payload (``anthropic``:
``{"system": ...}``, ``openai``: ``{"messages": [...]}``; take that member rather than the whole
body, which also carries ``_welcomed``). ``identity_id`` names the focal identity; ``refresh``
skips the service's few-second cache; ``as_of`` (RFC 3339 with a zone) answers with the memories
as they stood at that time (``you_remember``; the rest is the present), built anew."""

VOICE_DOC = """Listen to the changes of ``identity_id`` (id or DID) and of the whole project.

Returns once ``connected`` has arrived (it is the first event the stream yields); refusals raise
:class:`HearthError` here. ``reconnect`` is how many times a stream that ends or breaks is
opened again (0: never), pausing ``backoff`` seconds, doubled each time up to 30 s.
``read_timeout`` is the longest silence accepted (the service speaks at least every 15 s)."""
