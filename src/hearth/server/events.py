"""The event bus: every change a mutation makes, delivered to this process's voice streams and
listeners, and through Redis to every other process of the deployment (docs/voice.md).

Without Redis the bus is in-process: one server process sees all changes. With
``SERVICE_REDIS_URL`` a change is delivered here at once and published on one Redis pub/sub
channel; each process keeps one subscriber connection and delivers what other processes publish
(its own messages, recognised by an origin id, are not delivered twice).

Before any of that, ``publish`` bumps the project's change stamp in the database (the ``stamp``
hook, services/wake_stamps.py): that, not Redis, is what keeps every process's wake cache exact.

Redis is never allowed to fail or slow a mutation or a stream: the Redis publish runs after the
response, in one sender task per process, each call under one deadline
(``SERVICE_REDIS_TIMEOUT_MS``); a failure is logged (once per outage) and counted, a breaker
then skips Redis for a while, and the subscriber reconnects with backoff while local streams go
on. What other processes publish during an outage is lost to this process's streams; pub/sub
keeps no history, and the voice stream makes no delivery guarantee beyond "while connected".
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import redis.asyncio as redis_asyncio
import structlog
from prometheus_client import CollectorRegistry, Counter
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import RedisError

from .json_types import JsonObject
from .redis_calls import quick_client

_log = structlog.get_logger("hearth.events")

# Failures below redis-py's own exception mapping (DNS, our deadline) degrade the same way.
_STORE_ERRORS: tuple[type[BaseException], ...] = (RedisError, OSError, TimeoutError)

CHANNEL = "hearth:changes"
_FLUSH_ON_CLOSE_S = 1.0  # what aclose waits for changes still queued for Redis


@dataclass(frozen=True)
class Change:
    """One committed mutation, as the voice stream and the wake's cache see it."""

    project_id: str
    identity_id: str | None  # None: a project-level change
    key: str  # the wake section it touches (`you_remember`, `you_own`, ...)
    kind: str  # what happened (`memory_stored`, `wallet_funded`, ...)
    details: JsonObject = field(hash=False)  # ids of what changed; never secrets
    at: str  # RFC 3339 UTC, when the change was seen committed

    def to_dict(self) -> JsonObject:
        return asdict(self)

    @classmethod
    def from_dict(cls, raw: Any) -> Change:
        if not isinstance(raw, dict):
            raise ValueError("a change is a JSON object")
        identity = raw.get("identity_id")
        details = raw.get("details")
        values = (raw.get("project_id"), raw.get("key"), raw.get("kind"), raw.get("at"))
        if not all(isinstance(v, str) for v in values) or not isinstance(details, dict):
            raise ValueError("a change needs project_id, key, kind, at and details")
        if identity is not None and not isinstance(identity, str):
            raise ValueError("identity_id is a string or null")
        return cls(raw["project_id"], identity, raw["key"], raw["kind"], details, raw["at"])


Listener = Callable[[Change], None]
Stamp = Callable[[str], Awaitable[None]]  # bumps a project's change stamp; never raises


class Subscription:
    """One voice stream's view of the bus: the changes of one project (and of one identity plus
    the project-level ones, when ``identity_id`` is set), queued until the stream sends them.

    The queue is bounded: a client that stops reading must not grow the server's memory. When it
    overflows the subscription is closed, the stream ends, and the client reconnects (and reads
    the wake again to catch up on what it missed).
    """

    def __init__(self, project_id: str, identity_id: str | None, maxsize: int) -> None:
        self.project_id = project_id
        self.identity_id = identity_id
        self._queue: asyncio.Queue[Change | None] = asyncio.Queue(maxsize)
        self.closed = False
        self.overflowed = False

    def wants(self, change: Change) -> bool:
        if change.project_id != self.project_id:
            return False
        return (
            self.identity_id is None
            or change.identity_id is None
            or change.identity_id == self.identity_id
        )

    def offer(self, change: Change) -> None:
        if self.closed:
            return
        if self._queue.qsize() >= self._queue.maxsize - 1:
            # The last slot is kept for the end-of-stream marker.
            self.overflowed = True
            self.close()
            return
        self._queue.put_nowait(change)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._queue.put_nowait(None)

    async def next(self, timeout: float) -> Change | None:
        """The next change; None when ``timeout`` passes first. Raises ``EOFError`` once the
        subscription is closed (overflow or shutdown) and everything queued was read."""
        try:
            async with asyncio.timeout(max(timeout, 0)):
                item = await self._queue.get()
        except TimeoutError:
            return None
        if item is None:
            raise EOFError
        return item


