"""The per-process wake cache: rendered answers, and the sections they were assembled from.

Rendered wakes are kept per (project, identity as asked, format) for ``ttl`` seconds, each under
the project's change stamp read before it was built (services/wake_stamps.py). ``get`` serves an
entry only if no change came after its stamp: any change bumps the stamp in the database, so
whichever process answers the next wake read misses (docs/wake.md, "the cache"). ``put`` never
replaces an entry built under a newer stamp with a slower build from an older one.

Beside them, the sections of the last build per (project, identity as asked), each under the
stamp it was built under and with its own expiry. After a change, ``sections`` gives back those
no later change touched (the stamps say which, services/wake_sections.py), and only the others
are built again. A section is never kept past ``ttl`` from its own build, so what a stamp cannot
see (a heartbeat's ``last_seen_at``, the 24-hour window of thoughts) is as fresh as in a
rendered answer.

``invalidate(project)`` drops a project's rendered answers early (the event bus calls it):
memory is freed, correctness does not rest on it; the sections stay, being checked against
stamps. ``forget(project)`` drops the sections too, for a change whose stamp could not be
bumped. Thread-safe.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection

from ..db.engine import utcnow
from ..json_types import JsonObject
from . import wake as wake_service
from . import wake_stamps
from .wake_sections import SCOPE
from .wake_stamps import Stamps

CACHE_TTL_S = 5.0
CACHE_MAX_ENTRIES = 1_024


@dataclass(frozen=True)
class Cached:
    body: bytes
    media_type: str
    generated_at: str
    expires: float
    stamp: int  # the project's change stamp read before the build (services/wake_stamps.py)


@dataclass(frozen=True)
class Part:
    value: Any  # never mutated once built: assembled documents share it
    stamp: int
    expires: float


CacheKey = tuple[str, str | None, str]  # (project, identity as asked, format)
PartsKey = tuple[str, str | None]  # (project, identity as asked)


class WakeCache:
    """Rendered wakes and their sections (module docstring)."""

    def __init__(
        self,
        ttl: float = CACHE_TTL_S,
        *,
        clock: Callable[[], float] = time.monotonic,
        max_entries: int = CACHE_MAX_ENTRIES,
    ) -> None:
        self.ttl = ttl
        self.clock = clock
        self.max_entries = max_entries
        self._entries: OrderedDict[CacheKey, Cached] = OrderedDict()
        self._parts: OrderedDict[PartsKey, dict[str, Part]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: CacheKey, *, stamp: int) -> Cached | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            # An entry built under a newer stamp than this reader saw holds all it must show.
            if entry.expires <= self.clock() or entry.stamp < stamp:
                del self._entries[key]
                return None
            self._entries.move_to_end(key)
            return entry

    def put(
        self, key: CacheKey, body: bytes, media_type: str, generated_at: str, *, stamp: int
    ) -> None:
        with self._lock:
            held = self._entries.get(key)
            if held is not None and held.stamp > stamp and held.expires > self.clock():
                return
            self._entries[key] = Cached(
                body, media_type, generated_at, self.clock() + self.ttl, stamp
            )
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)

    def sections(self, key: PartsKey, stamps: Stamps) -> JsonObject:
        """The sections held for ``key`` that no change after their build touched and that
        have not expired: none at all once the scope itself is not among them."""
        with self._lock:
            held = self._parts.get(key)
            if held is None:
                return {}
            now = self.clock()
            fresh = {
                name: part.value
                for name, part in held.items()
                if part.expires > now and stamps.sections.get(name, part.stamp + 1) <= part.stamp
            }
            self._parts.move_to_end(key)
            return fresh if SCOPE in fresh else {}

    def put_sections(
        self, key: PartsKey, built: Mapping[str, Any], *, stamp: int, kept: Mapping[str, Any]
    ) -> None:
        """Hold the sections just ``built`` under ``stamp``; those ``kept`` from an earlier
        build keep their own stamp and expiry."""
        with self._lock:
            now = self.clock()
            held = self._parts.get(key, {})
            parts = {name: part for name, part in held.items() if name in kept}
            for name, value in built.items():
                older = held.get(name)
                if older is not None and older.stamp > stamp and older.expires > now:
                    parts[name] = older  # a slower build from an older stamp loses
                else:
                    parts[name] = Part(value, stamp, now + self.ttl)
            self._parts[key] = parts
            self._parts.move_to_end(key)
            while len(self._parts) > self.max_entries:
                self._parts.popitem(last=False)

    def invalidate(self, project_id: str) -> None:
        """Drop the project's rendered answers (its sections are checked against stamps)."""
        with self._lock:
            for key in [k for k in self._entries if k[0] == project_id]:
                del self._entries[key]

    def forget(self, project_id: str) -> None:
        """Drop everything held of the project: a change its stamps do not show was made."""
        self.invalidate(project_id)
        with self._lock:
            for key in [k for k in self._parts if k[0] == project_id]:
                del self._parts[key]

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)


CACHE = WakeCache()


@dataclass(frozen=True)
class Answer:
    """A wake read: the stamp it was read under, and the rendered answer cached under it or
    else the document built anew (to render, then ``put``)."""

    stamp: int
    cached: Cached | None
    document: JsonObject | None


def read_or_build(
    conn: Connection, key: CacheKey, *, refresh: bool, cache: WakeCache = CACHE
) -> Answer:
    """The project's stamps, then the answer cached under them, or else the wake built from the
    sections no change has touched and those built anew: one snapshot (one connection) for all.
    Read before the build, in every process: a wake cached before the project's last change
    (made through any worker) was stored under an older stamp and is not served.
    ``refresh`` builds every section anew."""
    project_id, identity_id, _ = key
    stamps = wake_stamps.read(conn, project_id)
    if not refresh:
        cached = cache.get(key, stamp=stamps.stamp)
        if cached is not None:
            return Answer(stamps.stamp, cached, None)
    kept = {} if refresh else cache.sections((project_id, identity_id), stamps)
    now = utcnow()
    built = wake_service.build_sections(conn, project_id, identity_id, now=now, kept=kept)
    cache.put_sections((project_id, identity_id), built, stamp=stamps.stamp, kept=kept)
    document = wake_service.assemble(project_id, {**kept, **built}, now)
    return Answer(stamps.stamp, None, document)


def invalidate(project_id: str) -> None:
    """Drop the project's rendered wakes early; the event bus calls this on every change."""
    CACHE.invalidate(project_id)


def forget(project_id: str) -> None:
    """Drop all the process holds of the project's wakes: a change could not bump its stamp."""
    CACHE.forget(project_id)


__all__ = [
    "CACHE",
    "Answer",
    "CacheKey",
    "Cached",
    "Part",
    "PartsKey",
    "WakeCache",
    "forget",
    "invalidate",
    "read_or_build",
]
