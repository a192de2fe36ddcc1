"""The bridge hub: one live session per bridged runtime, and the API the hosted orchestrator
uses to have the user's bridge decrypt and encrypt thoughts.

The hub is per app and per process, reached with :func:`hub_for` (``hub_for(request.app)`` in a
route, ``hub_for(app)`` in the orchestrator): a module-level registry keyed by the app object,
created on first use, so neither ``app.py`` nor ``context.py`` needs to know about it. A session
lives in the process whose worker accepted the WebSocket: with several server workers, a
runtime's requests must be made in that process (``hub.connected(runtime_id)`` says whether it
is here); see docs/bridge.md.

Every request is built here (request_id, op, base64 fields, the context with strand_id,
thought_seq and issued_at), signed by the per-runtime key over ``bridge_request_digest``, sent,
and its reply awaited with a timeout; the reply's HMAC is checked under the session secret
before anything in it is used.
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import structlog

from hearth.proofs import EncodingError, b64_decode, format_timestamp
from hearth.proofs.bridge import GCM_NONCE_BYTES, build_request, reply_mac_ok
from hearth.proofs.key_types import Ed25519PrivateKey

from ..json_types import JsonObject

log = structlog.get_logger("hearth.bridge")

REQUEST_TIMEOUT_S = 10.0
HANDSHAKE_TIMEOUT_S = 10.0


# --- failures the orchestrator sees -------------------------------------------------------------


class BridgeError(Exception):
    """A bridge request that gave no usable result; ``code`` names why."""

    code = "bridge_error"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code


class BridgeUnavailable(BridgeError):
    """No bridge session for this runtime in this process (never connected, gone, replaced)."""

    code = "bridge_unavailable"


class BridgeTimeout(BridgeError):
    """The bridge did not answer within the timeout."""

    code = "bridge_timeout"


class BridgeReplyInvalid(BridgeError):
    """A reply whose HMAC does not verify under the session secret, or of the wrong shape: it
    is not used, whatever it says."""

    code = "bridge_reply_invalid"


class BridgeRefused(BridgeError):
    """The bridge refused the request (an authentic, HMAC-checked refusal); ``code`` is the
    bridge's reason: ``bad_signature``, ``stale_request``, ``replayed_request``,
    ``decrypt_failed``, ``malformed_request``..."""


# --- sessions -----------------------------------------------------------------------------------


Send = Callable[[JsonObject], Awaitable[None]]
Close = Callable[[int, str], Awaitable[None]]


@dataclass(eq=False)
class Session:
    """One verified bridge connection. The secret and the signing key never leave the process
    and are not in the repr."""

    runtime_id: str
    project_id: str
    identity_id: str | None
    key_id: str
    secret: bytes = field(repr=False)
    signing_key: Ed25519PrivateKey = field(repr=False)
    send_message: Send = field(repr=False)
    close_connection: Close = field(repr=False)
    session_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    pending: dict[str, asyncio.Future[JsonObject]] = field(default_factory=dict, repr=False)
    _send_lock: asyncio.Lock = field(default_factory=asyncio.Lock, init=False, repr=False)

    async def send(self, message: JsonObject) -> None:
        # One frame at a time on the socket, whatever the number of callers.
        async with self._send_lock:
            await self.send_message(message)

    def fail_pending(self, reason: str) -> None:
        for future in self.pending.values():
            if not future.done():
                future.set_exception(BridgeUnavailable(f"the bridge session ended: {reason}"))
        self.pending.clear()


class BridgeHub:
    """The sessions of one app in this process, and the orchestrator's API."""

    def __init__(
        self,
        *,
        request_timeout: float = REQUEST_TIMEOUT_S,
        handshake_timeout: float = HANDSHAKE_TIMEOUT_S,
    ) -> None:
        self.request_timeout = request_timeout
        self.handshake_timeout = handshake_timeout
        self.loop: asyncio.AbstractEventLoop | None = None
        self._sessions: dict[str, Session] = {}

    # -- sessions --

    def session(self, runtime_id: str) -> Session | None:
        return self._sessions.get(runtime_id)

    def connected(self, runtime_id: str) -> bool:
        """Whether this process holds a bridge session for the runtime."""
        return runtime_id in self._sessions

    def sessions(self) -> frozenset[str]:
        """The runtimes whose bridge session this process holds (the worker claims them)."""
        return frozenset(self._sessions)

    async def attach(self, session: Session) -> None:
        """Make ``session`` the runtime's session; an older one is closed (code 4000,
        ``replaced``): one session per runtime, the newest wins, since a bridge that
        reconnects after a network cut must not wait for the old socket to time out."""
        self.loop = asyncio.get_running_loop()
        old = self._sessions.get(session.runtime_id)
        self._sessions[session.runtime_id] = session
        if old is not None and old is not session:
            old.fail_pending("replaced by a newer connection")
            try:
                await old.close_connection(4000, "replaced by a newer bridge connection")
            except Exception as exc:  # the old socket may already be gone
                log.info("bridge_close_failed", runtime_id=old.runtime_id, error=type(exc).__name__)

    def detach(self, session: Session) -> bool:
        """Forget ``session``; True when it was the runtime's current one."""
        session.fail_pending("disconnected")
        if self._sessions.get(session.runtime_id) is session:
            del self._sessions[session.runtime_id]
            return True
        return False

    async def disconnect(self, runtime_id: str, reason: str = "closed by the service") -> bool:
        """Close the runtime's session (a deleted runtime, a rotated control token); False when
        this process holds none."""
        session = self._sessions.get(runtime_id)
        if session is None:
            return False
        session.fail_pending(reason)
        await session.close_connection(4001, reason[:100])
        return True

    def deliver(self, session: Session, message: JsonObject) -> None:
        """A reply frame from the bridge: hand it to the request waiting for it. Replies to no
        waiting request (late, unknown or repeated ids) are dropped."""
        request_id = message.get("request_id")
        if not isinstance(request_id, str):
            log.info("bridge_reply_dropped", runtime_id=session.runtime_id, why="no request_id")
            return
        future = session.pending.get(request_id)
        if future is None or future.done():
            log.info("bridge_reply_dropped", runtime_id=session.runtime_id, why="not awaited")
            return
        future.set_result(message)

    # -- requests --

    def _require(self, runtime_id: str) -> Session:
        session = self._sessions.get(runtime_id)
        if session is None:
            raise BridgeUnavailable(
                f"no bridge is connected for runtime {runtime_id} in this process"
            )
        return session

    async def exchange(self, runtime_id: str, request: JsonObject) -> JsonObject:
        """Send one built request and answer its verified ``result``; BridgeRefused for an
        authentic refusal, BridgeReplyInvalid for a reply that does not verify, BridgeTimeout,
        BridgeUnavailable. (``decrypt``/``encrypt`` build the request; tests send others.)"""
        session = self._require(runtime_id)
        request_id = str(request["request_id"])
        future: asyncio.Future[JsonObject] = asyncio.get_running_loop().create_future()
        session.pending[request_id] = future
        started = time.monotonic()
        outcome = "ok"
        try:
            await session.send(request)
            try:
                reply = await asyncio.wait_for(future, self.request_timeout)
            except TimeoutError:
                outcome = "timeout"
                raise BridgeTimeout(
                    f"the bridge did not answer within {self.request_timeout:g} s"
                ) from None
            result = reply.get("result")
            if not isinstance(result, dict) or not reply_mac_ok(
                session.secret, request_id, result, reply.get("hmac")
            ):
                outcome = "bad_hmac"
                raise BridgeReplyInvalid(
                    "the bridge's reply does not verify under the session secret"
                )
            if "error" in result:
                outcome = "refused"
                code = result.get("error")
                raise BridgeRefused(
                    f"the bridge refused the request: {result.get('message')}",
                    code=code if isinstance(code, str) else "refused",
                )
            return result
        except BridgeError:
            raise
        except Exception:
            outcome = "send_failed"
            raise BridgeUnavailable("the bridge connection failed while sending") from None
        finally:
            session.pending.pop(request_id, None)
            # ids, op and outcome only: never payloads, keys or the secret.
            log.info(
                "bridge_request",
                runtime_id=runtime_id,
                request_id=request_id,
                op=request.get("op"),
                outcome=outcome,
                ms=round((time.monotonic() - started) * 1000, 1),
            )

    def build(
        self, runtime_id: str, op: str, *, payload: bytes, nonce: bytes, strand_id: str, seq: int
    ) -> JsonObject:
        """A request for the runtime's session, signed by the per-runtime key, issued now."""
        session = self._require(runtime_id)
        return build_request(
            session.signing_key,
            op=op,
            payload=payload,
            nonce=nonce,
            strand_id=strand_id,
            thought_seq=seq,
            issued_at=format_timestamp(datetime.now(UTC)),
        )

    async def decrypt(
        self, runtime_id: str, strand_id: str, thought_seq: int, nonce: bytes, ciphertext: bytes
    ) -> bytes:
        """The plaintext of a stored thought, opened by the user's bridge under K_master."""
        request = self.build(
            runtime_id,
            "decrypt",
            payload=ciphertext,
            nonce=nonce,
            strand_id=strand_id,
            seq=thought_seq,
        )
        result = await self.exchange(runtime_id, request)
        if set(result) != {"plaintext"}:
            raise BridgeReplyInvalid("a decrypt result has exactly the field plaintext")
        try:
            return b64_decode(result["plaintext"], what="plaintext")
        except (EncodingError, TypeError):
            raise BridgeReplyInvalid("the plaintext is not standard base64") from None

    async def encrypt(
        self, runtime_id: str, strand_id: str, thought_seq: int, plaintext: bytes
    ) -> tuple[bytes, bytes]:
        """(nonce, ciphertext) of a new thought, sealed by the user's bridge under K_master.

        The request's 12-byte ``nonce`` is random and signed with it (the specification's
        shape), but the bridge draws the AES-GCM nonce itself and answers it: a hosted party
        that chose the nonce could make the bridge reuse one under K_master."""
        request = self.build(
            runtime_id,
            "encrypt",
            payload=plaintext,
            nonce=os.urandom(GCM_NONCE_BYTES),
            strand_id=strand_id,
            seq=thought_seq,
        )
        result = await self.exchange(runtime_id, request)
        if set(result) != {"nonce", "ciphertext"}:
            raise BridgeReplyInvalid("an encrypt result has exactly the fields nonce, ciphertext")
        try:
            nonce = b64_decode(result["nonce"], length=GCM_NONCE_BYTES, what="nonce")
            ciphertext = b64_decode(result["ciphertext"], what="ciphertext")
        except (EncodingError, TypeError):
            raise BridgeReplyInvalid("the encrypt result is not standard base64") from None
        return nonce, ciphertext


_HUBS: weakref.WeakKeyDictionary[Any, BridgeHub] = weakref.WeakKeyDictionary()


def hub_for(app: Any) -> BridgeHub:
    """The hub of ``app`` in this process, created on first use."""
    hub = _HUBS.get(app)
    if hub is None:
        hub = _HUBS[app] = BridgeHub()
    return hub


__all__ = [
    "HANDSHAKE_TIMEOUT_S",
    "REQUEST_TIMEOUT_S",
    "BridgeError",
    "BridgeHub",
    "BridgeRefused",
    "BridgeReplyInvalid",
    "BridgeTimeout",
    "BridgeUnavailable",
    "Session",
    "hub_for",
]