class EventBus:
    """In-process delivery, plus Redis pub/sub fan-out when a Redis URL is configured."""

    def __init__(
        self,
        redis_url: str | None = None,
        *,
        registry: CollectorRegistry | None = None,
        channel: str = CHANNEL,
        queue_size: int = 256,
        timeout_s: float = 0.05,
        breaker_s: float = 5.0,
        stamp: Stamp | None = None,
        outbox_size: int = 10_000,
    ) -> None:
        self.origin = uuid.uuid4().hex  # tells this process's own messages apart
        self.channel = channel
        self.queue_size = max(queue_size, 2)
        self._subscriptions: set[Subscription] = set()
        self._listeners: list[Listener] = []
        self._timeout_s = timeout_s
        self._breaker_s = breaker_s
        self._open_until = 0.0
        self._publish_healthy = True
        self._stamp = stamp
        # Changes waiting for the sender task; bounded, so that a Redis slower than the service's
        # mutations drops changes (counted) instead of growing the process.
        self._outbox: asyncio.Queue[str] = asyncio.Queue(outbox_size)
        self._sender: asyncio.Task[None] | None = None
        self._listen_task: asyncio.Task[None] | None = None
        self._subscribed = asyncio.Event()
        self._closing = False
        self.published = Counter(
            "hearth_voice_changes",
            "Changes published on the event bus, by kind.",
            ("kind",),
            registry=registry,
        )
        self.publish_failures = Counter(
            "hearth_voice_publish_failures",
            "Changes that could not be published to Redis (delivered in this process only).",
            registry=registry,
        )
        # `skipped`: the breaker was open and no call was made; `dropped`: the outbox was full.
        self.redis_publishes = Counter(
            "hearth_voice_redis_publishes",
            "Publishes of changes to Redis, by outcome (done, failed, skipped, dropped).",
            ("outcome",),
            registry=registry,
        )
        url = redis_url.strip() if redis_url else ""
        self.backend = "redis" if url else "memory"
        self._pub: redis_asyncio.Redis | None = None
        self._sub: redis_asyncio.Redis | None = None
        if url:
            # One attempt under the deadline, like the limiter (redis_calls.py): the sender
            # must not fall behind the mutations for long.
            self._pub = quick_client(url, timeout_s)
            # The subscriber waits for messages indefinitely; health checks notice a dead link.
            self._sub = redis_asyncio.Redis.from_url(
                url,
                socket_connect_timeout=2.0,
                health_check_interval=15,
                retry=Retry(NoBackoff(), 0),
            )

    # --- lifecycle ------------------------------------------------------------------------------

    async def start(self, wait_s: float = 2.0) -> None:
        """Start the Redis subscriber and wait (briefly) until it listens, so that a process
        that reports itself started already receives the other processes' changes. A Redis
        that is down does not stop the service from starting."""
        if self._sub is None or self._listen_task is not None:
            return
        self._listen_task = asyncio.get_running_loop().create_task(self._listen())
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(wait_s):
                await self._subscribed.wait()

    async def aclose(self) -> None:
        self._closing = True
        for subscription in list(self._subscriptions):
            subscription.close()
        self._subscriptions.clear()
        # What is already queued gets a brief chance; a stopping process does not wait longer.
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(_FLUSH_ON_CLOSE_S):
                await self.flush()
        if self._sender is not None:
            self._sender.cancel()
            await asyncio.gather(self._sender, return_exceptions=True)
            self._sender = None
        if self._listen_task is not None:
            self._listen_task.cancel()
            await asyncio.gather(self._listen_task, return_exceptions=True)
            self._listen_task = None
        for client in (self._pub, self._sub):
            if client is not None:
                with contextlib.suppress(*_STORE_ERRORS):
                    await client.aclose()

    async def redis_up(self) -> bool:
        """Whether Redis answers a PING within the bus's deadline (False without Redis)."""
        if self._pub is None:
            return False
        try:
            async with asyncio.timeout(self._timeout_s):
                return bool(await self._pub.ping())
        except _STORE_ERRORS:
            return False

    # --- subscribers ----------------------------------------------------------------------------

    def subscribe(self, project_id: str, identity_id: str | None = None) -> Subscription:
        subscription = Subscription(project_id, identity_id, self.queue_size)
        if self._closing:
            subscription.close()
        else:
            self._subscriptions.add(subscription)
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        self._subscriptions.discard(subscription)

    @property
    def subscribers(self) -> int:
        return len(self._subscriptions)

    def add_listener(self, callback: Listener) -> Callable[[], None]:
        """Call ``callback`` for every change this process sees (published here or received
        from Redis), synchronously: it must be quick (invalidate a cache, set a flag). Returns
        the function that removes it."""
        self._listeners.append(callback)

        def remove() -> None:
            with contextlib.suppress(ValueError):
                self._listeners.remove(callback)

        return remove

    # --- publishing -----------------------------------------------------------------------------

    async def publish(self, change: Change, *, stamped: bool = False) -> None:
        """Stamp the change's project, deliver the change here, and queue it for the other
        processes. When it returns, every later wake read in any process misses what was cached
        before, and this process's streams and listeners have the change. Never waits on Redis
        and never raises for a store failure. ``stamped``: the write that made the change
        bumped the stamp in its own transaction (server/changes.py), so no second bump."""
        self.published.labels(change.kind).inc()
        if self._stamp is not None and not stamped:
            await self._stamp(change.project_id)
        self._deliver(change)
        if self._pub is None:
            return
        payload = json.dumps({"origin": self.origin, "change": change.to_dict()})
        try:
            self._outbox.put_nowait(payload)
        except asyncio.QueueFull:
            self._failed("dropped")
            return
        sender = self._sender
        if sender is None or sender.done():
            self._sender = asyncio.get_running_loop().create_task(self._send())

    async def flush(self) -> None:
        """Wait until every change queued for Redis was published, failed or skipped."""
        await self._outbox.join()

    async def _send(self) -> None:
        assert self._pub is not None
        while True:
            payload = await self._outbox.get()
            try:
                await self._publish_one(payload)
            except Exception:  # a bug, not an outage: reported, and the next change still goes
                _log.exception("voice_publish_crashed")
            finally:
                self._outbox.task_done()

    async def _publish_one(self, payload: str) -> None:
        assert self._pub is not None
        if time.monotonic() < self._open_until:
            self._failed("skipped")
            return
        try:
            async with asyncio.timeout(self._timeout_s):
                await self._pub.publish(self.channel, payload)
        except _STORE_ERRORS as exc:
            self._failed("failed")
            self._open_until = time.monotonic() + self._breaker_s
            if self._publish_healthy:
                self._publish_healthy = False
                # Only the exception type: messages can carry hosts or, for auth errors, more.
                _log.warning(
                    "voice_publish_unavailable",
                    error=type(exc).__name__,
                    retry_in_s=self._breaker_s,
                )
            return
        self.redis_publishes.labels("done").inc()
        if not self._publish_healthy:
            self._publish_healthy = True
            _log.info("voice_publish_recovered")

    def _failed(self, outcome: str) -> None:
        self.redis_publishes.labels(outcome).inc()
        self.publish_failures.inc()

    def _deliver(self, change: Change) -> None:
        for subscription in list(self._subscriptions):
            if subscription.wants(change):
                subscription.offer(change)
                if subscription.closed:
                    self._subscriptions.discard(subscription)
        for listener in list(self._listeners):
            try:
                listener(change)
            except Exception:  # one broken listener must not starve the others or the stream
                _log.exception("voice_listener_failed", kind=change.kind)

    # --- receiving from Redis -------------------------------------------------------------------

    async def _listen(self) -> None:
        assert self._sub is not None
        backoff = 0.25
        down = False
        while not self._closing:
            pubsub = self._sub.pubsub(ignore_subscribe_messages=True)
            try:
                await pubsub.subscribe(self.channel)
                self._subscribed.set()
                if down:
                    down = False
                    _log.info("voice_subscriber_recovered")
                backoff = 0.25
                while True:
                    message = await pubsub.get_message(timeout=1.0)
                    if message is not None and message.get("type") == "message":
                        self._receive(message.get("data"))
            except _STORE_ERRORS as exc:
                if not down:
                    down = True
                    _log.warning("voice_subscriber_unavailable", error=type(exc).__name__)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 5.0)
            finally:
                with contextlib.suppress(*_STORE_ERRORS):
                    await pubsub.aclose()  # type: ignore[no-untyped-call]

    def _receive(self, data: Any) -> None:
        try:
            envelope = json.loads(data)
            if not isinstance(envelope, dict):
                raise ValueError("an envelope is a JSON object")
            if envelope.get("origin") == self.origin:
                return  # delivered here when it was published
            change = Change.from_dict(envelope.get("change"))
        except (ValueError, TypeError) as exc:
            _log.warning("voice_message_ignored", error=type(exc).__name__)
            return
        self._deliver(change)


__all__ = ["CHANNEL", "Change", "EventBus", "Listener", "Subscription"]
