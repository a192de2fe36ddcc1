"""The runtime state machine as one table: states, moves, and the event each move appends.

A pure module (no I/O): ``services/runtimes/moves.py`` applies a move with a conditional
UPDATE and appends its event in the same transaction; the orchestrator, the bridge hub and the
routes only name a trigger. The moves are the specification's "Runtime status" table; what it
leaves open is decided here and written down in docs/runtimes.md ("States and moves"):

- ``crash`` moves from any state but ``error`` itself: a second crash report for a runtime
  already in ``error`` is no move (its first ``last_error`` stays the one to read).
- ``deprovision`` also leaves ``starting``: DELETE tears down a booting orchestrator and its
  bridge handshake in progress as much as a running one.
- ``auto_stop`` leaves ``idle`` only: it is the free plan's "24 hours idle".
- ``wake`` (idle -> running) appends ``started``: the event list has no other name for an
  orchestrator that wakes, and its details say which move it was.
- ``move_away`` stops every runtime of an identity that moved to another service, from any
  state but ``stopped`` (``provisioned`` and ``error`` too: neither may start again here, and
  ``stopped`` is final), so no think loop goes on writing for it on the old service.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal, get_args

Status = Literal["provisioned", "starting", "running", "idle", "stopped", "error"]
STATES: Final[tuple[str, ...]] = get_args(Status)

# Every event name of the append-only log (the specification's "Runtime event log"); the
# Literal types the API's models, the tuple the table.
EventName = Literal[
    "provisioned",
    "started",
    "bridge_handshake_ok",
    "bridge_disconnected",
    "control_token_rotated",
    "think_cycle_start",
    "think_cycle_end",
    "think_cycle_error",
    "idle",
    "stopped",
    "error",
]
EVENTS: Final[tuple[str, ...]] = get_args(EventName)

# The state of a new record (POST /v1/runtimes) and the event its creation appends.
INITIAL_STATE: Final = "provisioned"
INITIAL_EVENT: Final = "provisioned"

# The timings (idle after, auto-stop after, heartbeat) are settings (``runtime_idle_seconds``,
# ``runtime_auto_stop_seconds``, ``runtime_heartbeat_seconds``), so tests run them in seconds.


@dataclass(frozen=True)
class Move:
    """One row of the table: ``trigger`` moves a runtime from one of ``sources`` to ``target``,
    appending ``event``; ``voice_change`` says whether a ``change`` (key ``you_run``) follows on
    the wake voice stream, since the status is part of the wake's ``you_run``."""

    trigger: str
    sources: frozenset[str]
    target: str
    event: str
    voice_change: bool
    why: str


def _move(trigger: str, sources: tuple[str, ...], target: str, event: str, why: str) -> Move:
    return Move(trigger, frozenset(sources), target, event, True, why)


MOVES: Final[dict[str, Move]] = {
    m.trigger: m
    for m in (
        _move("bind", ("provisioned",), "starting", "started", "an orchestrator binds it"),
        _move("handshake", ("starting",), "running", "bridge_handshake_ok", "handshake completes"),
        _move("idle_timeout", ("running",), "idle", "idle", "no new work for the idle timeout"),
        _move("wake", ("idle",), "running", "started", "inbound voice or an inbox event"),
        _move(
            "deprovision",
            ("starting", "running", "idle"),
            "stopped",
            "stopped",
            "deliberate deprovisioning (DELETE)",
        ),
        _move("auto_stop", ("idle",), "stopped", "stopped", "idle too long on the free plan"),
        _move(
            "crash",
            tuple(s for s in STATES if s != "error"),
            "error",
            "error",
            "a crash; last_error says what",
        ),
        _move("restart", ("error",), "starting", "started", "POST /v1/runtimes/{id}/restart"),
        _move(
            "move_away",
            tuple(s for s in STATES if s != "stopped"),
            "stopped",
            "stopped",
            "its identity moved to another service (POST /v1/identities/{id}/move)",
        ),
    )
}

TRIGGERS: Final = tuple(MOVES)


class UnknownTrigger(ValueError):
    """A trigger that is not in the table (a programming error, not a client's)."""


def move_for(trigger: str) -> Move:
    try:
        return MOVES[trigger]
    except KeyError:
        raise UnknownTrigger(f"unknown runtime trigger {trigger!r}; known: {TRIGGERS}") from None


def allowed(trigger: str, status: str) -> bool:
    """Whether ``trigger`` may move a runtime whose status is ``status``."""
    return status in move_for(trigger).sources


def triggers_from(status: str) -> tuple[str, ...]:
    """The triggers that can move a runtime out of ``status``, in table order."""
    return tuple(t for t, m in MOVES.items() if status in m.sources)


__all__ = [
    "EVENTS",
    "INITIAL_EVENT",
    "INITIAL_STATE",
    "MOVES",
    "STATES",
    "TRIGGERS",
    "Move",
    "UnknownTrigger",
    "allowed",
    "move_for",
    "triggers_from",
]
