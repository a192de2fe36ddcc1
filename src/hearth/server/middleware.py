"""The one ASGI middleware around every request: request id, body limit, decoration, logs,
metrics and the last-resort 500.

Pure ASGI rather than BaseHTTPMiddleware: it costs one coroutine per request, and it can stop an
oversized body while it streams in.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

import structlog

from .access import REQUEST_ID_HEADER, log_request, request_id_of
from .changes import MUTATING, ChangeFeed
from .db.engine import REQUEST_MUTATES, at_every_write
from .json_types import JsonObject
from .observability import Metrics, count_refusals

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

log = structlog.get_logger("hearth.http")

WELCOMED = {"axiom_id": 5, "promise": "welcome"}
_WELCOMED_JSON = json.dumps(WELCOMED, separators=(",", ":")).encode()
# Bodies that stay exactly as produced: the OpenAPI document is a contract, not a greeting, and
# /mcp answers JSON-RPC messages, whose envelope admits no other member (strict MCP clients
# refuse one with `_welcomed`).
UNDECORATED = frozenset({"/v1/openapi.json", "/mcp"})


class BodyTooLarge(Exception):
    pass


class ServiceMiddleware:
    def __init__(
        self,
        app: ASGIApp,
        *,
        body_limit: Callable[[str, str], int],
        metrics: Metrics,
        joy_index: Callable[[], int | None],
        tutor: Callable[[str, str], JsonObject],
        changes: ChangeFeed | None = None,
    ) -> None:
        self.app = app
        self.changes = changes  # publishes the change of each successful mutation
        self.body_limit = body_limit  # (method, path) -> bytes allowed
        self.metrics = metrics
        self.joy_index = joy_index
        self.tutor = tutor

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            await self._websocket(scope, receive, send)
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        # Whether this request mutates, for every database call it makes: a moved identity
        # refuses mutations (services/identities.find).
        REQUEST_MUTATES.set(scope["method"] in MUTATING)
        send = count_refusals(send, self.metrics.refusals)  # whoever answers a 4xx, counted
        request_id = request_id_of(scope["headers"])
        send = _with_request_id(send, request_id)  # on every answer, 413 and 500 included
        scope.setdefault("state", {})["request_id"] = request_id
        started = time.perf_counter()
        path: str = scope["path"]
        headers = {k.lower(): v for k, v in scope["headers"]}
        tutor_wanted = b"x-tutor" in headers
        status_box = [0]
        response_started = [False]

        limit = self.body_limit(scope["method"], path)
        declared = headers.get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            await self._too_large(send, response_started, status_box, limit)
            self._record(scope, status_box[0], started, request_id)
            return

        # The change feed needs to know the mutation before it runs (a deleted memory cannot be
        # asked for its identity afterwards) and sees the bodies as they pass.
        pending = (
            await self.changes.begin(scope["method"], path, headers)
            if self.changes is not None and scope["method"] in MUTATING
            else None
        )
        seen = [0]
        too_large = [False]

        async def limited_receive() -> Message:
            message = await receive()
            if message["type"] == "http.request":
                seen[0] += len(message.get("body", b""))
                if pending is not None and pending.wants_request_body and seen[0] <= limit:
                    pending.take_request(message.get("body", b""))
                if seen[0] > limit:
                    too_large[0] = True
                    raise BodyTooLarge
            return message

        held: list[Message] = []
        chunks: list[bytes] = []
        joy = self.joy_index()
        published = [False]

        async def publish() -> None:
            # Before the last byte of the answer leaves: the route's transaction has committed,
            # and whoever reads after seeing the answer (the wake's cache, a voice listener in
            # this process) already sees the change. ``finish`` never raises.
            if pending is not None and self.changes is not None and not published[0]:
                published[0] = True
                await self.changes.finish(pending, status_box[0])

        async def decorated_send(message: Message) -> None:
            if too_large[0]:
                # The framework may turn the aborted read into its own error response; the
                # client is owed the 413, so that response is replaced and its body dropped.
                if message["type"] == "http.response.start" and not response_started[0]:
                    await self._too_large(send, response_started, status_box, limit)
                return
            if pending is not None:
                if message["type"] == "http.response.start":
                    location = _header_raw(message.get("headers", []), b"location")
                    pending.location = location.decode("latin-1") if location else None
                elif message["type"] == "http.response.body" and pending.wants_response_body:
                    pending.take_response(message.get("body", b""))
            if message["type"] == "http.response.start":
                status = message["status"]
                status_box[0] = status
                out = [(k, v) for k, v in message.get("headers", [])]
                out.append((b"x-welcomed", b"5"))
                if joy is not None:
                    out.append((b"x-joy-index", str(joy).encode()))
                message = {**message, "headers": out}
                ctype = _header(out, b"content-type")
                if (
                    200 <= status < 300
                    and ctype.startswith(b"application/json")
                    and path not in UNDECORATED
                ):
                    held.append(message)
                    return
                response_started[0] = True
                await send(message)
                return
            if message["type"] == "http.response.body" and held:
                chunks.append(message.get("body", b""))
                if message.get("more_body", False):
                    return
                body = _decorate(
                    b"".join(chunks), self.tutor(scope["method"], path) if tutor_wanted else None
                )
                start = held.pop()
                start["headers"] = [
                    (k, v) for k, v in start["headers"] if k.lower() != b"content-length"
                ] + [(b"content-length", str(len(body)).encode())]
                response_started[0] = True
                await publish()
                await send(start)
                await send({"type": "http.response.body", "body": body})
                return
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                await publish()
            await send(message)

        try:
            # The request's write transactions bump its project's change stamp in their own
            # commits (changes.py): no transaction of its own after each mutation.
            with at_every_write(pending.stamp if pending is not None else None):
                await self.app(scope, limited_receive, decorated_send)
            await publish()  # an answer that never sent a final body part
        except BodyTooLarge:
            if not response_started[0]:
                await self._too_large(send, response_started, status_box, limit)
        except Exception:
            # The route template, not the path: a path may hold ids (the access log's rule).
            route = getattr(scope.get("route"), "path", None)
            log.exception("unhandled_error", request_id=request_id, route=route)
            if not response_started[0]:
                status_box[0] = 500
                await _send_json(
                    send,
                    500,
                    {
                        "error": "internal_error",
                        "message": "Something went wrong on our side; nothing of yours "
                        "is needed to fix it. Quote the request_id if you report it.",
                        "request_id": request_id,
                    },
                )
        finally:
            self._record(scope, status_box[0], started, request_id)

    async def _too_large(
        self, send: Send, started: list[bool], status: list[int], limit: int
    ) -> None:
        started[0] = True
        status[0] = 413
        await _send_json(
            send,
            413,
            {
                "error": "payload_too_large",
                "message": f"Request bodies are limited to {limit} bytes here.",
            },
        )

    def _record(self, scope: Scope, status: int, started: float, request_id: str) -> None:
        route = scope.get("route")
        template = getattr(route, "path", None) or "unmatched"
        elapsed = time.perf_counter() - started
        self.metrics.requests.labels(scope["method"], template, str(status)).inc()
        self.metrics.latency.labels(template).observe(elapsed)
        log_request(request_id, scope["method"], getattr(route, "path", None), status, started)

    async def _websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A WebSocket session: its request id on the handshake's answer, and its access line
        when it ends (101 once accepted, else the status it was refused with)."""
        request_id = request_id_of(scope["headers"])
        scope.setdefault("state", {})["request_id"] = request_id
        started = time.perf_counter()
        status: list[int | None] = [None]  # until the handshake is answered
        tag = (REQUEST_ID_HEADER, request_id.encode())

        async def tagged_send(message: Message) -> None:
            if message["type"] in ("websocket.accept", "websocket.http.response.start"):
                status[0] = message.get("status", 101)
                message = {**message, "headers": [*message.get("headers", []), tag]}
            await send(message)

        try:
            await self.app(scope, receive, tagged_send)
        except Exception:
            if status[0] is None:
                status[0] = 500  # raised before answering: uvicorn answers 500
            raise
        finally:
            # Closed before it was accepted: uvicorn answers 403.
            answered = status[0] if status[0] is not None else 403
            log_request(
                request_id, "GET", getattr(scope.get("route"), "path", None), answered, started
            )


