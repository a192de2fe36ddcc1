"""The user-side bridge of a bridged runtime: K_master stays on this machine.

The sidecar opens an outbound WebSocket to ``/v1/runtimes/{id}/bridge`` with the runtime's
control token, proves its registered Ed25519 bridge key in the handshake, and then answers the
hosted loop's ``decrypt`` and ``encrypt`` requests. Before acting on a request it checks, in
this order: its shape, the per-runtime signature (under the key the service sent in the
handshake, or the one pinned with ``pinned_runtime_key``), the 60 s replay window of
``issued_at`` and that its ``request_id`` is new. A refused request gets an error reply
(HMAC-signed like any reply), never a result. Thoughts are AES-256-GCM under K_master with the
AAD ``strand-thought/v1`` 0x00 strand id 0x00 thought_seq; the GCM nonce of an ``encrypt`` is
always drawn here.

Connections that fail are retried with exponential backoff (bounded, with jitter); failures
that retrying cannot fix (the service refuses the control token or the bridge key, or another
bridge connection replaced this one) end :meth:`BridgeSidecar.run` with :class:`BridgeFatal`.
Nothing here logs key material, the control token, the session secret or any plaintext: log
lines carry ids, ops and outcomes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus

from hearth.proofs import EncodingError, b64_decode, b64_encode
from hearth.proofs.bridge import (
    HANDSHAKE_NONCE_BYTES,
    BridgeRequest,
    ReplayGuard,
    RequestRefused,
    new_handshake_nonce,
    parse_request,
    reply_mac,
    session_secret,
    sign_bridge_auth,
    verify_request,
)
from hearth.proofs.key_types import Ed25519PrivateKey
from hearth.proofs.thoughts import ThoughtOpenError, open_thought, seal_thought

log = logging.getLogger("hearth.bridge")

# Close codes after which reconnecting cannot help (see hearth.server.bridge.connection).
_FATAL_CLOSE = {4000: "replaced by a newer bridge connection", 4401: "bridge key refused"}
_FATAL_STATUS = (401, 403, 404)


class BridgeFatal(Exception):
    """A refusal that retrying cannot fix; the message says which and why."""


class BridgeGaveUp(Exception):
    """``max_attempts`` consecutive connection attempts failed."""


class _Retry(Exception):
    """One attempt failed in a way a later attempt may not."""


def bridge_url(base_url: str, runtime_id: str) -> str:
    """The WebSocket URL of a runtime's bridge from the service address (http -> ws, https ->
    wss); a ``ws://``/``wss://`` URL is taken as the full bridge URL."""
    parts = urlsplit(base_url.rstrip("/"))
    if parts.scheme in ("ws", "wss"):
        return base_url
    if parts.scheme not in ("http", "https"):
        raise ValueError("the service address must be http(s):// or ws(s)://")
    scheme = "wss" if parts.scheme == "https" else "ws"
    path = f"{parts.path}/v1/runtimes/{runtime_id}/bridge"
    return urlunsplit((scheme, parts.netloc, path, "", ""))


@dataclass
class BridgeConfig:
    runtime_id: str
    url: str  # the bridge's WebSocket URL (see bridge_url)
    control_token: str = field(repr=False)
    bridge_key: Ed25519PrivateKey = field(repr=False)
    k_master: bytes = field(repr=False)
    pinned_runtime_key: bytes | None = None  # refuse a handshake announcing another key
    initial_delay: float = 0.5
    max_delay: float = 30.0
    max_attempts: int | None = None  # consecutive failures before giving up; None: never
    open_timeout: float = 10.0
    handshake_timeout: float = 10.0


