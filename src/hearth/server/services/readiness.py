"""Whether this process can serve: the rules of ``GET /readyz`` (``routes/health.py``).

Three checks, run at once, each bounded in time so that a probe answers even when what it
checks hangs:

- **database**: reachable, and its Alembic revision is this release's head (an older schema
  means the migrations have not run; a newer one, that a newer release migrated it). Read only.
- **blocks**: the block store can take a block. On an object store (``blockstore_url``), one
  LIST request under its prefix answers within the check's time, with no retry (reachable, the
  bucket there, the credentials good); ``store`` is then ``object_store``. A local store
  that exists gets a probe file written, fsynced and removed. A local store not made yet (it
  is made on the first block) is not made here: its nearest existing ancestor must be a
  directory this process may create entries in, and a directory that exists without the
  store's marker gets nothing written into it, since the store refuses to make itself in a
  directory that is not empty.
- **redis**: up, down or not configured. Reported, never required: without Redis the limiter
  fails open and the voice stays in-process (docs/service.md).

Nothing secret is reported: no URL, no path, no exception message (they may name hosts or
credentials), only exception type names and errno names.
"""

from __future__ import annotations

import asyncio
import errno
import functools
import os
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection

from hearth.blockstore.fs import MARKER_NAME

from ..db.engine import Database
from ..db.migrate import alembic_config
from ..events import EventBus
from ..limiter import Limiter

CHECK_TIMEOUT_S = 3.0  # per check; a probe's own timeout is usually a few seconds more
PROBE_PREFIX = ".readyz-"
_STALE_PROBE_S = 60.0  # a probe file this old was left by a process that died writing it

Check = dict[str, Any]


class ObjectStore(Protocol):
    """A block store on an object store (hearth.blockstore.s3.S3BlockStore)."""

    def probe(self, timeout_s: float) -> None: ...


@dataclass(frozen=True)
class Readiness:
    checks: dict[str, Check]

    @property
    def ready(self) -> bool:
        return all(check["ok"] for check in self.checks.values())

    @property
    def failing(self) -> list[str]:
        return [name for name, check in self.checks.items() if not check["ok"]]


async def readiness(
    db: Database,
    blocks_dir: Path,
    *,
    object_store: ObjectStore | None = None,
    redis_configured: bool,
    limiter: Limiter,
    events: EventBus,
) -> Readiness:
    """``object_store``: the block store when it is one (``blockstore_url``); ``blocks_dir``
    is checked otherwise."""
    blocks_check = (
        asyncio.to_thread(check_blocks, blocks_dir)
        if object_store is None
        else asyncio.to_thread(check_object_store, object_store)
    )
    database, blocks, redis = await asyncio.gather(
        _bounded(check_database(db)),
        _bounded(blocks_check),
        check_redis(redis_configured, limiter, events),
    )
    return Readiness({"database": database, "blocks": blocks, "redis": redis})


async def _bounded(check: Awaitable[Check]) -> Check:
    try:
        async with asyncio.timeout(CHECK_TIMEOUT_S):
            return await check
    except TimeoutError:
        return {"ok": False, "problem": f"no answer within {CHECK_TIMEOUT_S:g} s"}


# --- database -----------------------------------------------------------------------------------


@functools.cache
def expected_heads() -> frozenset[str]:
    """The head revision(s) of this release's migrations (read from the scripts once)."""
    return frozenset(ScriptDirectory.from_config(alembic_config()).get_heads())


def _current_heads(conn: Connection) -> tuple[str, ...]:
    return MigrationContext.configure(conn).get_current_heads()


async def check_database(db: Database) -> Check:
    heads = await asyncio.to_thread(expected_heads)
    try:
        current = frozenset(await db.snapshot(_current_heads))
    except Exception as exc:  # any failure to read is "unreachable"; its text may name hosts
        return {"ok": False, "problem": f"unreachable ({type(exc).__name__})"}
    check: Check = {"ok": current == heads, "revision": _one(current), "head": _one(heads)}
    if current != heads:
        check["problem"] = (
            "not migrated (no revision)"
            if not current
            else "not at this release's head revision (run the migrations)"
        )
    return check


