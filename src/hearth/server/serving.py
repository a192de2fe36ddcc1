"""How uvicorn serves the service: the one definition that ``hearth serve`` and the tests' live
service share, so that what the tests exercise is what production runs.

The caller adds where and what to serve (app or factory, host, port, workers, TLS, proxy); the
options here are the ones the service depends on: the bounded HTTP protocol (request_heads.py),
the log format (logs.py) and the shutdown bound.
"""

from __future__ import annotations

import asyncio
from typing import Any, TypedDict

from .logs import stdlib_log_config
from .request_heads import HeadLimits, head_limited_protocol
from .settings import Settings

# Voice streams never end by themselves: without a bound, one open stream would keep a stopping
# server waiting for ever. This is how long it waits for open responses.
GRACEFUL_SHUTDOWN_S = 5
# uvicorn's default: an idle kept-alive connection is closed after this many seconds.
KEEP_ALIVE_S = 5


class UvicornOptions(TypedDict):
    http: type[asyncio.Protocol]
    log_config: dict[str, Any]
    log_level: str
    access_log: bool
    timeout_keep_alive: int
    timeout_graceful_shutdown: int
    proxy_headers: bool


def uvicorn_options(settings: Settings, *, own_process: bool) -> UvicornOptions:
    """Keyword arguments for ``uvicorn.run`` or ``uvicorn.Config``. ``own_process``: the process
    is the service's alone (``hearth serve``), so the root logger's lines are formatted too."""
    return UvicornOptions(
        http=head_limited_protocol(
            HeadLimits(
                max_bytes=settings.max_header_bytes,
                max_count=settings.max_header_count,
                timeout_s=settings.header_timeout_seconds,
            )
        ),
        log_config=stdlib_log_config(settings.log_format, settings.log_level, root=own_process),
        log_level=settings.log_level,
        access_log=False,  # the service writes one access line per request (access.py)
        timeout_keep_alive=KEEP_ALIVE_S,
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S,
        # uvicorn's own X-Forwarded-For handling would replace the socket's peer before the app
        # sees it, by other rules (the client's leftmost claim when every hop is trusted, any
        # garbage as an address). The app applies one rule itself (client_address.py), behind a
        # proxy only, so the peer must reach it untouched, and so must the scheme.
        proxy_headers=False,
    )
