"""The runtime state machine drawn from its table (``runtime_states.MOVES``): the states on a
circle, one arrow per (source, target) pair labelled with its triggers, the current state
marked. Geometry only; the template draws it as SVG (no script, no inline style)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..runtime_states import MOVES, STATES

WIDTH = 640
HEIGHT = 420
_RADIUS = 150
_NODE = 34  # a state's circle radius: arrows stop at its edge


@dataclass(frozen=True, slots=True)
class Node:
    name: str
    x: float
    y: float
    current: bool


@dataclass(frozen=True, slots=True)
class Edge:
    x1: float
    y1: float
    x2: float
    y2: float
    label: str
    lx: float
    ly: float
    active: bool  # leaves the current state: a move the runtime can make now


@dataclass(frozen=True, slots=True)
class Machine:
    width: int
    height: int
    nodes: list[Node]
    edges: list[Edge]


def _at(index: int) -> tuple[float, float]:
    angle = -math.pi / 2 + 2 * math.pi * index / len(STATES)
    return WIDTH / 2 + _RADIUS * 1.5 * math.cos(angle), HEIGHT / 2 + _RADIUS * math.sin(angle)


def machine(current: str) -> Machine:
    where = {name: _at(i) for i, name in enumerate(STATES)}
    nodes = [Node(name, *where[name], name == current) for name in STATES]
    pairs: dict[tuple[str, str], list[str]] = {}
    for move in MOVES.values():
        for source in sorted(move.sources):
            pairs.setdefault((source, move.target), []).append(move.trigger)
    edges = []
    for (source, target), triggers in sorted(pairs.items()):
        (x1, y1), (x2, y2) = where[source], where[target]
        length = math.hypot(x2 - x1, y2 - y1) or 1.0
        dx, dy = (x2 - x1) / length, (y2 - y1) / length
        # Two arrows between the same states (there and back) are set apart sideways.
        ox, oy = -dy * 6, dx * 6
        sx, sy = x1 + dx * _NODE + ox, y1 + dy * _NODE + oy
        ex, ey = x2 - dx * (_NODE + 4) + ox, y2 - dy * (_NODE + 4) + oy
        edges.append(
            Edge(
                sx,
                sy,
                ex,
                ey,
                ", ".join(triggers),
                (sx + ex) / 2 + ox * 2,
                (sy + ey) / 2 + oy * 2,
                source == current,
            )
        )
    return Machine(WIDTH, HEIGHT, nodes, edges)
