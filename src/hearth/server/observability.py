"""Structured logs (structlog) and Prometheus metrics, one registry per app."""

from __future__ import annotations

import logging
import sys

import structlog
from prometheus_client import CollectorRegistry, Counter, Histogram


def configure_logging(fmt: str = "json", level: str = "info") -> None:
    """JSON lines in production, readable lines at a terminal; secrets are never bound."""
    renderer: structlog.types.Processor = (
        structlog.processors.JSONRenderer()
        if fmt == "json"
        else structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(
            logging.getLevelNamesMapping().get(level.upper(), logging.INFO)
        ),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )


class Metrics:
    """The service's metrics; a registry per app so that several apps can live in one process."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
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
        self.refusals = Counter(
            "hearth_refusals",
            "Refused requests by error code.",
            ("error",),
            registry=self.registry,
        )
        self.limiter_degraded = Counter(
            "hearth_limiter_fail_open",
            "Limiter checks that failed open because the store was unavailable.",
            registry=self.registry,
        )
