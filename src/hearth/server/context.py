"""What every route reaches through ``request.app.state.hearth``: one object per app.

It belongs to the edge (routes, ``auth.py``, the middleware): a route hands the services the
parts they need (the ``Database``, the settings' values, a collaborator), never this object, so
that services run the same under an app, a worker or a script.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from datetime import timedelta

import structlog
from sqlalchemy import func, select

from .db.engine import Database, utcnow
from .db.tables import chronicle
from .events import EventBus
from .limiter import Limiter
from .observability import Metrics
from .packages import PackageCatalog
from .semantic.keeper import SemanticKeeper
from .services.adds_node import AddsNode
from .settings import Settings

log = structlog.get_logger("hearth.server")

JOY_CACHE_S = 60.0


@dataclass
class JoyIndex:
    """Count of `joy` chronicle entries in the last 24 hours, cached per process for 60 s.

    The header is read on every response, so the value is refreshed in the background and a
    request never waits on it.
    """

    db: Database
    value: int | None = None
    fetched_at: float = -JOY_CACHE_S
    _task: asyncio.Task[None] | None = field(default=None, repr=False)

    def current(self) -> int | None:
        if time.monotonic() - self.fetched_at >= JOY_CACHE_S and self._task is None:
            try:
                self._task = asyncio.get_running_loop().create_task(self._refresh())
            except RuntimeError:
                return self.value
        return self.value

    async def _refresh(self) -> None:
        try:
            async with self.db.read() as conn:
                since = utcnow() - timedelta(hours=24)
                count = (
                    await conn.execute(
                        select(func.count())
                        .select_from(chronicle)
                        .where(chronicle.c.kind == "joy", chronicle.c.created_at >= since)
                    )
                ).scalar_one()
            self.value = int(count)
        except Exception as exc:  # a decoration must never break a response
            log.warning("joy_index_unavailable", error=type(exc).__name__)
        finally:
            self.fetched_at = time.monotonic()
            self._task = None

    async def aclose(self) -> None:
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)


@dataclass
class Hearth:
    settings: Settings
    db: Database
    limiter: Limiter
    metrics: Metrics
    packages: PackageCatalog
    joy: JoyIndex
    adds: AddsNode
    events: EventBus
    # The semantic leg of memory search, when settings.semantic_search is on.
    semantic: SemanticKeeper | None = None
