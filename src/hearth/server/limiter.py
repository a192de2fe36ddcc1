"""Per-IP rate limiting for the service.

Counters are fixed windows anchored at the first hit of a (scope, key): the first attempt opens
a window of ``window_s`` seconds, up to ``limit`` attempts inside it are admitted, and the
counter disappears when the window ends. Refused attempts still count but never extend the
window, so a client that keeps hammering is locked out for the rest of the window only. The
known trade-off of fixed windows (up to ``2 * limit`` attempts across a window boundary) is
accepted: the limits guard against abuse of cheap endpoints, not exact quotas.

With several workers the counters live in Redis; a single Lua script increments and sets the
expiry, so concurrent workers can never over-admit. The limiter must never take the service
down with it: when Redis hangs, refuses or is unreachable it fails open within one deadline
(``SERVICE_REDIS_TIMEOUT_MS``, connect included, no retry), and a circuit breaker then skips
Redis for every request while the outage lasts, but for one probe per breaker interval.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol, TypeVar

import redis.asyncio as redis_asyncio
import structlog
from prometheus_client import CollectorRegistry, Counter
from redis.exceptions import RedisError

from .redis_calls import quick_client

__all__ = [
    "Decision",
    "DisabledLimiter",
    "Limiter",
    "MemoryLimiter",
    "RedisLimiter",
    "make_limiter",
]

_log = structlog.get_logger("hearth.limiter")

_T = TypeVar("_T")

# Scopes are chosen by code, never by clients; restricting them keeps Redis keys and log lines
# free of anything a caller could inject.
_SCOPE_RE = re.compile(r"[A-Za-z0-9_.-]{1,64}")

# OSError and TimeoutError cover failures raised below redis-py's own exception mapping (DNS,
# our overall deadline); anything else is a bug and must surface rather than fail open.
_STORE_ERRORS: tuple[type[BaseException], ...] = (RedisError, OSError, TimeoutError)

# INCR and PEXPIRE in one script: two workers cannot both see themselves as the last admitted
# attempt, and a counter can never be left without an expiry if a worker dies between calls.
_HIT_SCRIPT = """
local n = redis.call('INCR', KEYS[1])
if n == 1 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {n, ttl}
"""


@dataclass(frozen=True)
class Decision:
    """The answer to one attempt."""

    allowed: bool
    remaining: int
    retry_after: int | None  # whole seconds until the window frees a slot, when refused
    degraded: bool  # True when the store was unavailable and we failed open


class Limiter(Protocol):
    backend: str  # "memory", "redis" or "disabled"

    async def hit(self, scope: str, key: str, limit: int, window_s: int) -> Decision: ...

    async def status(self) -> dict[str, object]: ...

    async def aclose(self) -> None: ...


def _check_args(scope: str, limit: int, window_s: int) -> None:
    if not _SCOPE_RE.fullmatch(scope):
        raise ValueError(f"invalid limiter scope {scope!r}")
    if limit < 1:
        raise ValueError("limit must be at least 1")
    if window_s < 1:
        raise ValueError("window_s must be at least 1")


def _decide(count: int, limit: int, ttl_s: float) -> Decision:
    if count <= limit:
        return Decision(allowed=True, remaining=limit - count, retry_after=None, degraded=False)
    # Rounded up and at least 1 so that a client honouring Retry-After never retries early.
    return Decision(
        allowed=False, remaining=0, retry_after=max(1, math.ceil(ttl_s)), degraded=False
    )


class MemoryLimiter:
    """In-process limiter for single-worker deployments and tests.

    ``hit`` never awaits between reading and writing a counter, so it is atomic with respect to
    other tasks on the event loop without a lock.
    """

    backend: str = "memory"

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.monotonic,
        max_keys: int = 100_000,
        prune_interval_s: float = 1.0,
    ) -> None:
        if max_keys < 1:
            raise ValueError("max_keys must be at least 1")
        self._clock = clock
        self._max_keys = max_keys
        self._prune_interval_s = prune_interval_s
        self._next_prune = clock() + prune_interval_s
        # (scope, key) -> [count, window end]; insertion order is window-start order, which the
        # overflow eviction relies on.
        self._windows: dict[tuple[str, str], list[float]] = {}

    def __len__(self) -> int:
        return len(self._windows)

    async def hit(self, scope: str, key: str, limit: int, window_s: int) -> Decision:
        _check_args(scope, limit, window_s)
        now = self._clock()
        self._maybe_prune(now)
        ident = (scope, key)
        window = self._windows.get(ident)
        if window is None or window[1] <= now:
            if window is not None:
                # Re-insert so the dict order keeps following window start times.
                del self._windows[ident]
            self._make_room()
            window = [0, now + window_s]
            self._windows[ident] = window
        window[0] += 1
        return _decide(int(window[0]), limit, window[1] - now)

    def _maybe_prune(self, now: float) -> None:
        # A full sweep is O(n); doing it at most once per interval keeps the amortised cost per
        # hit constant while still bounding memory to the keys seen in live windows.
        if now < self._next_prune:
            return
        self._next_prune = now + self._prune_interval_s
        expired = [ident for ident, (_, end) in self._windows.items() if end <= now]
        for ident in expired:
            del self._windows[ident]

    def _make_room(self) -> None:
        # Under a spray of distinct keys (IPv6 makes that cheap) memory must stay bounded even
        # within one window. Forgetting the oldest windows fails open for those keys only, which
        # is the same trade-off as a store outage.
        while len(self._windows) >= self._max_keys:
            del self._windows[next(iter(self._windows))]

    async def status(self) -> dict[str, object]:
        return {"enabled": True, "backend": self.backend, "available": True}

    async def aclose(self) -> None:
        self._windows.clear()


class RedisLimiter:
    """Limiter shared by all workers through Redis; fails open when Redis is unavailable."""

    backend: str = "redis"

    def __init__(
        self,
        url: str,
        *,
        prefix: str = "hearth:limit:",
        timeout_s: float = 0.05,
        breaker_s: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
        registry: CollectorRegistry | None = None,
    ) -> None:
        if timeout_s <= 0:
            raise ValueError("timeout_s must be positive")
        if breaker_s < 0:
            raise ValueError("breaker_s must not be negative")
        self._prefix = prefix
        self._timeout_s = timeout_s
        self._breaker_s = breaker_s
        self._clock = clock
        # The limiter sits in front of requests: one attempt, bounded (redis_calls.py).
        self._client: redis_asyncio.Redis = quick_client(url, timeout_s)
        self._script = self._client.register_script(_HIT_SCRIPT)
        self._open_until = 0.0
        self._healthy = True
        self._probing = False
        self._outage_started = 0.0
        self._failed_open = 0
        # What became of each call the limiter wanted to make: `skipped` calls were never made
        # (the breaker was open), so an outage costs one request the deadline, not every one.
        self.calls = Counter(
            "hearth_limiter_redis_calls",
            "Limiter calls to Redis, by outcome (done, failed, or skipped by the breaker).",
            ("outcome",),
            registry=registry,
        )

    def _redis_key(self, scope: str, key: str) -> str:
        # Hashing gives every key the same shape (IPv6 colons, arbitrary client-supplied
        # strings) and keeps raw addresses out of key listings. It is not anonymisation.
        digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]
        return f"{self._prefix}{scope}:{digest}"

    async def hit(self, scope: str, key: str, limit: int, window_s: int) -> Decision:
        _check_args(scope, limit, window_s)
        redis_key = self._redis_key(scope, key)

        async def run() -> tuple[int, int]:
            return _parse_hit_reply(await self._script(keys=[redis_key], args=[window_s * 1000]))

        reply = await self._guarded(scope, run)
        if reply is None:
            self._failed_open += 1
            # The real count is unknown; report what a first attempt would see.
            return Decision(allowed=True, remaining=limit - 1, retry_after=None, degraded=True)
        count, ttl_ms = reply
        return _decide(count, limit, ttl_ms / 1000)

    async def status(self) -> dict[str, object]:
        async def run() -> bool:
            return bool(await self._client.ping())

        available = await self._guarded("status", run) is not None
        return {"enabled": True, "backend": self.backend, "available": available}

    async def _guarded(self, scope: str, op: Callable[[], Awaitable[_T]]) -> _T | None:
        """Run ``op`` against Redis, or return None when the store is, or just went, down."""
        if self._clock() < self._open_until or self._probing:
            self.calls.labels("skipped").inc()
            return None
        # After the breaker interval only one request probes Redis; the others keep failing
        # open instead of all queueing up on a store that is probably still down.
        probing = not self._healthy
        if probing:
            self._probing = True
        try:
            # The deadline bounds the whole call (connect, handshake, command, NOSCRIPT reload),
            # which is what the request actually waits; the socket timeouts never exceed it.
            async with asyncio.timeout(self._timeout_s):
                result = await op()
        except _STORE_ERRORS as exc:
            self.calls.labels("failed").inc()
            self._trip(scope, exc)
            return None
        finally:
            if probing:
                self._probing = False
        self.calls.labels("done").inc()
        if not self._healthy:
            self._recover()
        return result

    def _trip(self, scope: str, exc: BaseException) -> None:
        now = self._clock()
        self._open_until = now + self._breaker_s
        if not self._healthy:
            # Still down after a probe: already reported, and logging each probe would turn a
            # long outage into a steady stream of identical lines.
            return
        self._healthy = False
        self._outage_started = now
        self._failed_open = 0
        # Only the exception type: messages can carry hosts or, for auth errors, more.
        _log.warning(
            "limiter_store_unavailable",
            backend=self.backend,
            scope=scope,
            error=type(exc).__name__,
            retry_in_s=self._breaker_s,
        )

    def _recover(self) -> None:
        self._healthy = True
        self._open_until = 0.0
        _log.info(
            "limiter_store_recovered",
            backend=self.backend,
            outage_s=round(self._clock() - self._outage_started, 3),
            failed_open=self._failed_open,
        )
        self._failed_open = 0

    async def aclose(self) -> None:
        await self._client.aclose()


def _parse_hit_reply(raw: object) -> tuple[int, int]:
    if not isinstance(raw, list | tuple) or len(raw) != 2:
        raise RedisError(f"unexpected limiter script reply of type {type(raw).__name__}")
    count, ttl_ms = raw
    if not isinstance(count, int) or not isinstance(ttl_ms, int):
        raise RedisError("unexpected limiter script reply contents")
    return count, ttl_ms


class DisabledLimiter:
    """Admits everything; for deployments that rate-limit elsewhere (proxy, WAF)."""

    backend: str = "disabled"

    async def hit(self, scope: str, key: str, limit: int, window_s: int) -> Decision:
        return Decision(allowed=True, remaining=limit, retry_after=None, degraded=False)

    async def status(self) -> dict[str, object]:
        return {"enabled": False, "backend": self.backend, "available": True}

    async def aclose(self) -> None:
        return None


def make_limiter(
    redis_url: str | None,
    *,
    enabled: bool = True,
    timeout_s: float = 0.05,
    breaker_s: float = 5.0,
    registry: CollectorRegistry | None = None,
) -> Limiter:
    """Pick the limiter for this deployment: Redis when configured, in-process otherwise."""
    if not enabled:
        return DisabledLimiter()
    if redis_url and redis_url.strip():
        return RedisLimiter(
            redis_url.strip(), timeout_s=timeout_s, breaker_s=breaker_s, registry=registry
        )
    return MemoryLimiter()
