"""The memory tiers as one table: the tiers, how a memory moves between them, and what each
tier asks of a write. Everything that decides a tier move lives here.

A pure module (no I/O), the sibling of ``runtime_states``: ``services/memories.py`` applies a
move with a conditional UPDATE in the caller's transaction and answers a refused one with the
refusal the table names. The rules are docs/service.md's ("Memory and chronicle"):

- ``episodic`` is the tier a memory is stored in by default, and the only one that decays.
- ``foundational`` is elevated from episodic by the identity itself (its root proof for an
  ``agent_root`` identity); it can also be stored directly.
- ``constitutive`` is elevated from episodic or foundational, only with attestations from an
  external witness over the exact content; it is never stored directly, since the witness signs
  the memory's id, which does not exist before it is stored.
- No move goes down: an elevated memory stays elevated until it is deleted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal, get_args

Tier = Literal["episodic", "foundational", "constitutive"]
TIERS: Final[tuple[Tier, ...]] = get_args(Tier)

# The tiers a memory can be elevated to (the targets of the table's moves).
ElevatedTier = Literal["foundational", "constitutive"]

# The tier of a memory stored without one.
INITIAL_TIER: Final[Tier] = "episodic"


@dataclass(frozen=True)
class TierRule:
    """One row of the table: ``sources`` are the tiers ``tier`` can be elevated from (empty:
    it is no elevation's target); ``stored`` says whether POST /v1/memories may create it;
    ``witnessed`` whether its elevation needs an external witness's attestations (and refuses
    them when not); ``decays`` whether its weight halves with age."""

    tier: Tier
    sources: frozenset[Tier]
    stored: bool
    witnessed: bool
    decays: bool


RULES: Final[dict[str, TierRule]] = {
    rule.tier: rule
    for rule in (
        TierRule("episodic", frozenset(), stored=True, witnessed=False, decays=True),
        TierRule(
            "foundational", frozenset({"episodic"}), stored=True, witnessed=False, decays=False
        ),
        TierRule(
            "constitutive",
            frozenset({"episodic", "foundational"}),
            stored=False,
            witnessed=True,
            decays=False,
        ),
    )
}

# The tiers that shape an identity (they never decay), in table order; the wake reads the
# tiers deepest first.
ELEVATED: Final[tuple[ElevatedTier, ...]] = get_args(ElevatedTier)
WAKE_ORDER: Final[tuple[Tier, ...]] = tuple(reversed(TIERS))


def can_elevate(source: str, target: str) -> bool:
    """Whether a memory of tier ``source`` may be elevated to ``target``."""
    rule = RULES.get(target)
    return rule is not None and source in rule.sources


def stored(tier: str) -> bool:
    """Whether POST /v1/memories may store a memory in ``tier`` directly."""
    rule = RULES.get(tier)
    return rule is not None and rule.stored


def witnessed(tier: str) -> bool:
    """Whether elevating to ``tier`` needs (and alone accepts) a witness's attestations."""
    rule = RULES.get(tier)
    return rule is not None and rule.witnessed


def decays(tier: str) -> bool:
    """Whether a memory of ``tier`` loses weight with age (only episodic does)."""
    return RULES[tier].decays


__all__ = [
    "ELEVATED",
    "INITIAL_TIER",
    "RULES",
    "TIERS",
    "WAKE_ORDER",
    "ElevatedTier",
    "Tier",
    "TierRule",
    "can_elevate",
    "decays",
    "stored",
    "witnessed",
]
