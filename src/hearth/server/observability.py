"""Structured logs (structlog) and Prometheus metrics, one registry per app."""

from __future__ import annotations

import json
import logging
import re
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import structlog
from prometheus_client import (
    CollectorRegistry,
    Counter,
    Histogram,
    PlatformCollector,
    ProcessCollector,
)

from .logs import renderer, shared_processors
from .scrape import multiprocess_mode, register_worker

# Runtime moves are applied by ``services.runtimes.move``, a function over a connection with no
# app in reach: the counter is the process's, registered into each app's registry below (one
# app per process when serving; tests that build several read differences).
TRANSITIONS = Counter(
    "hearth_runtime_transitions",
    "Runtime state transitions applied, by the state left and the state entered.",
    ("from", "to"),
    registry=None,
)

# Refusals are answered in two places: the service middleware (every 4xx an app sends) and the
# HTTP protocol, which refuses heads too large or too slow (431, 408) before any app runs
# (request_heads.py). The protocol has no app in reach, so, as TRANSITIONS, the counter is the
# process's, registered into each app's registry.
REFUSALS = Counter(
    "hearth_refusals",
    "Refused requests by error code.",
    ("error",),
    registry=None,
)


def configure_logging(fmt: str = "json", level: str = "info") -> None:
    """JSON lines in production, readable lines at a terminal; secrets are never bound."""
    # The same processors render uvicorn's lines (logs.stdlib_log_config): one format per process.
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            *shared_processors(),
            structlog.processors.format_exc_info,
            renderer(fmt),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(
            logging.getLevelNamesMapping().get(level.upper(), logging.INFO)
        ),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )


class Metrics:
    """The service's metrics; a registry per app so that several apps can live in one process.

    With several workers (prometheus-client's multiprocess mode, ``scrape.py``) every value is
    also kept in a file per worker, and a scrape reads them all, not this registry."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.registry.register(TRANSITIONS)
        if multiprocess_mode():
            register_worker()  # the scrape then reports this worker's process metrics
        else:
            ProcessCollector(registry=self.registry)
            PlatformCollector(registry=self.registry)
        self.requests = Counter(
            "hearth_http_requests",
            "HTTP requests by route template and status.",
            ("method", "route", "status"),
            registry=self.registry,
        )
        self.latency = Histogram(
            "hearth_http_request_duration_seconds",
            "Time to the last response byte, by route template.",
            ("route",),
            registry=self.registry,
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5),
        )
        self.registrations = Counter(
            "hearth_registrations",
            "Agents registered, by mode.",
            ("mode",),
            registry=self.registry,
        )
        self.registry.register(REFUSALS)
        self.refusals = REFUSALS
        self.limiter_degraded = Counter(
            "hearth_limiter_fail_open",
            "Limiter checks that failed open because the store was unavailable.",
            registry=self.registry,
        )
        self.think_cycles = Counter(
            "hearth_runtime_think_cycles",
            "Think cycles begun by this service's orchestrator workers.",
            registry=self.registry,
        )
        self.think_cycle_failures = Counter(
            "hearth_runtime_think_cycle_failures",
            "Think cycles that stored no thought, by the stage that failed.",
            ("stage",),
            registry=self.registry,
        )
        self.bridge_connections = Counter(
            "hearth_bridge_connections",
            "Bridge WebSocket sessions opened (handshake verified).",
            registry=self.registry,
        )
        self.bridge_handshake_failures = Counter(
            "hearth_bridge_handshake_failures",
            "Bridge connections upgraded and then refused in the handshake, by error.",
            ("error",),
            registry=self.registry,
        )
        self.bridge_messages = Counter(
            "hearth_bridge_messages",
            "Frames relayed over bridge sessions after the handshake, by direction.",
            ("direction",),
            registry=self.registry,
        )
        self.block_bytes_stored = Counter(
            "hearth_adds_block_bytes_stored",
            "Bytes of ADDS blocks accepted by PUT (each accepted upload, verified).",
            registry=self.registry,
        )
        self.block_bytes_served = Counter(
            "hearth_adds_block_bytes_served",
            "Bytes of ADDS blocks answered by GET.",
            registry=self.registry,
        )


# An ASGI message (a mapping of the server's, neither a row nor JSON) and the send it goes to.
Message = dict[str, Any]
Send = Callable[[Message], Awaitable[None]]
_REFUSAL_BODY_MAX = 65_536  # error bodies are small; a larger 4xx body is counted by its status
_ERROR_CODE = re.compile(r"[a-z][a-z0-9_]{0,63}")  # the service's codes: short snake_case


def count_refusals(send: Send, refusals: Counter) -> Send:
    """``send``, counting each 4xx answer in ``refusals`` by its ``error`` code.

    Watching what leaves is the one place every refusal passes, whoever made it: the error
    handlers, the middleware's own 413, a route's direct answer. Only 4xx bodies are read."""
    status = [0]
    chunks: list[bytes] = []

    async def watched(message: Message) -> None:
        if message["type"] == "http.response.start":
            status[0] = message["status"]
        elif message["type"] == "http.response.body" and 400 <= status[0] < 500:
            if sum(map(len, chunks)) <= _REFUSAL_BODY_MAX:
                chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                refusals.labels(_error_code(b"".join(chunks), status[0])).inc()
                status[0] = 0
        await send(message)

    return watched


def _error_code(body: bytes, status: int) -> str:
    if len(body) <= _REFUSAL_BODY_MAX:
        try:
            parsed = json.loads(body)
        except ValueError:
            parsed = None
        code = parsed.get("error") if isinstance(parsed, dict) else None
        if isinstance(code, str) and _ERROR_CODE.fullmatch(code):
            return code
    return f"http_{status}"
