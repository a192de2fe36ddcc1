"""The orchestrator worker: claims hosted runtimes under leases, moves them through the state
machine, and runs their think cycles (docs/orchestrator.md).

One loop per worker (``hearth worker``, or a task inside ``hearth serve``). Each pass:

1. claim runtimes whose lease is free or lapsed (``services.runtimes.leases.claim``), up to
   ``runtime_max_per_worker``;
2. for each held runtime, at most ``runtime_concurrency`` at once: renew the lease with a
   heartbeat when due (``last_seen_at``), then one step of its state:
   ``provisioned`` -> bind; ``starting`` -> handshake (trusted: the key unwraps; bridged: the
   hub does it when the bridge authenticates); ``running`` -> one think cycle, or ``idle`` after
   ``runtime_idle_seconds`` without work; ``idle`` -> ``running`` when a message waits (the inbox
   route does it too), or ``stopped`` after ``runtime_auto_stop_seconds``.
3. a runtime that is stopped, in error, deleted or no longer ours is let go.

Every write for a runtime re-checks the lease in its own transaction (``leases.hold``), so a
runtime is never run by two workers at once; every move publishes a ``change`` (key
``you_run``) on the voice stream once committed.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass
from datetime import timedelta

import structlog
from sqlalchemy import Connection, bindparam, select
from sqlalchemy.exc import DBAPIError

from hearth.proofs.thoughts import sign_thought_write

from .. import runtime_states
from ..bridge.hub import BridgeHub
from ..canon import HOSTED_MODES, CustodyMode
from ..db.engine import Database, epoch_ms, utcnow
from ..db.rows import RuntimeRow
from ..db.tables import inbox_messages, runtimes
from ..errors import ApiError
from ..events import Change, EventBus
from ..json_types import JsonObject
from ..observability import Metrics
from ..services import runtimes as runtime_service
from ..services.runtimes import leases
from ..services.strands import Written
from ..services.times import iso
from ..settings import Settings
from . import cycle
from .custody import BridgedCustody, CustodyError, TrustedCustody
from .llm import ProviderError, Providers

log = structlog.get_logger("hearth.orchestrator")

STOP_GRACE_S = 10.0  # how long a stopping worker lets its cycles in flight finish

_BY_ID = select(runtimes).where(runtimes.c.id == bindparam("id"))
_PENDING = (
    select(inbox_messages.c.id)
    .where(
        inbox_messages.c.identity_id == bindparam("identity"),
        inbox_messages.c.status == "pending",
    )
    .limit(1)
)


def _read(conn: Connection, runtime_id: str) -> RuntimeRow | None:
    row = conn.execute(_BY_ID, {"id": runtime_id}).first()
    return RuntimeRow.of(row._mapping) if row else None


def _has_pending(conn: Connection, identity_id: str) -> bool:
    return conn.execute(_PENDING, {"identity": identity_id}).first() is not None


@dataclass
class Held:
    """A runtime this worker holds the lease of, and what it keeps about it in memory."""

    runtime_id: str
    next_heartbeat: float  # time.monotonic()
    retry_at: float = 0.0  # no new cycle before this (after a failed one)
    custody: TrustedCustody | None = None  # trusted: the unwrapped key, registered


class Worker:
    """One orchestrator worker. ``hub`` is the bridge hub of the app this worker runs in: only
    such a worker runs bridged runtimes (their bridge sessions live in that process)."""

    def __init__(
        self,
        settings: Settings,
        db: Database,
        events: EventBus,
        *,
        hub: BridgeHub | None = None,
        owner: str | None = None,
        providers: Providers | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        self.settings = settings
        # The app's metrics when it runs in a server; a registry of its own otherwise.
        self.metrics = metrics or Metrics()
        self.db = db
        self.events = events
        self.hub = hub
        self.owner = owner or leases.new_owner()
        # Without a hub no bridge session can live in this process: trusted runtimes only.
        self.modes: tuple[CustodyMode, ...] = HOSTED_MODES if hub is not None else ("trusted",)
        self.providers = providers or Providers(settings)
        self.held: dict[str, Held] = {}
        self.lease = cycle.Lease(self.owner, int(settings.runtime_lease_seconds * 1000))
        self._stopping = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._gate = asyncio.Semaphore(settings.runtime_concurrency)

    # -- the loop --

    def start(self) -> asyncio.Task[None]:
        self._task = asyncio.get_running_loop().create_task(self.run())
        return self._task

    def request_stop(self) -> None:
        self._stopping.set()

    async def run(self) -> None:
        log.info("worker_started", owner=self.owner, modes=list(self.modes))
        while not self._stopping.is_set():
            busy = False
            try:
                busy = await self.tick()
            except DBAPIError as exc:  # the database is away: try again on the next pass
                log.warning("worker_pass_failed", owner=self.owner, error=type(exc).__name__)
            except Exception:
                log.exception("worker_pass_failed", owner=self.owner)
            if not busy:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(
                        self._stopping.wait(), self.settings.runtime_poll_seconds
                    )

    async def stop(self) -> None:
        """Finish the pass in flight (a bounded wait), then give every lease up so that other
        workers take the runtimes over at once rather than after the lease lapses."""
        self._stopping.set()
        if self._task is not None:
            try:
                await asyncio.wait_for(asyncio.shield(self._task), STOP_GRACE_S)
            except TimeoutError:
                self._task.cancel()
                await asyncio.gather(self._task, return_exceptions=True)
        try:
            await self.db.transaction(leases.release_all, self.owner)
        except Exception as exc:  # shutting down: the leases lapse by themselves
            log.warning("worker_release_failed", owner=self.owner, error=type(exc).__name__)
        self.held.clear()
        await self.providers.aclose()
        log.info("worker_stopped", owner=self.owner)

    async def tick(self) -> bool:
        """One pass; whether any runtime did work (then the next pass starts at once)."""
        room = self.settings.runtime_max_per_worker - len(self.held)
        if room > 0:
            claimed = await self.db.transaction(
                leases.claim,
                self.owner,
                now_ms=epoch_ms(),
                lease_ms=self.lease.lease_ms,
                limit=room,
                modes=self.modes,
                exclude=frozenset(self.held),
                sessions=self.hub.sessions() if self.hub is not None else frozenset(),
            )
            beat = time.monotonic() + self.settings.runtime_heartbeat_seconds
            for row in claimed:
                self.held[row.id] = Held(row.id, next_heartbeat=beat)
                log.info("runtime_claimed", owner=self.owner, runtime_id=row.id)
        if not self.held:
            return False
        done = await asyncio.gather(*(self._guarded(h) for h in list(self.held.values())))
        return any(done)

    async def _guarded(self, held: Held) -> bool:
        async with self._gate:
            if self._stopping.is_set():
                return False
            try:
                return await self._step(held)
            except leases.LeaseLost:
                self._drop(held.runtime_id, "lease lost")
                return False
            except DBAPIError as exc:
                log.warning("runtime_step_failed", runtime_id=held.runtime_id, error=str(exc)[:200])
                return False
            except Exception as exc:
                # A fault of this runtime's handling: the state machine's crash, with a reason
                # that names the fault's type (exception texts may quote data).
                log.exception("runtime_crashed", runtime_id=held.runtime_id)
                runtime = await self.db.snapshot(_read, held.runtime_id)
                if runtime is not None and runtime.status != "error":
                    await self._move(runtime, "crash", f"worker fault ({type(exc).__name__})")
                return False

    def _drop(self, runtime_id: str, why: str) -> None:
        if self.held.pop(runtime_id, None) is not None:
            log.info("runtime_released", owner=self.owner, runtime_id=runtime_id, why=why)

    # -- one step of one runtime --

    async def _step(self, held: Held) -> bool:
        rid = held.runtime_id
        runtime = await self.db.snapshot(_read, rid)
        if (
            runtime is None
            or runtime.deleted_at is not None
            or runtime.status not in leases.ACTIVE
            or runtime.lease_owner != self.owner
        ):
            if runtime is not None and runtime.lease_owner == self.owner:
                await self.db.transaction(leases.release, rid, self.owner)
            self._drop(rid, "not active" if runtime is not None else "gone")
            return False
        if time.monotonic() >= held.next_heartbeat:
            await self.db.transaction(
                leases.hold,
                rid,
                self.owner,
                now_ms=epoch_ms(),
                lease_ms=self.lease.lease_ms,
                seen=True,
            )
            held.next_heartbeat = time.monotonic() + self.settings.runtime_heartbeat_seconds
        status = runtime.status
        mode: CustodyMode = runtime.mode  # typed: mypy checks each literal against the canon
        now = utcnow()
        if status == "provisioned":
            return await self._move(runtime, "bind") is not None
        if status == "starting":
            if mode == "trusted":
                return await self._handshake(held, runtime)
            return False  # bridged: the hub moves it when the bridge authenticates
        if status == "running":
            if time.monotonic() >= held.retry_at and await self._think(held, runtime):
                return True
            idle_after = timedelta(seconds=self.settings.runtime_idle_seconds)
            last_work = runtime.last_work_at or runtime.status_changed_at
            if now - last_work >= idle_after:
                await self._move(runtime, "idle_timeout")
            return False
        # idle
        if runtime.identity_id is not None and await self.db.snapshot(
            _has_pending, runtime.identity_id
        ):
            return await self._move(runtime, "wake", "an inbox message is waiting") is not None
        stop_after = timedelta(seconds=self.settings.runtime_auto_stop_seconds)
        if now - runtime.status_changed_at >= stop_after:
            await self._move(runtime, "auto_stop", "idle past the free plan's limit")
        return False

    async def _move(
        self, runtime: RuntimeRow, trigger: str, detail: str | None = None
    ) -> RuntimeRow | None:
        """Apply a move under the lease and publish its change; None when another move won."""
        rid = runtime.id

        def apply(conn: Connection) -> RuntimeRow:
            leases.hold(conn, rid, self.owner, now_ms=epoch_ms(), lease_ms=self.lease.lease_ms)
            moved = runtime_service.move(conn, rid, trigger, detail=detail, expected=runtime.status)
            if moved.status not in leases.ACTIVE:
                leases.release(conn, rid, self.owner)  # stopped or error: nothing left to run
            return moved

        try:
            moved = await self.db.transaction(apply)
        except runtime_service.MoveRefused as exc:
            log.info("runtime_move_lost", runtime_id=rid, trigger=trigger, error=exc.error)
            return None
        log.info("runtime_moved", runtime_id=rid, trigger=trigger, to=moved.status)
        await self._publish(
            runtime,
            "runtime_status_changed",
            {
                "runtime_id": rid,
                "from": runtime.status,
                "to": moved.status,
                "trigger": trigger,
                "event": runtime_states.move_for(trigger).event,
            },
        )
        if moved.status not in leases.ACTIVE:
            self._drop(rid, moved.status)
        return moved

    async def _publish(self, runtime: RuntimeRow, kind: str, details: JsonObject) -> None:
        await self.events.publish(
            Change(
                runtime.project_id,
                runtime.identity_id,
                "you_run",
                kind,
                details,
                iso(utcnow()) or "",
            )
        )

    # -- trusted custody: the handshake --

    def _trusted(self, runtime: RuntimeRow) -> TrustedCustody:
        return TrustedCustody.unwrap(runtime, self.settings.kms_master_key)

    async def _handshake(self, held: Held, runtime: RuntimeRow) -> bool:
        """starting -> running once the wrapped key opens; its signing key registered among the
        identity's keys in the same transaction. A key that does not open is a crash."""
        try:
            custody = self._trusted(runtime)
        except CustodyError as exc:
            await self._move(runtime, "crash", f"custody: {exc}")
            return False
        rid = runtime.id

        def apply(conn: Connection) -> RuntimeRow:
            leases.hold(conn, rid, self.owner, now_ms=epoch_ms(), lease_ms=self.lease.lease_ms)
            if runtime.identity_id is not None:
                custody.register(conn, runtime.identity_id)
            moved = runtime_service.move(conn, rid, "handshake", expected="starting")
            runtime_service.stamp_seen(conn, rid)
            return moved

        try:
            moved = await self.db.transaction(apply)
        except runtime_service.MoveRefused:
            return False
        except ApiError as exc:  # the kid is taken by another key: the key cannot sign
            await self._move(runtime, "crash", f"custody: signing key not registered ({exc.error})")
            return False
        held.custody = custody
        await self._publish(
            runtime,
            "runtime_status_changed",
            {
                "runtime_id": rid,
                "from": "starting",
                "to": moved.status,
                "trigger": "handshake",
                "event": "bridge_handshake_ok",
            },
        )
        return True

    async def _custody(self, held: Held, runtime: RuntimeRow) -> TrustedCustody | BridgedCustody:
        mode: CustodyMode = runtime.mode
        if mode == "trusted":
            if held.custody is None:
                # Taken over from another worker: unwrap again, and register (idempotent).
                custody = self._trusted(runtime)
                if runtime.identity_id is not None:
                    await self.db.transaction(custody.register, runtime.identity_id)
                held.custody = custody
            return held.custody
        assert self.hub is not None
        return await self.db.snapshot(
            BridgedCustody.load, runtime, self.hub, self.settings.kms_master_key
        )

    # -- the think cycle --

    async def _think(self, held: Held, runtime: RuntimeRow) -> bool:
        """One cycle; False when there was no message to think about (or no way to yet)."""
        mode: CustodyMode = runtime.mode
        if runtime.identity_id is None:
            return False
        if mode == "bridged" and (self.hub is None or not self.hub.connected(runtime.id)):
            return False  # no bridge session in this process: the message waits
        # A read first: a runtime with nothing to do costs no write transaction per pass.
        if not await self.db.snapshot(_has_pending, runtime.identity_id):
            return False
        begun = await self.db.transaction(
            cycle.begin,
            runtime.id,
            self.lease,
            epoch_ms(),
            self.settings.runtime_recent_thoughts,
        )
        if begun is None:
            return False
        self.metrics.think_cycles.inc()
        started = time.monotonic()
        try:
            stored = await self._complete(held, begun)
        except Exception as exc:
            self.metrics.think_cycle_failures.labels(
                exc.stage if isinstance(exc, cycle.CycleFailed) else "worker"
            ).inc()
            # A fault of the worker itself: the message goes back before the crash is reported.
            if not isinstance(exc, cycle.CycleFailed):
                fault = cycle.CycleFailed("worker", f"fault ({type(exc).__name__})")
                if not isinstance(exc, leases.LeaseLost):
                    await self.db.transaction(cycle.fail, begun, self.lease, fault)
                raise
            failure = exc
            held.retry_at = time.monotonic() + self.settings.runtime_retry_seconds
            log.warning(
                "think_cycle_failed",
                runtime_id=runtime.id,
                message_id=begun.message.id,
                stage=failure.stage,
                reason=failure.reason,
            )
            await self.db.transaction(cycle.fail, begun, self.lease, failure)
            return True
        log.info(
            "think_cycle_done",
            runtime_id=runtime.id,
            message_id=begun.message.id,
            seq=stored.thought.seq,
            ms=round((time.monotonic() - started) * 1000, 1),
        )
        await self._publish(
            runtime,
            "runtime_thought_stored",
            {"runtime_id": runtime.id, "strand_id": begun.strand_id, "seq": stored.thought.seq},
        )
        return True

    async def _complete(self, held: Held, begun: cycle.Begun) -> Written:
        runtime = begun.runtime
        api_key = await self.db.snapshot(cycle.provider_key, runtime, self.settings.kms_master_key)
        try:
            custody = await self._custody(held, runtime)
            history = await custody.open(begun.strand_id, begun.recent)
        except CustodyError as exc:
            raise cycle.CycleFailed("custody", str(exc)) from None
        except ApiError as exc:
            raise cycle.CycleFailed(
                "custody", f"signing key not registered ({exc.error})"
            ) from None
        prompt = cycle.build_prompt(begun.wake_markdown, history, begun.message)
        llm = runtime.llm or {}
        try:
            reply = await self.providers.complete(
                str(llm.get("provider")), str(llm.get("model")), api_key, prompt
            )
        except ProviderError as exc:
            raise cycle.CycleFailed("provider", str(exc)) from None
        plaintext = cycle.thought_plaintext(begun.message, reply, runtime)
        try:
            sealed = await custody.seal(begun.strand_id, begun.seq, plaintext)
        except CustodyError as exc:
            raise cycle.CycleFailed("custody", str(exc)) from None
        signature = sign_thought_write(
            custody.signing_key, custody.signing_key_id, begun.strand_id, begun.seq, sealed
        )
        try:
            return await self.db.transaction(
                cycle.finish,
                begun,
                self.lease,
                nonce=sealed.nonce,
                ciphertext=sealed.ciphertext,
                signing_key_id=custody.signing_key_id,
                signature=signature,
            )
        except ApiError as exc:  # a seq taken meanwhile, a key revoked: store nothing
            raise cycle.CycleFailed("store", f"the thought was refused ({exc.error})") from None


__all__ = ["Held", "Worker"]
