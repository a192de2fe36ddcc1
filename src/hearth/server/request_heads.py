"""Bounds on request heads: their size, their number of header fields, and the time they take.

uvicorn's httptools protocol (what ``uvicorn[standard]`` picks) reads a head of any size at any
pace: a 32 MB header or 2,000 of them reached the app, and a connection holding half a head was
kept for ever. ``HeadLimitedProtocol`` is that protocol with three bounds added:

- the head (request line and header fields, counted as ``name: value`` lines) is at most
  ``max_bytes``, and it has at most ``max_count`` fields; beyond either, 431 in the error shape;
- a head must be complete within ``timeout_s`` of its first byte (of the connection, for the
  first request): otherwise 408 when part of one arrived, or a silent close when nothing did.
  Between requests, uvicorn's keep-alive timeout governs an idle connection as before.

Sizes are checked as the parser reports each part, and once more on the raw bytes of a head still
incomplete at the end of a read, so that no single unfinished line can grow past the bound in the
parser's buffer. Everything else (keep-alive, pipelining, WebSocket upgrades) is uvicorn's.
"""

from __future__ import annotations

import asyncio
import functools
import json
import time
from asyncio import TimerHandle
from dataclasses import dataclass
from typing import Any, cast

import httptools
from uvicorn.config import Config
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol
from uvicorn.server import ServerState

from .access import REQUEST_ID_HEADER, log_request, request_id_of
from .observability import REFUSALS

# After a refusal, how long the rest of a head is read and dropped before the connection closes:
# closing with unread input makes the kernel reset the connection, and a client still sending
# would lose the answer it is owed.
LINGER_S = 2.0


@dataclass(frozen=True)
class HeadLimits:
    max_bytes: int
    max_count: int
    timeout_s: float


@dataclass(frozen=True)
class _Refusal:
    status: int
    error: str
    message: str


class _HeadRefused(Exception):
    """Raised inside a parser callback to stop parsing; the refusal is kept on the protocol."""


def head_limited_protocol(limits: HeadLimits) -> type[asyncio.Protocol]:
    """The protocol to pass as ``http=`` to uvicorn. A partial rather than a class made on the
    fly: uvicorn pickles its config into each worker process, and a partial of a module-level
    class pickles; uvicorn only ever calls what it is given, so it need not be a class."""
    return cast("type[asyncio.Protocol]", functools.partial(HeadLimitedProtocol, limits=limits))


# uvicorn's application state, as its protocols take it (its type, not a row nor JSON).
AppState = dict[str, Any]


