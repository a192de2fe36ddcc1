"""Sweeping the temp files that crashed uploads leave in the block store.

A block upload writes ``blocks/<shard>/.tmp-<random>`` and renames it over the block's name
(``FileBlockStore``); a process killed in between leaves the temp file behind. The service
sweeps them once when it starts, before it serves, and then every
``blocks_sweep_interval_seconds`` (docs/service.md, "Provider node").

Several workers, or several hosts on a shared disk, may write to one block store.
``FileBlockStore.sweep`` never removes a temp file that this process is writing, but it cannot
see the writes of another process: only a temp file's age says that its writer is gone. So
every sweep, the one at start included, removes only temp files unchanged for
``blocks_sweep_age_seconds`` (an hour by default, when a 16 MiB block is written in well under a
second). An age of 0 is safe only with one process per block store.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Protocol

import structlog

log = structlog.get_logger("hearth.blocks")


class Sweepable(Protocol):
    """What the sweeper needs of the provider node (``AddsNode``)."""

    async def sweep(self, older_than: float) -> int | None: ...


class BlockSweeper:
    """One sweep at ``start``, then one every ``interval`` seconds until ``stop``."""

    def __init__(self, node: Sweepable, *, interval: float, age: float) -> None:
        self.node = node
        self.interval = interval
        self.age = age
        self._task: asyncio.Task[None] | None = None

    async def sweep(self, when: str) -> int | None:
        """Sweep now; how many temp files were removed (None: no block store, or a failure,
        which is logged: housekeeping never stops the service)."""
        try:
            removed = await self.node.sweep(self.age)
        except Exception as exc:  # any failure: logged, and the next sweep tries again
            log.warning("blocks_sweep_failed", when=when, error=str(exc) or type(exc).__name__)
            return None
        if removed is None:
            return None  # no block store yet: nothing to sweep, nothing to say
        # The start's count is always worth a line; a periodic sweep's only when it found some.
        emit = log.info if removed or when == "start" else log.debug
        emit("blocks_swept", when=when, removed=removed, older_than_s=self.age)
        return removed

    async def start(self) -> None:
        await self.sweep("start")
        self._task = asyncio.get_running_loop().create_task(self._run(), name="blocks-sweep")

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            await self.sweep("periodic")

    async def stop(self) -> None:
        """Cancel the periodic sweep and wait for it (a sweep already in its thread finishes)."""
        task, self._task = self._task, None
        if task is None:
            return
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()


__all__ = ["BlockSweeper", "Sweepable"]