class BridgeSidecar:
    """One bridge: :meth:`run` until :meth:`stop` (or a fatal refusal)."""

    def __init__(self, config: BridgeConfig) -> None:
        if len(config.k_master) != 32:
            raise ValueError("K_master is 32 bytes")
        self.config = config
        self.guard = ReplayGuard()
        self.delays: list[float] = []  # the backoff delays slept, in order (for tests, logs)
        self.handshakes = 0
        self.served = 0
        self.refused = 0
        self.ready = threading.Event()  # set while a verified session is up
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._runtime_key: bytes | None = None
        self._secret: bytes | None = None

    # -- lifecycle --

    def stop(self) -> None:
        """Ask :meth:`run` to end; callable from any thread and from a signal handler."""
        loop, stop = self._loop, self._stop
        if loop is None or stop is None or loop.is_closed():
            return  # never started, or already ended: nothing to stop
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            stop.set()
        else:
            loop.call_soon_threadsafe(stop.set)

    async def run(self) -> None:
        """Connect, serve, reconnect with backoff; returns after :meth:`stop`. Raises
        BridgeFatal or BridgeGaveUp."""
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        failures = 0
        while not self._stop.is_set():
            try:
                await self._one_connection()
                failures = 0  # a session that was up resets the backoff
            except _Retry as exc:
                failures += 1
                log.warning("bridge connection failed (%s); attempt %d", exc, failures)
                if self.config.max_attempts is not None and failures >= self.config.max_attempts:
                    raise BridgeGaveUp(
                        f"{failures} connection attempts failed; the last: {exc}"
                    ) from None
            finally:
                self.ready.clear()
            if self._stop.is_set():
                break
            delay = self._delay(max(failures, 1))
            self.delays.append(delay)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), delay)

    def _delay(self, failures: int) -> float:
        # Exponential, capped, with "equal jitter": between half and all of the step, so that
        # bridges cut off together do not all come back at the same instant.
        step = min(self.config.max_delay, self.config.initial_delay * 2.0 ** (failures - 1))
        return step / 2 + random.uniform(0, step / 2)

    # -- one connection --

    async def _one_connection(self) -> None:
        assert self._stop is not None
        try:
            websocket = await connect(
                self.config.url,
                additional_headers={"Authorization": f"Bearer {self.config.control_token}"},
                open_timeout=self.config.open_timeout,
                max_size=16 * 1024 * 1024,
            )
        except InvalidStatus as exc:
            status = exc.response.status_code
            why = _refusal_text(bytes(exc.response.body or b""))
            if status in _FATAL_STATUS:
                raise BridgeFatal(
                    f"the service refused the bridge (HTTP {status}): {why}"
                ) from None
            raise _Retry(f"HTTP {status}") from None
        except (OSError, TimeoutError, InvalidHandshake) as exc:
            raise _Retry(type(exc).__name__) from None
        async with websocket:
            try:
                await self._handshake(websocket)
            except ConnectionClosed as exc:
                self._closed(exc)
                raise _Retry("closed during the handshake") from None
            self.handshakes += 1
            self.ready.set()
            log.info("bridge connected for runtime %s", self.config.runtime_id)
            serving = asyncio.ensure_future(self._serve(websocket))
            stopping = asyncio.ensure_future(self._stop.wait())
            try:
                await asyncio.wait({serving, stopping}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                stopping.cancel()
                if not serving.done():
                    serving.cancel()
                    await websocket.close()
            if self._stop.is_set():
                return
            ended = serving.exception()
            if isinstance(ended, ConnectionClosed):
                self._closed(ended)
                log.warning("bridge connection closed (%s); reconnecting", ended.rcvd)
                return
            if ended is not None:
                raise ended

    def _closed(self, exc: ConnectionClosed) -> None:
        if exc.rcvd is not None and exc.rcvd.code in _FATAL_CLOSE:
            raise BridgeFatal(
                f"the service closed the bridge: {_FATAL_CLOSE[exc.rcvd.code]}"
            ) from None

    async def _handshake(self, websocket: ClientConnection) -> None:
        timeout = self.config.handshake_timeout
        challenge = _json_object(await asyncio.wait_for(websocket.recv(), timeout))
        server_nonce = challenge.get("server_nonce")
        runtime_key = challenge.get("runtime_public_key")
        if (
            challenge.get("type") != "challenge"
            or challenge.get("runtime_id") != self.config.runtime_id
            or not isinstance(server_nonce, str)
            or not isinstance(runtime_key, str)
        ):
            raise _Retry("not a challenge for this runtime")
        try:
            b64_decode(server_nonce, length=HANDSHAKE_NONCE_BYTES, what="server_nonce")
            runtime_public = b64_decode(runtime_key, length=32, what="runtime_public_key")
        except EncodingError as exc:
            raise _Retry(str(exc)) from None
        pinned = self.config.pinned_runtime_key
        if pinned is not None and runtime_public != pinned:
            raise BridgeFatal(
                "the service announced a runtime key other than the pinned one; refusing"
            )
        bridge_nonce = new_handshake_nonce()
        await websocket.send(
            json.dumps(
                {
                    "type": "auth",
                    "bridge_nonce": bridge_nonce,
                    "signature": sign_bridge_auth(
                        self.config.bridge_key, self.config.runtime_id, server_nonce, bridge_nonce
                    ),
                }
            )
        )
        answer = _json_object(await asyncio.wait_for(websocket.recv(), timeout))
        if answer.get("type") == "error":
            raise BridgeFatal(
                f"the service refused the handshake: {answer.get('error')}: {answer.get('message')}"
            )
        if answer.get("type") != "ready":
            raise _Retry("no ready frame after auth")
        self._runtime_key = runtime_public
        self._secret = session_secret(self.config.control_token, server_nonce, bridge_nonce)

    async def _serve(self, websocket: ClientConnection) -> None:
        async for frame in websocket:
            message = _json_object(frame)
            if message.get("type") != "request":
                continue
            reply = self.handle(message)
            if reply is not None:
                await websocket.send(json.dumps(reply))

    # -- requests --

    def handle(self, message: dict[str, Any], now: datetime | None = None) -> dict[str, Any] | None:
        """The reply to one request frame (None when it names no request id to answer)."""
        request_id = message.get("request_id")
        if not isinstance(request_id, str) or not request_id:
            log.warning("bridge request without a request_id dropped")
            return None
        try:
            request = parse_request(message)
            assert self._runtime_key is not None
            verify_request(self._runtime_key, request)
            self.guard.check(request.request_id, request.issued_at, now or datetime.now(UTC))
            result = self._act(request)
        except RequestRefused as refusal:
            self.refused += 1
            log.warning(
                "bridge request %s refused: %s", request_id[:36], refusal.code
            )  # the code only: the message may describe the payload's shape, never its content
            result = {"error": refusal.code, "message": refusal.message}
        else:
            self.served += 1
            log.info("bridge request %s: %s done", request.request_id, request.op)
        return self.reply(request_id, result)

    def _act(self, request: BridgeRequest) -> dict[str, Any]:
        if request.op == "decrypt":
            try:
                plaintext = open_thought(
                    self.config.k_master,
                    request.strand_id,
                    request.thought_seq,
                    request.nonce_bytes(),
                    request.payload_bytes(),
                )
            except ThoughtOpenError as exc:
                raise RequestRefused("decrypt_failed", str(exc)) from None
            return {"plaintext": b64_encode(plaintext)}
        # The GCM nonce is drawn by seal_thought, never taken from the request: a hosted party
        # that chose it could make this bridge reuse one under K_master.
        sealed = seal_thought(
            self.config.k_master, request.strand_id, request.thought_seq, request.payload_bytes()
        )
        return {"nonce": b64_encode(sealed.nonce), "ciphertext": b64_encode(sealed.ciphertext)}

    def reply(self, request_id: str, result: dict[str, Any]) -> dict[str, Any]:
        """A reply frame: the result and its HMAC under the session secret."""
        assert self._secret is not None
        return {
            "type": "reply",
            "request_id": request_id,
            "result": result,
            "hmac": reply_mac(self._secret, request_id, result),
        }


def _json_object(frame: str | bytes) -> dict[str, Any]:
    try:
        value = json.loads(frame)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _refusal_text(body: bytes | None) -> str:
    if not body:
        return "no details"
    try:
        data = json.loads(body)
    except ValueError:
        return "no details"
    if isinstance(data, dict):
        return f"{data.get('error')}: {data.get('message')}"
    return "no details"


__all__ = ["BridgeConfig", "BridgeFatal", "BridgeGaveUp", "BridgeSidecar", "bridge_url"]