class HeadLimitedProtocol(HttpToolsProtocol):
    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: AppState,
        _loop: asyncio.AbstractEventLoop | None = None,
        *,
        limits: HeadLimits,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self.limits = limits
        self._head_timer: TimerHandle | None = None
        self._in_head = True  # from the end of a message (or the start) to the end of a head
        self._head_begun = False  # the parser saw the first byte of a request
        self._raw = 0  # bytes read while the head in progress stayed incomplete
        self._crossed = False  # the read being parsed ended a head or a message
        self._size = 0  # the parsed part of the head: request target and field lines
        self._count = 0
        self._refusal: _Refusal | None = None
        self._lingering = False  # refused: the answer is sent, input is dropped until close
        self._linger_timer: TimerHandle | None = None
        self._began = time.perf_counter()

    # --- connection and reads ------------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()  # a client that connects owes a head, even if it never sends a byte

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if self._linger_timer is not None:
            self._linger_timer.cancel()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        # uvicorn's data_received, with the refusals answered as ours and the raw-size check.
        if self._lingering:
            return
        self._unset_keepalive_if_required()
        if self.cycle is None or self.cycle.response_complete:
            # Any byte on an idle connection starts the clock (a drip of blank lines included:
            # uvicorn's keep-alive timer, which it just cancelled, would otherwise never return).
            self._arm()
        self._crossed = False
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            if self._should_upgrade():
                self.handle_websocket_upgrade()
            else:
                self._unsupported_upgrade_warning()
            return
        except httptools.HttpParserError:
            if self._refusal is None:
                self.logger.warning("Invalid HTTP request received.")
            self._refuse(
                self._refusal or _Refusal(400, "bad_request", "The request is not valid HTTP/1.1.")
            )
            return
        if self._in_head and not self._crossed:
            # A head unfinished before this read and still unfinished after it: every byte of
            # the read was head. A read that crossed a boundary (a head or a whole message
            # ended in it) holds body bytes too, so it is not counted; the parser's own counts
            # above still bound the head, and the next read is counted again.
            self._raw += len(data)
            if self._raw > self.limits.max_bytes:
                self._refuse(self._too_large())

    # --- parser callbacks ----------------------------------------------------------------------

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._head_begun = True
        self._size = self._count = 0
        self._refusal = None
        self._began = time.perf_counter()
        self._arm()  # a pipelined head, read while an earlier response is still running

    def on_url(self, url: bytes) -> None:
        self._size += len(url)
        if self._size > self.limits.max_bytes:
            self._stop(self._too_large())
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._count += 1
        self._size += len(name) + len(value) + 4  # "name: value\r\n"
        if self._count > self.limits.max_count:
            self._stop(
                _Refusal(
                    431,
                    "request_header_fields_too_large",
                    f"A request may carry at most {self.limits.max_count} header fields.",
                )
            )
        if self._size > self.limits.max_bytes:
            self._stop(self._too_large())
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        # The head is whole: its clock stops before the app runs (or the upgrade hands the
        # transport to the WebSocket protocol, after which this one hears nothing more).
        self._in_head = self._head_begun = False
        self._crossed = True
        self._raw = 0
        self._disarm()
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._in_head = True
        self._crossed = True
        self._raw = 0

    # --- refusing ------------------------------------------------------------------------------

    def _too_large(self) -> _Refusal:
        return _Refusal(
            431,
            "request_header_fields_too_large",
            f"The request line and header fields are limited to {self.limits.max_bytes} bytes "
            "together.",
        )

    def _stop(self, refusal: _Refusal) -> None:
        self._refusal = refusal
        raise _HeadRefused  # httptools turns it into HttpParserCallbackError in data_received

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if not self._head_begun:
            self.transport.close()  # nothing was asked: nothing to answer
            return
        self._refuse(
            _Refusal(
                408,
                "request_timeout",
                f"The request head did not arrive within {self.limits.timeout_s:g} seconds.",
            )
        )

    def _refuse(self, refusal: _Refusal) -> None:
        """Answer ``refusal`` in the error shape, close the connection, and log the request."""
        self._disarm()
        if self._lingering or self.transport.is_closing():
            return
        request_id = request_id_of(self.headers or ())
        # Never interleave with a response still being written (a pipelined request's).
        if self.cycle is None or self.cycle.response_complete:
            body = json.dumps(
                {"error": refusal.error, "message": refusal.message}, separators=(",", ":")
            ).encode()
            headers = [
                *self.server_state.default_headers,
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
                (REQUEST_ID_HEADER, request_id.encode()),
                (b"x-welcomed", b"5"),
            ]
            out = [STATUS_LINE[refusal.status]]
            for name, value in headers:
                out += [name, b": ", value, b"\r\n"]
            self.transport.write(b"".join([*out, b"\r\n", body]))
        if self.transport.can_write_eof():
            self.transport.write_eof()  # the client reads the answer, then the end
            self._lingering = True
            self.flow.resume_reading()
            self._linger_timer = self.loop.call_later(LINGER_S, self.transport.close)
        else:  # TLS cannot half-close
            self.transport.close()
        # The method is known once the parser reached the target (``url`` is then non-empty).
        method = self.parser.get_method().decode("ascii") if getattr(self, "url", b"") else None
        log_request(request_id, method, None, refusal.status, self._began)
        REFUSALS.labels(refusal.error).inc()

    # --- the head's clock ----------------------------------------------------------------------

    def _arm(self) -> None:
        if self._head_timer is None and self._in_head:
            self._head_timer = self.loop.call_later(self.limits.timeout_s, self._head_timed_out)

    def _disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None