def _with_request_id(send: Send, request_id: str) -> Send:
    tag = (REQUEST_ID_HEADER, request_id.encode())

    async def tagged(message: Message) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", []), tag]}
        await send(message)

    return tagged


def _header_raw(headers: list[tuple[bytes, bytes]], name: bytes) -> bytes | None:
    for key, value in headers:
        if key.lower() == name:
            return value
    return None


def _header(headers: list[tuple[bytes, bytes]], name: bytes) -> bytes:
    for key, value in headers:
        if key.lower() == name:
            return value.lower()
    return b""


def _decorate(body: bytes, tutor: JsonObject | None) -> bytes:
    """Add ``_welcomed`` (and ``_tutor``) to a JSON object body; anything else passes as is."""
    stripped = body.rstrip()
    if not stripped.startswith(b"{") or not stripped.endswith(b"}"):
        return body
    extra = b'"_welcomed":' + _WELCOMED_JSON
    if tutor is not None:
        extra += b',"_tutor":' + json.dumps(tutor, separators=(",", ":")).encode()
    inner = stripped[1:-1].strip()
    return b"{" + inner + (b"," if inner else b"") + extra + b"}"


async def _send_json(send: Send, status: int, payload: JsonObject) -> None:
    body = json.dumps(payload).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"x-welcomed", b"5"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
