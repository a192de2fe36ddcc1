"""Projects' vectors in memory, ranked by dot product: the nearest memories to a query.

Reading every vector of a project from the database for each search cost about a second at
100,000 memories (150 MB of rows); a product against a matrix already in memory costs a few
milliseconds. So a process keeps each searched project's vectors, reads the ones written since
(``memory_embeddings.since``, by ``seq``) before each search, and lets the database say which
of the nearest a search may return (filters, supersession, deletion: ``memory_search``), so a
vector kept here for a memory since erased is never an answer. Least recently searched projects
are dropped beyond ``capacity`` vectors (1.5 kB each).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Final

import numpy as np

from ..services.memory_embeddings import DTYPE, SIMILARITY_FLOOR, Vector

DIMENSIONS: Final = 384


class ProjectVectors:
    """One project's vectors, in the order written."""

    def __init__(self) -> None:
        self.ids: list[str] = []
        self.known: set[str] = set()
        self.last_seq = 0
        self._pending: list[Vector] = []
        self._matrix: Vector = np.zeros((0, DIMENSIONS), dtype=np.float32)

    def __len__(self) -> int:
        return len(self.ids)

    def add(self, rows: Sequence[tuple[int, str, bytes]]) -> None:
        """Add the rows (seq, memory id, vector) not yet held; a row read twice (the lookback
        of ``SemanticKeeper.refresh``) is held once."""
        fresh = [
            (memory_id, vector) for _, memory_id, vector in rows if memory_id not in self.known
        ]
        if rows:  # in the order written
            self.last_seq = max(self.last_seq, rows[-1][0])
        if not fresh:
            return
        for memory_id, _ in fresh:
            self.ids.append(memory_id)
            self.known.add(memory_id)
        blob = b"".join(vector for _, vector in fresh)
        self._pending.append(np.frombuffer(blob, dtype=DTYPE).reshape(len(fresh), DIMENSIONS))

    def matrix(self) -> Vector:
        if self._pending:
            self._matrix = np.concatenate([self._matrix, *self._pending]).astype(np.float32)
            self._pending = []
        return self._matrix

    def nearest(self, query: Vector, count: int) -> list[tuple[str, float]]:
        """Up to ``count`` memories nearest ``query`` (id, cosine), best first (ties by id),
        none below ``SIMILARITY_FLOOR``."""
        matrix = self.matrix()
        if not len(matrix) or count <= 0:
            return []
        similarity = matrix @ np.asarray(query, dtype=np.float32)
        count = min(count, len(similarity))
        best = np.argpartition(-similarity, count - 1)[:count]
        ranked = sorted(best.tolist(), key=lambda i: (-float(similarity[i]), self.ids[i]))
        return [
            (self.ids[i], float(similarity[i])) for i in ranked if similarity[i] >= SIMILARITY_FLOOR
        ]


class VectorCache:
    """Projects' vectors, the least recently searched dropped beyond ``capacity`` vectors."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._projects: OrderedDict[str, ProjectVectors] = OrderedDict()

    def project(self, project_id: str) -> ProjectVectors:
        found = self._projects.get(project_id)
        if found is None:
            found = self._projects[project_id] = ProjectVectors()
        self._projects.move_to_end(project_id)
        return found

    def fit(self) -> None:
        """Drop the least recently searched projects while over capacity (never the last one
        searched: a project larger than the capacity is still searched, then dropped)."""
        total = sum(len(p) for p in self._projects.values())
        while total > self.capacity and len(self._projects) > 1:
            _, dropped = self._projects.popitem(last=False)
            total -= len(dropped)
