"""How the service talks to a Redis it must never wait on (docs/operations.md, "PostgreSQL and
Redis"): one attempt per call, with socket timeouts no longer than the caller's own deadline.

redis-py's defaults retry with backoff and can hold a call for seconds. The limiter sits in front
of requests and the change sender must not fall behind the mutations, so both build their
clients here; each wraps its calls in ``asyncio.timeout`` of the same length, which bounds the
whole call (connect, handshake, command) and keeps its own breaker.
"""

from __future__ import annotations

import redis.asyncio as redis_asyncio
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff


def quick_client(url: str, timeout_s: float) -> redis_asyncio.Redis:
    """A client that tries each call once, its connect and reads bounded by ``timeout_s``."""
    return redis_asyncio.Redis.from_url(
        url,
        socket_timeout=timeout_s,
        socket_connect_timeout=timeout_s,
        retry=Retry(NoBackoff(), 0),
    )


__all__ = ["quick_client"]
