"""The async engine, with one write discipline that holds on SQLite and PostgreSQL alike."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Concatenate, ParamSpec, TypeAlias, TypeVar, cast

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from . import writes
from .direct import savepoint

T = TypeVar("T")
P = ParamSpec("P")
# A transaction waiting for the SQLite writer: the function over the connection, and its result.
_Queued: TypeAlias = "tuple[Callable[[Connection], Any], asyncio.Future[Any]]"
GROUP_MAX = 64  # transactions per group commit (bounds the wait of the last one in a group)


def utcnow() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def epoch_ms() -> int:
    return int(datetime.now(UTC).timestamp() * 1000)


class Database:
    """Owns the engine; ``write()`` and ``read()`` are the only ways to a connection.

    SQLite allows one writer: a deferred transaction that later writes can fail at once with
    "database is locked". Writes therefore start with ``BEGIN IMMEDIATE`` (waiting on the busy
    timeout across processes) and are queued in-process by a lock, so the process never spins
    on the file lock. WAL lets reads go on beside the writer; ``synchronous=NORMAL`` in WAL mode
    keeps every commit across a crash of the process.

    Two styles, one discipline. ``write()``/``read()`` give an async connection, each statement
    its own await. ``transaction(fn)``/``snapshot(fn)`` run a plain function over a sync
    connection as one unit: on SQLite in a dedicated writer thread (or a small reader pool) with
    the stdlib driver, so a transaction of ten statements costs one thread hop instead of the
    three per statement that aiosqlite takes, and transactions that queue up meanwhile share
    one commit (``_drain``); on PostgreSQL through ``run_sync`` on the async connection. Hot
    paths (arrival, bearer lookup, root-proof mutations) use the second style.
    Both share the in-process writer lock, so the two never contend for SQLite's file lock.
    """

    def __init__(self, url: str, *, echo: bool = False, pool_size: int = 10) -> None:
        self.url = url
        self.is_sqlite = url.startswith("sqlite")
        # Bound values stay out of the text of database errors, which reach the logs: they may
        # be secrets (key hashes, tokens, vault ciphertext) or whatever a client sent.
        kwargs: dict[str, Any] = {"echo": echo, "hide_parameters": True}
        if self.is_sqlite:
            if ":memory:" in url or url.rstrip("/").endswith("sqlite+aiosqlite:"):
                raise ValueError("use a SQLite file; an in-memory database is lost per connection")
            kwargs["connect_args"] = {"timeout": 30}
        else:
            # No ``pool_pre_ping``: on asyncpg it is three round trips (BEGIN, ``;``, ROLLBACK)
            # before every checkout, more than most requests' own statements. A connection the
            # server closed (a restart, an idle timeout, a terminated backend) has been seen
            # closed by the event loop already, and is replaced at checkout (``_drop_closed``).
            # At most ``2 * pool_size`` connections, as before, but all of them kept once open:
            # overflow connections closed on return were reopened by the next burst, each new
            # one paying for its connect and for preparing every statement again.
            kwargs.update(pool_size=2 * pool_size, max_overflow=0)
        self.engine: AsyncEngine = create_async_engine(url, **kwargs)
        writes.listen(self.engine.sync_engine)
        # Snapshots and reads on PostgreSQL run in autocommit: under READ COMMITTED every
        # statement sees its own snapshot inside a transaction as well, so the BEGIN and the
        # ROLLBACK of a read-only transaction were two round trips that bought nothing.
        self._reader_engine: AsyncEngine = self.engine
        if not self.is_sqlite:
            _drop_closed(self.engine.sync_engine)
            self._reader_engine = self.engine.execution_options(isolation_level="AUTOCOMMIT")
        self._write_lock = asyncio.Lock() if self.is_sqlite else None
        self._pending: list[_Queued] = []
        self._drainer: asyncio.Task[None] | None = None
        self._sync_engine: Engine | None = None
        self._writer: ThreadPoolExecutor | None = None
        self._readers: ThreadPoolExecutor | None = None
        if self.is_sqlite:
            _sqlite_pragmas(self.engine.sync_engine)
            sync_url = self.engine.url.set(drivername="sqlite+pysqlite")
            self._sync_engine = create_engine(
                sync_url,
                echo=echo,
                hide_parameters=True,
                connect_args={"timeout": 30, "check_same_thread": False},
                pool_size=READERS + 1,
                max_overflow=0,
            )
            _sqlite_pragmas(self._sync_engine)
            writes.listen(self._sync_engine)
            self._writer = ThreadPoolExecutor(1, thread_name_prefix="hearth-db-writer")
            self._readers = ThreadPoolExecutor(READERS, thread_name_prefix="hearth-db-reader")

    async def transaction(
        self, fn: Callable[Concatenate[Connection, P], T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """``fn(conn, ...)`` in one transaction that may write: committed when it returns,
        rolled back when it raises (the exception reaches the caller). Work registered with
        ``at_every_write`` in the caller's context runs last, inside the same transaction."""
        extra = _AT_EVERY_WRITE.get()
        mutates = REQUEST_MUTATES.get()

        def work(conn: Connection) -> T:
            # Set on every transaction (a group commit shares one connection): services read
            # it with ``request_mutates`` (a moved identity refuses mutations).
            conn.execution_options(hearth_mutation=mutates)
            if extra is None:
                return fn(conn, *args, **kwargs)
            # The extra work may ask which tables the transaction wrote (db/writes.py).
            with writes.tracked(conn):
                result = fn(conn, *args, **kwargs)
                extra.run(conn)
            return result

        if self._write_lock is None:
            async with self.engine.begin() as conn:
                result = await conn.run_sync(work)
        else:
            loop = asyncio.get_running_loop()
            future: asyncio.Future[Any] = loop.create_future()
            self._pending.append((work, future))
            drainer = self._drainer
            if drainer is None or drainer.done() or drainer.get_loop() is not loop:
                self._drainer = loop.create_task(self._drain())
            result = cast(T, await future)
        if extra is not None:
            extra.committed = True
        return result

    async def _drain(self) -> None:
        """Group commit (SQLite): the transactions queued while the writer was busy run one
        after another in the writer thread, each in its own savepoint, and commit together.
        Serial order and per-transaction rollback are kept; what is shared is the commit, whose
        WAL writes (every dirty page, twice a syscall) cost more than most transactions."""
        assert self._write_lock is not None
        assert self._writer is not None
        loop = asyncio.get_running_loop()
        while self._pending:
            async with self._write_lock:
                batch = [item for item in self._pending[:GROUP_MAX] if not item[1].done()]
                del self._pending[:GROUP_MAX]
                if not batch:
                    continue
                outcomes = await loop.run_in_executor(self._writer, self._sync_group, batch)
            for (_, future), (ok, value) in zip(batch, outcomes, strict=True):
                if future.done():  # the caller was cancelled while its transaction ran
                    continue
                if ok:
                    future.set_result(value)
                else:
                    future.set_exception(value)

    def _sync_group(self, batch: list[_Queued]) -> list[tuple[bool, Any]]:
        assert self._sync_engine is not None
        if len(batch) == 1:
            try:
                return [(True, self._sync_transaction(batch[0][0]))]
            except Exception as exc:
                return [(False, exc)]
        outcomes: list[tuple[bool, Any]] = []
        try:
            with self._sync_engine.connect() as conn:
                conn.execution_options(hearth_write=True)
                with conn.begin():
                    for run, _ in batch:
                        try:
                            with savepoint(conn, "hearth_group"):
                                value = run(conn)
                        except Exception as exc:
                            outcomes.append((False, exc))
                        else:
                            outcomes.append((True, value))
        except Exception as exc:  # the group did not commit: no transaction of it happened
            return [(False, exc)] * len(batch)
        return outcomes

    async def snapshot(
        self, fn: Callable[Concatenate[Connection, P], T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """``fn(conn, ...)`` over one read-only connection (one snapshot on SQLite's WAL)."""
        mutates = REQUEST_MUTATES.get()

        def work(conn: Connection) -> T:
            # A mutation's lookups run here too: they must know it (``request_mutates``).
            conn.execution_options(hearth_mutation=mutates)
            return fn(conn, *args, **kwargs)

        if self._readers is None:
            async with self._reader_engine.connect() as conn:
                return await conn.run_sync(work)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._readers, lambda: self._sync_snapshot(work))

    def _sync_transaction(
        self, fn: Callable[Concatenate[Connection, P], T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        assert self._sync_engine is not None
        with self._sync_engine.connect() as conn:
            conn.execution_options(hearth_write=True)
            with conn.begin():
                return fn(conn, *args, **kwargs)

    def _sync_snapshot(
        self, fn: Callable[Concatenate[Connection, P], T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        assert self._sync_engine is not None
        with self._sync_engine.connect() as conn:
            return fn(conn, *args, **kwargs)

    @asynccontextmanager
    async def write(self) -> AsyncIterator[AsyncConnection]:
        """One transaction that may write; committed on success, rolled back on error.
        Work registered with ``at_every_write`` runs last inside it, as for ``transaction``."""
        extra = _AT_EVERY_WRITE.get()
        if self._write_lock is None:
            async with self.engine.begin() as conn, _with_extra(conn, extra):
                yield conn
        else:
            async with self._write_lock, self.engine.connect() as plain:
                conn = await plain.execution_options(hearth_write=True)
                async with conn.begin(), _with_extra(conn, extra):
                    yield conn
        if extra is not None:
            extra.committed = True

    @asynccontextmanager
    async def read(self) -> AsyncIterator[AsyncConnection]:
        """A connection for reads (autocommit on PostgreSQL, as ``snapshot``)."""
        async with self._reader_engine.connect() as conn:
            yield conn

    async def dispose(self) -> None:
        await self.engine.dispose()
        for pool in (self._writer, self._readers):
            if pool is not None:
                pool.shutdown(wait=True)
        if self._sync_engine is not None:
            self._sync_engine.dispose()


@dataclass
class AtEveryWrite:
    """Work that every write transaction made in a context runs last, inside itself.

    The change feed registers the bump of the mutated project's change stamp here for the
    length of a request (server/changes.py), so the stamp moves in the same commit as the
    write instead of in a transaction of its own after it. ``committed`` says whether a
    transaction that ran it has committed.
    """

    run: Callable[[Connection], None]
    committed: bool = False


_AT_EVERY_WRITE: ContextVar[AtEveryWrite | None] = ContextVar("at_every_write", default=None)
# Whether the request being served is a mutation (POST, PUT, PATCH, DELETE): set by the
# middleware, carried into the database threads by ``transaction`` and ``snapshot`` as an
# execution option.
REQUEST_MUTATES: ContextVar[bool] = ContextVar("hearth_request_mutates", default=False)


def request_mutates(conn: Connection) -> bool:
    """True inside a transaction run for a mutating request."""
    return bool(conn.get_execution_options().get("hearth_mutation"))


@asynccontextmanager
async def _with_extra(conn: AsyncConnection, extra: AtEveryWrite | None) -> AsyncIterator[None]:
    """``extra`` run last inside the async transaction on ``conn``, tracking its writes."""
    if extra is None:
        yield
        return
    sync = conn.sync_connection
    assert sync is not None  # the transaction on it has begun
    with writes.tracked(sync):
        yield
        await conn.run_sync(extra.run)


@contextmanager
def at_every_write(extra: AtEveryWrite | None) -> Iterator[None]:
    """``extra`` for every ``Database.transaction`` awaited in this context until the block
    ends (None: nothing)."""
    token = _AT_EVERY_WRITE.set(extra)
    try:
        yield
    finally:
        _AT_EVERY_WRITE.reset(token)


READERS = 2  # SQLite reader threads: reads run beside the writer under WAL


def _drop_closed(engine: Engine) -> None:
    """Replace, at checkout, a pooled connection that the driver knows is closed."""

    @event.listens_for(engine, "checkout")
    def _checkout(dbapi_connection: Any, _record: Any, _proxy: Any) -> None:
        # The asyncpg adapter's driver connection: closed once the server ended the session
        # and the event loop read the end. The pool retries with a new connection.
        if dbapi_connection.driver_connection.is_closed():
            raise DisconnectionError("the server closed this pooled connection")


# Every SQLite connection's settings (bench/export.py measures a bare table with them too).
SQLITE_PRAGMAS: tuple[str, ...] = (
    "PRAGMA journal_mode=WAL",
    "PRAGMA synchronous=NORMAL",
    "PRAGMA foreign_keys=ON",
    "PRAGMA busy_timeout=30000",
    "PRAGMA mmap_size=268435456",
    "PRAGMA cache_size=-32768",
    "PRAGMA temp_store=MEMORY",
)


def _sqlite_pragmas(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _connect(dbapi_connection: Any, _record: Any) -> None:
        # Autocommit at the driver, so that the "begin" hook below decides how a transaction
        # starts (pysqlite's own implicit BEGIN is always DEFERRED).
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        for pragma in SQLITE_PRAGMAS:
            cursor.execute(pragma)
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(conn: Any) -> None:
        immediate = conn.get_execution_options().get("hearth_write", False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


def dialect_insert(conn: Connection | AsyncConnection) -> Any:
    """The connection's dialect's ``insert``, which has ``on_conflict_do_nothing`` and
    ``on_conflict_do_update`` (spelled alike on PostgreSQL and SQLite; Core's has neither)."""
    return postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert


__all__ = ["AtEveryWrite", "Database", "at_every_write", "dialect_insert", "epoch_ms", "utcnow"]
