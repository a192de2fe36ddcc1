"""``hearth worker``: an orchestrator worker on its own (docs/orchestrator.md).

It runs the think-loops of ``trusted`` runtimes, sharing them with every other worker on the
same database through leases; ``bridged`` runtimes are run by the workers inside ``hearth
serve``, the processes that hold their bridges' WebSockets. It reads the same ``SERVICE_*``
settings as the server, does not migrate the database (``hearth serve`` does), and stops on
Ctrl-C or SIGTERM, giving its leases up so that other workers take its runtimes over at once.
The worker is assembled where the app is, in ``hearth.server.app.run_worker``.
"""

from __future__ import annotations

import asyncio

import typer


def worker() -> None:
    """Run an orchestrator worker for hosted (trusted) runtimes until Ctrl-C or SIGTERM."""
    # Imported here, not at the top: every other `hearth` command stays quick to start.
    from hearth.server.app import run_worker  # noqa: PLC0415
    from hearth.server.settings import Settings  # noqa: PLC0415

    try:
        asyncio.run(run_worker(Settings()))
    except KeyboardInterrupt:
        raise typer.Exit(0) from None
