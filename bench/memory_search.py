"""Memory search: how well it finds (the evaluation set) and how fast, beside the bare index.

Run ``.venv/bin/python bench/memory_search.py`` (``--memories N`` memories in the filled project,
default 100,000; ``--searches S`` timed searches per round, default 300; ``--rounds R`` rounds of
searches, default 3; ``--writes W`` timed writes per phase, default 100; ``--write-rounds``,
default 12; ``--backends sqlite,postgresql``; ``--database-url`` a PostgreSQL server URL;
``--json``). It is a measurement, not a test: it
exits 0 whether or not the goals are met, and non-zero only if the run itself breaks.

For each backend, on a fresh database migrated to head (SQLite in a file of its own; PostgreSQL
a database the bench creates and drops):

1. **Evaluation.** The memories of ``tests/support/memory_search_cases.py`` are stored in a
   project of their own with the service's ``memories.store``, and each question is asked with
   ``memory_search.search``: recall@5 and MRR per kind of question (exact keywords,
   paraphrases, names, dates, multilingual text).
2. **Fill.** A second project gets N memories written in batches of 1,000 rows through the real
   ``memories`` table (so the index's triggers run, as for any write): 8 to 40 words each,
   drawn from a vocabulary of 5,000 made-up words by a Zipf law (word k is used about 1/k as
   often as the most common one), a key on one in five, tiers and times spread over a year.
3. **Search.** Queries of one to three words, drawn from the same law with the 100 most common
   words left out (they play the part of stop words; a query of them matches most of the
   store), a quarter of them with a prefix or a phrase. R rounds; each runs S searches through
   the service (``memory_search.search`` in a read snapshot of the ``Database``: the parse, both
   ranking legs, the adjustments, the page's rows and snippets, all but HTTP) and the same S
   queries as the bare index query: one statement, an FTS5 ``MATCH`` ordered by ``bm25()`` or a
   ``tsvector @@`` ordered by ``ts_rank``, of any of the terms (the question the service
   answers), 20 ids, no project, no rule, no adjustment, no rows: the index alone. Printed:
   p50 and p99 of each (the median over rounds) and the service's rate as a share of the bare
   query's rate, by wall clock (the goal's figure) and by the process's CPU time (steadier on a
   shared machine, where wall times move with the other load).
4. **Writes.** ``--write-rounds`` rounds (default 12), each ``--writes`` memory writes (default
   100) with the index and as many without (the search triggers dropped for the phase, its
   rows deleted after, the triggers made again, so the index stays exact), one memory per
   transaction through ``memories.store``, as ``POST /v1/memories`` writes one. Printed: writes
   per second of each, the slowdown (the goal's figure: the median of each round's, its two
   phases run one after the other, so that the machine's drift between rounds cancels; many
   short rounds, as a checkpoint of the WAL lands in one phase or the other), each round's,
   the slowdown of the two phases' median rates as it was figured before, and the process's
   CPU time per write of each. On SQLite, each round also times the database alone: the same
   memories in bare ``sqlite3`` with and without an FTS5 insert in their transaction
   (``fts5_alone``). Then as many rounds again with 8 writers at once (the same writes shared
   among 8 tasks, so that SQLite's group commit commits several together): their paired
   slowdown, printed beside the goal's figure, not in its place.

5. **The semantic leg.** The evaluation is also run fused with the meaning ranking (the
   memories embedded with the real model); then every filled memory gets a random unit vector
   (the ranking's cost does not depend on the values) and ``--semantic-searches`` queries are
   timed fused and by full text alone, with the service's own ``SemanticKeeper``: the first
   read of the project's vectors, each query's encoding and refresh, the cost of encoding a
   memory with the real model.

Goals (issue 18): search p99 under 50 ms at 100,000 memories; the service at 0.5 of the bare
query's rate or more; writes at most 20 % slower with the index.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import random
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the evaluation set is the tests' named data set

import numpy as np  # noqa: E402
from sqlalchemy import Connection, delete, select, text  # noqa: E402
from tests.support.memory_search_cases import KINDS, MEMORIES, QUESTIONS, score  # noqa: E402

from hearth.server.db import Database, search_index  # noqa: E402
from hearth.server.db.engine import SQLITE_PRAGMAS, utcnow  # noqa: E402
from hearth.server.db.migrate import upgrade  # noqa: E402
from hearth.server.db.tables import memories, memory_embeddings, projects  # noqa: E402
from hearth.server.semantic.encoder import MODEL_NAME, Encoder  # noqa: E402
from hearth.server.semantic.keeper import SemanticKeeper  # noqa: E402
from hearth.server.services import memories as memory_service  # noqa: E402
from hearth.server.services import memory_embeddings as embeddings  # noqa: E402
from hearth.server.services import memory_search  # noqa: E402

# What the bench's memories say of themselves: written through the API, trusted.
API = memory_service.Provenance(channel="api")
from tests.support.postgres import fresh_database  # noqa: E402

from mixed import DEFAULT_DATABASE  # noqa: E402

P99_GOAL_MS = 50.0
RATE_GOAL = 0.5
WRITE_SLOWDOWN_GOAL = 0.20
WRITERS = 8  # the writes' second measure: this many writers at once
BATCH = 1000
VOCABULARY = 5000
COMMON = 100  # the most common words, left out of queries
TIERS = ("episodic",) * 8 + ("foundational",) * 3 + ("constitutive",)
PAGE = 20


def made_up_words(count: int, rng: random.Random) -> list[str]:
    """``count`` distinct pronounceable words (no real language's frequencies to lean on)."""
    consonants, vowels = "bcdfghjklmnprstvz", "aeiou"
    found: dict[str, None] = {}
    while len(found) < count:
        size = rng.randint(2, 4)
        word = "".join(rng.choice(consonants) + rng.choice(vowels) for _ in range(size))
        found[word] = None
    return list(found)


class Corpus:
    """The filled project's text: a vocabulary and its Zipf weights."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.words = made_up_words(VOCABULARY, self.rng)
        self.weights = [1 / (k + 1) for k in range(VOCABULARY)]
        self.query_words = self.words[COMMON:]
        self.query_weights = self.weights[COMMON:]

    def content(self) -> str:
        size = self.rng.randint(8, 40)
        return " ".join(self.rng.choices(self.words, self.weights, k=size)).capitalize() + "."

    def query(self) -> str:
        terms = self.rng.choices(self.query_words, self.query_weights, k=self.rng.randint(1, 3))
        shape = self.rng.random()
        if shape < 0.125:
            terms[-1] = terms[-1][:4] + "*"
        elif shape < 0.25 and len(terms) > 1:
            terms = [f'"{terms[0]} {terms[1]}"', *terms[2:]]
        return " ".join(terms)


def new_project(conn: Connection, name: str) -> str:
    project_id = str(uuid.uuid4())
    conn.execute(
        projects.insert(),
        {"id": project_id, "name": name, "origin": "bench", "created_at": utcnow()},
    )
    return project_id


# --- 1. the evaluation set ----------------------------------------------------------------------


def scores_of(found: list[tuple[Any, list[str]]]) -> dict[str, Any]:
    scores = {}
    for kind in KINDS:
        s = score(kind, [(q, n) for q, n in found if q.kind == kind])
        scores[kind] = {"questions": s.questions, "recall_at_5": s.recall_at_5, "mrr": s.mrr}
    everything = score("all", found)
    scores["all"] = {
        "questions": everything.questions,
        "recall_at_5": everything.recall_at_5,
        "mrr": everything.mrr,
    }
    return scores


async def evaluate(db: Database, encoder: Encoder) -> dict[str, Any]:
    """The evaluation set by the full-text ranking alone, and fused with the meaning ranking
    (the memories embedded as the service embeds them, each question encoded as it does)."""
    project_id = await db.transaction(new_project, "evaluation")
    names: dict[str, str] = {}
    stored = []
    for name, content in MEMORIES.items():
        row = await db.transaction(
            memory_service.store,
            project_id,
            None,
            content=content,
            tier="episodic",
            key=None,
            grant=None,
            provenance=API,
        )
        names[row.id] = name
        stored.append((row.id, content))
    keeper = keeper_for(db, encoder)
    await keeper.embed(stored)
    lexical, fused = [], []
    for question in QUESTIONS:
        page = await db.snapshot(memory_search.search, project_id, question.q, limit=10)
        lexical.append((question, [names[hit["memory"]["id"]] for hit in page.items]))
        meaning = await keeper.meaning(project_id, question.q)
        page = await db.snapshot(
            memory_search.search, project_id, question.q, limit=10, meaning=meaning
        )
        fused.append((question, [names[hit["memory"]["id"]] for hit in page.items]))
    return {"full_text": scores_of(lexical), "fused": scores_of(fused)}


def keeper_for(db: Database, encoder: Encoder) -> SemanticKeeper:
    """The service's own upkeep of the semantic leg, with the bench's loaded encoder."""
    keeper = SemanticKeeper(db, interval=3600, capacity=1_000_000)
    keeper._encoder = encoder
    return keeper


# --- 2. the fill --------------------------------------------------------------------------------


async def fill(db: Database, corpus: Corpus, count: int) -> tuple[str, float]:
    """The filled project and the fill's rows per second (bulk, triggers running)."""
    project_id = await db.transaction(new_project, "filled")
    now = utcnow()

    def batch(conn: Connection, start: int, stop: int) -> None:
        rows = []
        for index in range(start, stop):
            tier = TIERS[index % len(TIERS)]
            made = now - timedelta(minutes=index * 525_600 // max(count, 1))
            rows.append(
                {
                    "id": str(uuid.uuid4()),
                    "project_id": project_id,
                    "identity_id": None,
                    "tier": tier,
                    "key": corpus.rng.choice(corpus.words[:500]) if index % 5 == 0 else None,
                    "content": corpus.content(),
                    "created_at": made,
                    "elevated_at": None if tier == "episodic" else made,
                    "expression_patch": None,
                }
            )
        conn.execute(memories.insert(), rows)

    started = time.perf_counter()
    for start in range(0, count, BATCH):
        await db.transaction(batch, start, min(start + BATCH, count))
    rate = count / (time.perf_counter() - started)
    # The store as one that grew over time stands: the planner's statistics, and on PostgreSQL
    # the vacuum autovacuum makes of a table that grew (since PostgreSQL 13 for inserts too),
    # which merges the GIN index's pending list into the index and marks the pages all-visible.
    # Right after a bulk fill neither has happened, and a server may run without autovacuum (this
    # machine's does), where every search scanned the whole pending list: p99 57 ms against 25.
    if db.is_sqlite:
        await db.transaction(lambda conn: conn.exec_driver_sql("ANALYZE"))
    else:
        async with db.engine.connect() as conn:
            autocommit = await conn.execution_options(isolation_level="AUTOCOMMIT")
            await autocommit.exec_driver_sql("VACUUM ANALYZE")
    return project_id, rate


# --- 3. search against the bare index -----------------------------------------------------------


def bare_statement(dialect: str) -> Any:
    """The index alone: the matches of one term list, best first, 20 ids."""
    if dialect == "postgresql":
        return text(
            f"SELECT memory_id FROM {search_index.PG_TABLE}"
            " WHERE document @@ to_tsquery('simple', :match)"
            " ORDER BY ts_rank(document, to_tsquery('simple', :match)) DESC LIMIT :limit"
        )
    return text(
        f"SELECT rowid FROM {search_index.FTS_TABLE} WHERE {search_index.FTS_TABLE} MATCH :match"
        f" ORDER BY bm25({search_index.FTS_TABLE}, 2.0, 1.0) LIMIT :limit"
    )


def bare_match(dialect: str, q: str) -> str:
    """The bare query's match text: any term, the question the service answers (a memory
    holding some of the terms is a result)."""
    terms = memory_search.parse(q)
    if dialect == "postgresql":
        return " | ".join(t.tsquery() for t in terms)
    return " OR ".join(t.fts5() for t in terms)


async def timed(calls: list[Callable[[], Any]], cpu: list[float] | None = None) -> list[float]:
    """Each call's latency in ms, one after another; with ``cpu``, each call's CPU time in ms
    (the whole process's, so the database thread's too) is appended to it."""
    found = []
    for call in calls:
        started, used = time.perf_counter(), time.process_time()
        await call()
        found.append((time.perf_counter() - started) * 1000)
        if cpu is not None:
            cpu.append((time.process_time() - used) * 1000)
    return found


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def searches(
    db: Database, corpus: Corpus, project_id: str, count: int, rounds: int
) -> dict[str, Any]:
    dialect = "postgresql" if not db.is_sqlite else "sqlite"
    statement = bare_statement(dialect)
    per_round: list[dict[str, float]] = []
    sizes: list[int] = []
    for _ in range(rounds):
        queries = [corpus.query() for _ in range(count)]

        def service_call(q: str) -> Callable[[], Any]:
            return lambda: db.snapshot(memory_search.search, project_id, q, limit=PAGE)

        def bare_call(q: str) -> Callable[[], Any]:
            match = bare_match(dialect, q)
            return lambda: db.snapshot(
                lambda conn: conn.execute(statement, {"match": match, "limit": PAGE}).all()
            )

        # Interleaved, so a change in the machine's load hits both alike.
        service_ms: list[float] = []
        bare_ms: list[float] = []
        service_cpu: list[float] = []
        bare_cpu: list[float] = []
        for q in queries:
            service_ms += await timed([service_call(q)], service_cpu)
            bare_ms += await timed([bare_call(q)], bare_cpu)
        page = await db.snapshot(memory_search.search, project_id, queries[0], limit=PAGE)
        sizes.append(len(page.items))
        per_round.append(
            {
                "service_p50": quantile(service_ms, 0.5),
                "service_p99": quantile(service_ms, 0.99),
                "service_mean": statistics.fmean(service_ms),
                "bare_p50": quantile(bare_ms, 0.5),
                "bare_p99": quantile(bare_ms, 0.99),
                "bare_mean": statistics.fmean(bare_ms),
                "service_cpu_mean": statistics.fmean(service_cpu),
                "bare_cpu_mean": statistics.fmean(bare_cpu),
            }
        )
    median = {k: statistics.median(r[k] for r in per_round) for k in per_round[0]}
    median["rate_ratio"] = median["bare_mean"] / median["service_mean"]
    # The same ratio in CPU time: on a shared machine wall times move with the other load.
    median["cpu_ratio"] = median["bare_cpu_mean"] / median["service_cpu_mean"]
    return median


# --- 4. writes with and without the index -------------------------------------------------------


async def writes(db: Database, corpus: Corpus, project_id: str, count: int, rounds: int) -> Any:
    dialect = "postgresql" if not db.is_sqlite else "sqlite"

    async def phase(writers: int = 1) -> tuple[float, float]:
        """Writes per second, and CPU microseconds per write (the whole process's), from
        ``writers`` tasks at once, each writing its share one memory after another."""
        contents = [corpus.content() for _ in range(count)]

        async def writer(share: list[str]) -> None:
            for content in share:
                await db.transaction(
                    memory_service.store,
                    project_id,
                    None,
                    content=content,
                    tier="episodic",
                    key="bench-write",
                    grant=None,
                    provenance=API,
                )

        started, used = time.perf_counter(), time.process_time()
        await asyncio.gather(*(writer(contents[n::writers]) for n in range(writers)))
        cpu_us = (time.process_time() - used) * 1e6 / count
        return count / (time.perf_counter() - started), cpu_us

    def drop_triggers(conn: Connection) -> None:
        for statement in search_index.drop_trigger_statements(dialect):
            conn.exec_driver_sql(statement)

    def make_triggers(conn: Connection) -> None:
        # The head revision's triggers (migration 0014's, which keep ``live`` and the history
        # columns), not 0012's.
        for statement in search_index.trigger_statements(dialect, live=True):
            conn.exec_driver_sql(statement)

    def forget_writes(conn: Connection) -> None:
        conn.execute(
            delete(memories).where(
                memories.c.project_id == project_id, memories.c.key == "bench-write"
            )
        )

    Phase = tuple[float, float]

    async def paired_round(
        writers: int, alone_swap: bool | None = None
    ) -> tuple[Phase, Phase, Phase | None]:
        """The writes with the index, then as many without it; with ``alone_swap`` (SQLite),
        the database alone too, while the triggers are dropped (``fts5_alone``)."""
        indexed = await phase(writers)
        # Deleted with the triggers in place, so unindexed too: the store is N again.
        await db.transaction(forget_writes)
        await db.transaction(drop_triggers)
        alone = None
        try:
            bare = await phase(writers)
            if alone_swap is not None:
                alone = fts5_alone(db, project_id, swap=alone_swap)
            await db.transaction(forget_writes)  # never indexed, and gone before the triggers
        finally:
            await db.transaction(make_triggers)
        return indexed, bare, alone

    indexed, bare, alone = [], [], []
    for round_ in range(rounds):
        with_, without_, database_alone = await paired_round(
            1, round_ % 2 == 1 if db.is_sqlite else None
        )
        indexed.append(with_)
        bare.append(without_)
        if database_alone is not None:
            alone.append(database_alone)
    # The same from WRITERS tasks at once (not the goal's figure): on SQLite the group commit
    # then shares each commit among the transactions queued behind it, each in a savepoint.
    many: list[tuple[float, float]] = []
    for _ in range(rounds):
        with_, without_, _alone = await paired_round(WRITERS)
        many.append((with_[0], without_[0]))
    paired = [1 - w / b for (w, _), (b, _) in zip(indexed, bare, strict=True)]
    # The least any index kept in the memory's own transaction can add: the FTS5 insert alone,
    # in bare sqlite3, as a share of the service's own write without the index (its seconds).
    floor = [(with_ - without) * b for (without, with_), (b, _) in zip(alone, bare, strict=False)]
    with_index = statistics.median(rate for rate, _ in indexed)
    without = statistics.median(rate for rate, _ in bare)
    cpu_with = statistics.median(cpu for _, cpu in indexed)
    cpu_without = statistics.median(cpu for _, cpu in bare)
    return {
        "with_index_per_s": with_index,
        "without_index_per_s": without,
        "slowdown": 1 - with_index / without,
        "cpu_us_with_index": cpu_with,
        "cpu_us_without_index": cpu_without,
        "cpu_slowdown": cpu_with / cpu_without - 1,
        # The goal's figure: each round's two phases, run one after the other, side by side
        # (the machine's drift from round to round cancels), the median over the rounds.
        "paired_slowdown": statistics.median(paired),
        "paired_slowdowns": paired,
        # SQLite only (None on PostgreSQL, which meets the goal): the database alone.
        "alone_us_without_index": statistics.median(a for a, _ in alone) * 1e6 if alone else None,
        "alone_us_with_fts5": statistics.median(b for _, b in alone) * 1e6 if alone else None,
        "fts5_floor": statistics.median(floor) if floor else None,
        "fts5_floors": floor,
        "writers": WRITERS,
        "many_with_index_per_s": statistics.median(w for w, _ in many),
        "many_without_index_per_s": statistics.median(b for _, b in many),
        "many_paired_slowdowns": [1 - w / b for w, b in many],
        "many_paired_slowdown": statistics.median(1 - w / b for w, b in many),
    }


def fts5_alone(db: Database, project_id: str, *, swap: bool) -> tuple[float, float]:
    """The same writes in bare sqlite3 (no hearth code, the service's pragmas, the same file),
    seconds per write: the memories the service has just written, each inserted again under a
    new id in a transaction of its own, then again each with an FTS5 insert of its key and
    content in the same transaction (no row-id table, no copied columns: the least an FTS5 index
    needs). The search triggers are dropped meanwhile; the wake's counters' trigger runs, as
    for the service. Every row is taken out again (FTS5's ``delete``), untimed."""
    path = db.engine.url.database
    assert path is not None
    con = sqlite3.connect(path, isolation_level=None)
    try:
        for pragma in SQLITE_PRAGMAS:
            con.execute(pragma)
        con.row_factory = sqlite3.Row
        written = con.execute(
            "SELECT * FROM memories WHERE project_id = ? AND key = 'bench-write' ORDER BY rowid",
            (str(project_id),),
        ).fetchall()
        columns = list(written[0].keys())
        insert = (
            f"INSERT INTO memories ({', '.join(columns)})"
            f" VALUES ({', '.join('?' for _ in columns)})"
        )
        fts = search_index.FTS_TABLE
        # FTS5 rowids far beyond the row-id table's own, and gone before it reaches them.
        last = con.execute(f"SELECT coalesce(max(rowid), 0) FROM {search_index.ROWS_TABLE}")
        first = int(last.fetchone()[0]) + 10**9 + 1

        def timed(index: bool) -> tuple[float, list[tuple[str, int, sqlite3.Row]]]:
            made = [(str(uuid.uuid4()), first + n, row) for n, row in enumerate(written)]
            started = time.perf_counter()
            for id_, rowid, row in made:
                con.execute("BEGIN IMMEDIATE")
                con.execute(insert, tuple(id_ if c == "id" else row[c] for c in columns))
                if index:
                    con.execute(
                        f"INSERT INTO {fts} (rowid, key, content) VALUES (?, ?, ?)",
                        (rowid, row["key"] or "", row["content"]),
                    )
                con.execute("COMMIT")
            return (time.perf_counter() - started) / len(made), made

        def undo(made: list[tuple[str, int, sqlite3.Row]], index: bool) -> None:
            con.execute("BEGIN IMMEDIATE")
            for id_, rowid, row in made:
                if index:
                    con.execute(
                        f"INSERT INTO {fts} ({fts}, rowid, key, content)"
                        " VALUES ('delete', ?, ?, ?)",
                        (rowid, row["key"] or "", row["content"]),
                    )
                con.execute("DELETE FROM memories WHERE id = ?", (id_,))
            con.execute("COMMIT")

        def documents() -> int:  # FTS5 keeps one docsize row per document it holds
            return int(con.execute(f"SELECT count(*) FROM {fts}_docsize").fetchone()[0])

        held = documents()
        seconds = {}
        for index in (True, False) if swap else (False, True):
            seconds[index], made = timed(index)
            undo(made, index)
        assert documents() == held, "the database-alone writes left FTS5 documents behind"
        return seconds[False], seconds[True]
    finally:
        con.close()


# --- 5. the semantic leg at scale ---------------------------------------------------------------


async def semantic(
    db: Database, corpus: Corpus, project_id: str, encoder: Encoder, count: int
) -> dict[str, Any]:
    """The fused search over the filled project, every memory given a vector: random unit
    vectors (the exact scan reads and multiplies every candidate's vector, so its cost does not
    depend on their values, and embedding 100,000 memories for real would take half an hour),
    beside the full-text search alone on the same queries; and the cost of encoding, per query
    and per memory, with the real model."""
    rng = np.random.default_rng(18)

    def ids_of(conn: Connection) -> list[str]:
        rows = conn.execute(select(memories.c.id).where(memories.c.project_id == project_id))
        return [row.id for row in rows]

    ids = await db.snapshot(ids_of)
    started = time.perf_counter()
    for start in range(0, len(ids), BATCH):
        chunk = ids[start : start + BATCH]
        vectors = rng.standard_normal((len(chunk), 384)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        rows = [
            {
                "memory_id": i,
                "project_id": project_id,
                "model": MODEL_NAME,
                "vector": embeddings.to_bytes(v),
            }
            for i, v in zip(chunk, vectors, strict=True)
        ]
        await db.transaction(lambda conn, rows=rows: conn.execute(memory_embeddings.insert(), rows))
    fill_s = time.perf_counter() - started
    keeper = keeper_for(db, encoder)
    started = time.perf_counter()
    await keeper.meaning(project_id, "warm")  # the first search of a project reads its vectors
    load_s = time.perf_counter() - started
    texts = [corpus.content() for _ in range(64)]
    started = time.perf_counter()
    encoder.encode(texts)
    encode_memory_ms = (time.perf_counter() - started) * 1000 / len(texts)
    fused_ms, alone_ms, meaning_ms = [], [], []
    for q in [corpus.query() for _ in range(count)]:
        started = time.perf_counter()
        meaning = await keeper.meaning(project_id, q)
        meaning_ms.append((time.perf_counter() - started) * 1000)
        alone_ms += await timed(
            [lambda q=q: db.snapshot(memory_search.search, project_id, q, limit=PAGE)]
        )
        fused_ms += await timed(
            [
                lambda q=q, m=meaning: db.snapshot(
                    memory_search.search, project_id, q, limit=PAGE, meaning=m
                )
            ]
        )
    return {
        "vectors": len(ids),
        "vector_fill_s": fill_s,
        "vector_load_s": load_s,
        "fused_p50": quantile(fused_ms, 0.5),
        "fused_p99": quantile(fused_ms, 0.99),
        "full_text_p50": quantile(alone_ms, 0.5),
        "full_text_p99": quantile(alone_ms, 0.99),
        "meaning_p50": quantile(meaning_ms, 0.5),
        "meaning_p99": quantile(meaning_ms, 0.99),
        "encode_memory_ms": encode_memory_ms,
    }


# --- the run ------------------------------------------------------------------------------------


@contextmanager
def database_for(backend: str, server_url: str, tmp: Path) -> Iterator[str]:
    if backend == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp}/search.sqlite3"
        return
    with fresh_database(server_url) as url:
        yield url


async def run_backend(url: str, args: argparse.Namespace) -> dict[str, Any]:
    db = Database(url)
    try:
        await upgrade(db.engine)
        encoder = Encoder()
        evaluation = await evaluate(db, encoder)
        corpus = Corpus(seed=18)
        project_id, fill_rate = await fill(db, corpus, args.memories)

        def indexed(conn: Connection) -> int:
            dialect = conn.dialect.name
            return int(conn.exec_driver_sql(search_index.indexed_count_query(dialect)).scalar())

        held = await db.snapshot(indexed)
        search = await searches(db, corpus, project_id, args.searches, args.rounds)
        write = await writes(db, corpus, project_id, args.writes, args.write_rounds)
        assert await db.snapshot(indexed) == held, "the write phases left the index inexact"
        meaning = await semantic(db, corpus, project_id, encoder, args.semantic_searches)
        return {
            "memories": args.memories,
            "indexed": held,
            "fill_per_s": fill_rate,
            "evaluation": evaluation,
            "search": search,
            "writes": write,
            "semantic": meaning,
            "goals": {
                "p99_under_50_ms": search["service_p99"] < P99_GOAL_MS,
                "rate_ratio_at_least_0_5": search["rate_ratio"] >= RATE_GOAL,
                "writes_at_most_20_percent_slower": write["paired_slowdown"] <= WRITE_SLOWDOWN_GOAL,
            },
        }
    finally:
        await db.dispose()


def report(result: dict[str, Any]) -> str:
    lines = [
        f"machine: {platform.machine()}, {platform.python_implementation()} "
        f"{platform.python_version()}"
    ]
    for backend, r in result["backends"].items():
        s, w = r["search"], r["writes"]
        lines.append(
            f"\n{backend}: {r['memories']:,} memories ({r['indexed']:,} indexed, "
            f"filled at {r['fill_per_s']:,.0f} rows/s)"
        )
        lines.append(
            "  evaluation: kind            questions  recall@5   MRR  | fused: recall@5   MRR"
        )
        fused = r["evaluation"]["fused"]
        for kind, e in r["evaluation"]["full_text"].items():
            f = fused[kind]
            lines.append(
                f"              {kind:<15} {e['questions']:>9}  {e['recall_at_5']:>8.2f}"
                f"  {e['mrr']:>5.2f}  |        {f['recall_at_5']:>8.2f}  {f['mrr']:>5.2f}"
            )
        lines.append(
            f"  search (service): p50 {s['service_p50']:.2f} ms, p99 {s['service_p99']:.2f} ms"
        )
        lines.append(f"  bare index query: p50 {s['bare_p50']:.2f} ms, p99 {s['bare_p99']:.2f} ms")
        lines.append(
            f"  service rate / bare rate: {s['rate_ratio']:.2f} (goal >= {RATE_GOAL});"
            f" by CPU time {s['cpu_ratio']:.2f} ({s['service_cpu_mean']:.2f} ms against"
            f" {s['bare_cpu_mean']:.2f})"
        )
        lines.append(
            f"  writes: {w['with_index_per_s']:,.0f}/s with the index, "
            f"{w['without_index_per_s']:,.0f}/s without; slowdown {w['paired_slowdown']:+.1%}"
            f" (the median of each round's; goal <= {WRITE_SLOWDOWN_GOAL:.0%}), the medians'"
            f" {w['slowdown']:+.1%}; CPU per write {w['cpu_us_with_index']:.0f} us"
            f" against {w['cpu_us_without_index']:.0f}: {w['cpu_slowdown']:+.1%}; each round's"
            f" slowdown {', '.join(f'{x:+.1%}' for x in w['paired_slowdowns'])}"
        )
        lines.append(
            f"  writes from {w['writers']} writers at once: {w['many_with_index_per_s']:,.0f}/s"
            f" with the index, {w['many_without_index_per_s']:,.0f}/s without; slowdown"
            f" {w['many_paired_slowdown']:+.1%} (the median of each round's; not the goal's"
            f" figure)"
        )
        if w["fts5_floor"] is not None:
            lines.append(
                f"  the database alone (bare sqlite3, the same file and memories):"
                f" {w['alone_us_without_index']:.0f} us a write, {w['alone_us_with_fts5']:.0f} us"
                f" with an FTS5 insert in its transaction; that insert alone is"
                f" {w['fts5_floor']:+.1%} of the service's write without the index (the least any"
                f" index kept in the same transaction adds; each round's"
                f" {', '.join(f'{x:+.1%}' for x in w['fts5_floors'])})"
            )
        m = r["semantic"]
        lines.append(
            f"  semantic leg ({m['vectors']:,} vectors): fused search p50 {m['fused_p50']:.2f} ms,"
            f" p99 {m['fused_p99']:.2f} ms (full text alone: p50 {m['full_text_p50']:.2f},"
            f" p99 {m['full_text_p99']:.2f}); a query's encoding and the vectors' refresh p50"
            f" {m['meaning_p50']:.1f} ms, p99 {m['meaning_p99']:.1f}; encoding a memory"
            f" {m['encode_memory_ms']:.1f} ms; first read of the vectors {m['vector_load_s']:.2f} s"
        )
        goals = ", ".join(f"{k}: {'met' if v else 'MISSED'}" for k, v in r["goals"].items())
        lines.append(f"  goals: {goals}")
    return "\n".join(lines)


def positive(text: str) -> int:
    """A count of at least 1: every phase's figures are quantiles of what it timed."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError("a whole number, at least 1")
    return int(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--memories", type=positive, default=100_000)
    parser.add_argument("--searches", type=positive, default=300)
    parser.add_argument("--writes", type=positive, default=100)
    parser.add_argument("--write-rounds", type=positive, default=12)
    parser.add_argument("--rounds", type=positive, default=3)
    parser.add_argument("--semantic-searches", type=positive, default=100)
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument("--database-url", default=DEFAULT_DATABASE)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    result: dict[str, Any] = {"backends": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for backend in args.backends.split(","):
            with database_for(backend, args.database_url, Path(tmp)) as url:
                result["backends"][backend] = asyncio.run(run_backend(url, args))
    print(json.dumps(result, indent=2) if args.json else report(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
