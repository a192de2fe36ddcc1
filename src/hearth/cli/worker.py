"""``hearth worker``: an orchestrator worker on its own (docs/orchestrator.md).

It runs the think-loops of ``trusted`` runtimes, sharing them with every other worker on the
same database through leases; ``bridged`` runtimes are run by the workers inside ``hearth
serve``, the processes that hold their bridges' WebSockets. It reads the same ``SERVICE_*``
settings as the server, does not migrate the database (``hearth serve`` does), and stops on
Ctrl-C or SIGTERM, giving its leases up so that other workers take its runtimes over at once.
"""

from __future__ import annotations

import asyncio
import signal

import typer


def worker() -> None:
    """Run an orchestrator worker for hosted (trusted) runtimes until Ctrl-C or SIGTERM."""
    # Imported here, not at the top: every other `hearth` command stays quick to start.
    from hearth.server.db import Database  # noqa: PLC0415
    from hearth.server.events import EventBus  # noqa: PLC0415
    from hearth.server.observability import configure_logging  # noqa: PLC0415
    from hearth.server.orchestrator import Worker  # noqa: PLC0415
    from hearth.server.services import wake_stamps  # noqa: PLC0415
    from hearth.server.settings import Settings  # noqa: PLC0415

    settings = Settings()
    configure_logging(settings.log_format, settings.log_level)

    async def main() -> None:
        db = Database(settings.database_url)
        # The worker's changes (thoughts, runtime moves) bump their project's stamp too, so that
        # no server process answers a wake cached before them, with or without Redis.
        events = EventBus(
            settings.redis_url,
            queue_size=settings.voice_queue_size,
            timeout_s=settings.redis_timeout_ms / 1000,
            breaker_s=settings.redis_breaker_seconds,
            stamp=wake_stamps.stamper(db),
        )
        await events.start()
        running = Worker(settings, db, events)
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, running.request_stop)
        task = running.start()
        try:
            await task
        finally:
            await running.stop()
            await events.aclose()
            await db.dispose()

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        raise typer.Exit(0) from None