def _one(revisions: frozenset[str]) -> str | None:
    return ",".join(sorted(revisions)) or None


# --- block store --------------------------------------------------------------------------------


def check_blocks(root: Path) -> Check:
    """Whether a block could be stored now (blocking file work: run it in a thread)."""
    try:
        if root.is_dir():
            if not (root / MARKER_NAME).is_file():
                return _may_create_in(root, store="absent")
            _probe_write(root)
            return {"ok": True, "store": "present"}
        if root.exists():
            return {"ok": False, "problem": "the block store path is not a directory"}
        ancestor = root.parent
        while not ancestor.exists() and ancestor != ancestor.parent:
            ancestor = ancestor.parent
        return _may_create_in(ancestor, store="absent")
    except OSError as exc:
        return {"ok": False, "problem": f"not writable ({_errno_name(exc)})"}


# The probe answers by itself a little before the check's own bound cuts it off.
OBJECT_STORE_PROBE_S = CHECK_TIMEOUT_S - 0.5


def check_object_store(store: ObjectStore) -> Check:
    """Whether the object store answers a LIST now (blocking: run it in a thread). The store's
    error is not reported: it names the endpoint and the bucket."""
    try:
        store.probe(OBJECT_STORE_PROBE_S)
    except Exception as exc:  # any failure is "unreachable"; its text names hosts
        return {
            "ok": False,
            "store": "object_store",
            "problem": f"the object store does not answer ({type(exc).__name__})",
        }
    return {"ok": True, "store": "object_store"}


def _may_create_in(directory: Path, *, store: str) -> Check:
    # The store is made on the first block, with every missing directory: here it must be
    # possible to create entries. (As root, modes do not stop writes, and access() agrees.)
    if not directory.is_dir():
        return {"ok": False, "problem": "a parent of the block store path is not a directory"}
    if not os.access(directory, os.W_OK | os.X_OK):
        return {"ok": False, "problem": "cannot create the block store (EACCES)"}
    return {"ok": True, "store": store}


def _probe_write(root: Path) -> None:
    _remove_stale_probes(root)
    fd, name = tempfile.mkstemp(prefix=PROBE_PREFIX, dir=root)
    try:
        os.write(fd, b"ready\n")
        os.fsync(fd)
    finally:
        os.close(fd)
        os.unlink(name)


def _remove_stale_probes(root: Path) -> None:
    cutoff = time.time() - _STALE_PROBE_S
    for leftover in root.glob(PROBE_PREFIX + "*"):
        try:
            if leftover.stat().st_mtime < cutoff:
                leftover.unlink()
        except FileNotFoundError:  # another probe removed it first
            continue


def _errno_name(exc: OSError) -> str:
    return errno.errorcode.get(exc.errno or 0, type(exc).__name__)


# --- Redis --------------------------------------------------------------------------------------


async def check_redis(configured: bool, limiter: Limiter, events: EventBus) -> Check:
    """Redis is optional, so this check is always ok: its ``state`` is what it reports."""
    if not configured:
        return {"ok": True, "state": "not_configured", "required": False}
    probe: Callable[[], Awaitable[bool]]
    if limiter.backend == "redis":  # the limiter's probe sits behind its breaker: cheap if down

        async def probe() -> bool:
            return bool((await limiter.status()).get("available"))
    else:
        probe = events.redis_up
    try:
        async with asyncio.timeout(CHECK_TIMEOUT_S):
            up = await probe()
    except Exception:  # a timeout too: reported, never raised, since Redis is not required
        up = False
    return {"ok": True, "state": "up" if up else "down", "required": False}


__all__ = [
    "CHECK_TIMEOUT_S",
    "Readiness",
    "check_blocks",
    "check_database",
    "check_object_store",
    "check_redis",
    "expected_heads",
    "readiness",
]
