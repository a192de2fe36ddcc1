"""The vectors of the semantic leg of memory search (docs/memory.md, "Semantic search"): which
memories have none yet, keeping new ones, and reading a project's vectors written since a point
(``semantic.vectors`` keeps them in memory and ranks them there).

A vector is the memory's unit embedding under ``model`` as little-endian float32 bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import Connection, bindparam, exists, literal, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from ..db.tables import memories, memory_embeddings

Vector = NDArray[np.float32]
DTYPE: Final = np.dtype("<f4")

# Below this cosine a memory is not offered as a meaning match: the model's similarity of
# unrelated sentences sits around 0 to 0.2, paraphrases of one fact at 0.4 and above
# (the evaluation set, tests/support/memory_search_cases.py).
SIMILARITY_FLOOR: Final = 0.3


def to_bytes(vector: Vector) -> bytes:
    return np.asarray(vector, dtype=DTYPE).tobytes()


_MISSING = (
    select(memories.c.id, memories.c.content)
    .where(
        memories.c.deleted_at.is_(None),
        ~exists().where(
            memory_embeddings.c.memory_id == memories.c.id,
            memory_embeddings.c.model == bindparam("model"),
        ),
    )
    .order_by(memories.c.created_at.desc(), memories.c.id.desc())
    .limit(bindparam("limit"))
)


def missing(conn: Connection, model: str, limit: int) -> list[tuple[str, str]]:
    """Up to ``limit`` memories (id, content) with no vector under ``model``, newest first;
    tombstones have no text to embed."""
    return [
        (row.id, row.content) for row in conn.execute(_MISSING, {"model": model, "limit": limit})
    ]


def keep(conn: Connection, model: str, vectors: Sequence[tuple[str, str, Vector]]) -> int:
    """Store the vectors (memory id, the content embedded, vector) of memories whose content
    is still that text and that have none yet; how many were stored. A memory erased or
    changed meanwhile gets no vector (the SELECT finds no row), and a vector another process
    stored first is kept (one vector per memory)."""
    dialect_insert = pg_insert if conn.dialect.name == "postgresql" else sqlite_insert
    stored = 0
    for memory_id, content, vector in vectors:
        source = select(
            memories.c.id,
            memories.c.project_id,
            literal(model).label("model"),
            literal(to_bytes(vector)).label("vector"),
        ).where(
            memories.c.id == memory_id,
            memories.c.content == content,
            memories.c.deleted_at.is_(None),
        )
        statement = (
            dialect_insert(memory_embeddings)
            .from_select(["memory_id", "project_id", "model", "vector"], source)
            .on_conflict_do_nothing(index_elements=["memory_id"])
        )
        stored += max(conn.execute(statement).rowcount, 0)
    return stored


_SINCE = (
    select(memory_embeddings.c.seq, memory_embeddings.c.memory_id, memory_embeddings.c.vector)
    .where(
        memory_embeddings.c.project_id == bindparam("project"),
        memory_embeddings.c.model == bindparam("model"),
        memory_embeddings.c.seq > bindparam("after"),
    )
    .order_by(memory_embeddings.c.seq)
)


def since(
    conn: Connection, project_id: str, model: str, after: int
) -> list[tuple[int, str, bytes]]:
    """The project's vectors under ``model`` written after ``seq`` ``after``, in order."""
    rows = conn.execute(_SINCE, {"project": project_id, "model": model, "after": after})
    return [(row.seq, row.memory_id, row.vector) for row in rows]


__all__ = ["DTYPE", "SIMILARITY_FLOOR", "Vector", "keep", "missing", "since", "to_bytes"]
