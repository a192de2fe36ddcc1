"""The semantic leg's upkeep in the service (docs/memory.md, "Semantic search"): the encoder,
loaded once and only when semantic search is on; a memory's vector written when the service
stores it; and a catch-up pass, at start and then periodically, for the memories written around
the service (a fork, an import, a runtime's writes in another process, a row written in SQL).

Encoding runs in a worker thread, never on the event loop, and outside any transaction: a
memory is stored and acknowledged first, then embedded (about 15 ms per memory on one core,
docs/performance.md), so the full-text index's promise (searchable at once) is unchanged and
the meaning leg follows it within the store's own request.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence

import structlog

from ..db import Database
from ..services import memory_embeddings as embeddings
from ..services.memory_search import Meaning
from .encoder import MODEL_NAME, Encoder
from .vectors import VectorCache

log = structlog.get_logger("hearth.semantic")

BATCH = 32  # memories embedded per catch-up transaction
PASS_LIMIT = 50  # batches per catch-up pass: the next pass goes on where this one stopped
# Vectors re-read behind the last one held: a writer's transaction that took its seq before
# another's but committed after it is still read (a keep transaction is short: a few rows).
LOOKBACK = 256


class SemanticKeeper:
    """The encoder and the vectors of one service process."""

    model = MODEL_NAME

    def __init__(self, db: Database, *, interval: float, capacity: int) -> None:
        self.db = db
        self.interval = interval
        self.vectors = VectorCache(capacity)
        self._encoder: Encoder | None = None
        self._loading = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None

    async def encoder(self) -> Encoder:
        async with self._loading:
            if self._encoder is None:
                self._encoder = await asyncio.to_thread(Encoder)
            return self._encoder

    async def meaning(self, project_id: str, q: str) -> Meaning:
        """The query's embedding (its text without the query language's quotes and stars) and
        the project's vectors, read up to now, to rank by it."""
        encoder = await self.encoder()
        text = q.replace('"', " ").replace("*", " ")
        vectors = await asyncio.to_thread(encoder.encode, [text])
        held = self.vectors.project(project_id)
        rows = await self.db.snapshot(
            embeddings.since, project_id, self.model, max(0, held.last_seq - LOOKBACK)
        )
        held.add(rows)
        self.vectors.fit()
        query = vectors[0]
        return Meaning(self.model, lambda count: held.nearest(query, count))

    async def embed(self, found: Sequence[tuple[str, str]]) -> int:
        """Embed and keep the memories ``found`` (id, content); how many vectors were kept."""
        if not found:
            return 0
        encoder = await self.encoder()
        vectors = await asyncio.to_thread(encoder.encode, [content for _, content in found])
        kept = [(i, content, vector) for (i, content), vector in zip(found, vectors, strict=True)]
        return await self.db.transaction(embeddings.keep, self.model, kept)

    async def catch_up(self) -> int:
        """Embed memories that have no vector yet, newest first, up to ``PASS_LIMIT`` batches;
        how many were kept."""
        kept = 0
        for _ in range(PASS_LIMIT):
            found = await self.db.snapshot(embeddings.missing, self.model, BATCH)
            if not found:
                break
            stored = await self.embed(found)
            kept += stored
            if stored == 0:
                break  # every one of them changed meanwhile: the next pass looks again
        return kept

    async def _pass(self, when: str) -> None:
        try:
            kept = await self.catch_up()
        except Exception as exc:  # housekeeping never stops the service; the next pass retries
            log.warning("semantic_catch_up_failed", when=when, error=str(exc) or type(exc).__name__)
            return
        if kept or when == "start":
            log.info("semantic_caught_up", when=when, embedded=kept, model=self.model)

    async def start(self) -> None:
        """Load the encoder (a missing model package stops the start, as a bad setting does),
        then catch up in the background, once now and every ``interval`` seconds."""
        await self.encoder()
        self._task = asyncio.get_running_loop().create_task(self._run(), name="semantic-catch-up")

    async def _run(self) -> None:
        await self._pass("start")
        while True:
            await asyncio.sleep(self.interval)
            await self._pass("periodic")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
