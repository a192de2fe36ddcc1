"""The memory-tier table (``hearth.server.memory_tiers``): its moves and rules, case by case.
The HTTP behaviour of the same rules is in test_memories.py."""

from __future__ import annotations

import typing

import pytest

from hearth.server import memory_tiers
from hearth.server.canon import TIER_MEANINGS
from hearth.server.models import ElevateRequest, MemoryCreate

# (from, to, allowed), in the specification's words: foundational comes from episodic,
# constitutive from episodic or foundational, and nothing goes down or stays in place.
MOVES = [
    ("episodic", "foundational", True),
    ("episodic", "constitutive", True),
    ("foundational", "constitutive", True),
    ("episodic", "episodic", False),
    ("foundational", "foundational", False),
    ("constitutive", "constitutive", False),
    ("foundational", "episodic", False),
    ("constitutive", "foundational", False),
    ("constitutive", "episodic", False),
    ("episodic", "eternal", False),
]


@pytest.mark.parametrize(("source", "target", "allowed"), MOVES)
def test_the_moves(source: str, target: str, allowed: bool) -> None:
    assert memory_tiers.can_elevate(source, target) is allowed


def test_what_each_tier_asks_of_a_write() -> None:
    assert [t for t in memory_tiers.TIERS if memory_tiers.stored(t)] == ["episodic", "foundational"]
    assert [t for t in memory_tiers.TIERS if memory_tiers.witnessed(t)] == ["constitutive"]
    assert [t for t in memory_tiers.TIERS if memory_tiers.decays(t)] == ["episodic"]
    assert memory_tiers.WAKE_ORDER == ("constitutive", "foundational", "episodic")


def test_the_types_are_the_table() -> None:
    assert memory_tiers.TIERS == ("episodic", "foundational", "constitutive")
    assert tuple(memory_tiers.RULES) == memory_tiers.TIERS
    assert (
        tuple(t for t, rule in memory_tiers.RULES.items() if not rule.decays)
        == memory_tiers.ELEVATED
    )
    assert (
        tuple(t for t, rule in memory_tiers.RULES.items() if rule.sources) == memory_tiers.ELEVATED
    )
    assert tuple(TIER_MEANINGS) == memory_tiers.TIERS
    # The request bodies take exactly the table's tiers.
    stored, _none = typing.get_args(MemoryCreate.model_fields["tier"].annotation)
    assert typing.get_args(stored) == memory_tiers.TIERS
    assert typing.get_args(ElevateRequest.model_fields["tier"].annotation) == memory_tiers.ELEVATED
