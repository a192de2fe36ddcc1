"""One log format for the whole process: the service's structlog lines and the standard-library
lines of uvicorn (startup, shutdown, errors) and of any other library, rendered by the same
processors into the same JSON (or console) lines.

``configure_logging`` (observability.py) sets up structlog; ``stdlib_log_config`` is the
``logging.config.dictConfig`` document uvicorn applies in each process it starts.
"""

from __future__ import annotations

import logging
import sys

import structlog
from structlog.types import Processor

from .json_types import JsonObject


def shared_processors() -> list[Processor]:
    """What every line gets, whichever logger wrote it."""
    return [
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]


def renderer(fmt: str) -> Processor:
    if fmt == "json":
        return structlog.processors.JSONRenderer()
    return structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())


def stdlib_formatter(fmt: str = "json") -> logging.Formatter:
    """A ``logging`` formatter rendering records as structlog renders its own lines, with the
    logger's name (``uvicorn.error``) and the traceback, if any, as the ``exception`` field."""
    return structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[structlog.stdlib.add_logger_name, *shared_processors()],
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.format_exc_info,
            renderer(fmt),
        ],
    )


class WithoutWebSocketAccessLines(logging.Filter):
    """Drops uvicorn's per-connection WebSocket lines (``'%s - "WebSocket %s" ...'``): they carry
    the client address and the path with its query string, and the service's own access line
    (access.py) replaces them. Matched on uvicorn's constant format string, not on the text."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (isinstance(record.msg, str) and '"WebSocket %s"' in record.msg)


def stdlib_log_config(fmt: str, level: str, *, root: bool) -> JsonObject:
    """uvicorn's loggers through ``stdlib_formatter`` to stderr; uvicorn's access logger off
    (the service writes its own access line). With ``root``, every other library's warnings
    too: that is for a process of its own (``hearth serve``), never inside a host's process
    (tests, an embedder), whose root logger is not ours to take.

    Only strings in the document: uvicorn pickles it into each worker process."""
    config: JsonObject = {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"structured": {"()": f"{__name__}.stdlib_formatter", "fmt": fmt}},
        "filters": {"no_websocket_access": {"()": f"{__name__}.WithoutWebSocketAccessLines"}},
        "handlers": {
            "stderr": {
                "class": "logging.StreamHandler",
                "stream": "ext://sys.stderr",
                "formatter": "structured",
                "filters": ["no_websocket_access"],
            }
        },
        "loggers": {
            "uvicorn": {"handlers": ["stderr"], "level": level.upper(), "propagate": False},
            "uvicorn.error": {"level": level.upper()},
            "uvicorn.access": {"handlers": [], "level": "WARNING", "propagate": False},
        },
    }
    if root:
        # Warnings and worse only: libraries log requests at info (httpx logs every URL).
        config["root"] = {"handlers": ["stderr"], "level": "WARNING"}
    return config
