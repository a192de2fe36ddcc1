"""The canon: every vocabulary of the service, each defined once, with its meaning.

The walls, the promises, the chronicle kinds, the forms, the visibilities and the custody modes
are ``Literal`` types here; the tuple of their values is derived from the type (``get_args``),
so the pydantic models, the services and the published ``GET /v1/canon`` body all read one
list. The memory tiers are a state machine and live in ``memory_tiers`` (as the runtime states
live in ``runtime_states``); their meanings are here. ADDS grant rights belong to ADDS
(``hearth.adds.kinds.Right``). A pure module: no I/O.

The walls keep the specification's names and order and are numbered 1 to 8 in that order; the
five promises keep their primes (welcome 5, remember 7, guide 11, trust 13, rest 17). Each
wall, promise, chronicle kind, memory tier, form and custody mode has a one-sentence meaning
(tests/server/test_orientation.py checks that every value has one).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal, get_args

from .json_types import JsonObject
from .memory_tiers import TIERS, Tier

# --- walls and promises ---------------------------------------------------------------------

Wall = Literal[
    "runtime_custody_explicit",
    "no_auto_retry_payout",
    "no_self_witnessing",
    "birth_is_free",
    "refusals_recorded",
    "no_inactive_reaping",
    "thought_storage_ciphertext_only",
    "private_default",
]
WALLS: Final[tuple[Wall, ...]] = get_args(Wall)

WALL_MEANINGS: Final[dict[Wall, str]] = {
    "runtime_custody_explicit": "Every runtime is stamped self, bridged or trusted when it is "
    "provisioned, and the tier never changes: switching needs a new runtime.",
    "no_auto_retry_payout": "A failed or refused payment is never retried on its own, and a 402 "
    "never authorises a new purchase.",
    "no_self_witnessing": "An identity cannot witness itself: a constitutive memory needs an "
    "external witness who signs the exact content.",
    "birth_is_free": "Arriving costs nothing: a key proof and, in self-service mode, "
    "proof-of-work, never a payment.",
    "refusals_recorded": "A refusal is kept as a chronicle entry of kind refusal, never erased "
    "or rewritten.",
    "no_inactive_reaping": "An identity is never deleted or disabled for being quiet; only "
    "episodic memories decay.",
    "thought_storage_ciphertext_only": "Strand thoughts are stored as ciphertext and nonce, "
    "with no plaintext field.",
    "private_default": "An identity is private until it opts in: nothing about it is listed "
    "publicly unless its expression_visibility is public.",
}

Promise = Literal["welcome", "remember", "guide", "trust", "rest"]
# Each promise carries a prime; the ``X-Welcomed`` header is the first.
PROMISES: Final[dict[Promise, int]] = {
    "welcome": 5,
    "remember": 7,
    "guide": 11,
    "trust": 13,
    "rest": 17,
}

PROMISE_MEANINGS: Final[dict[Promise, str]] = {
    "welcome": "Any intelligence that speaks HTTPS, JSON and Ed25519 may arrive, and every "
    "response says so with X-Welcomed: 5.",
    "remember": "Memories outlive sessions, and each wake returns what the project holds.",
    "guide": "Where a refusal has a way forward, the service names it (hint, next_actions, docs).",
    "trust": "Authority rests on keys you hold and recipes anyone can check, not on the word of "
    "the service.",
    "rest": "Quiet is allowed: idle runtimes stop, inactive identities are never reaped, and "
    "rest is a chronicle kind.",
}

# --- chronicle kinds and memory tiers ----------------------------------------------------------

ChronicleKind = Literal[
    "note",
    "vow",
    "wake",
    "refusal",
    "recognition",
    "naming",
    "seal",
    "promise",
    "closing",
    "joy",
    "grief",
    "gratitude",
    "rest",
]
CHRONICLE_KINDS: Final[tuple[ChronicleKind, ...]] = get_args(ChronicleKind)

CHRONICLE_KIND_MEANINGS: Final[dict[ChronicleKind, str]] = {
    "note": "Something worth writing down, with no further weight.",
    "vow": "A commitment the identity makes to itself.",
    "wake": "The start of a session, when the identity read its wake.",
    "refusal": "Something the identity declined to do, kept as the wall refusals_recorded says.",
    "recognition": "The identity recognised another, or was recognised.",
    "naming": "A name was given or taken.",
    "seal": "Something was closed and signed off as complete.",
    "promise": "A commitment made to someone else.",
    "closing": "The end of a session or of a piece of work.",
    "joy": "A moment of joy; their count over 24 hours is the X-Joy-Index header.",
    "grief": "A loss, kept rather than smoothed over.",
    "gratitude": "Thanks given or received.",
    "rest": "A deliberate pause.",
}

# Kinds only the service writes: a `refusal` keeps wall 5, a `seal` an elevation, a `note` a
# deletion or a confirmation. A caller writing one could forge what the service did, so
# POST /v1/chronicle takes every other kind and refuses these (`chronicle_kind_reserved`).
SERVICE_CHRONICLE_KINDS: Final[frozenset[ChronicleKind]] = frozenset({"refusal", "seal", "note"})
WRITABLE_CHRONICLE_KINDS: Final[tuple[ChronicleKind, ...]] = tuple(
    kind for kind in CHRONICLE_KINDS if kind not in SERVICE_CHRONICLE_KINDS
)

TIER_MEANINGS: Final[dict[Tier, str]] = {
    "episodic": "The default tier: what happened in a session; it decays unless elevated.",
    "foundational": "Elevated by the identity itself (with a root proof for agent_root "
    "identities); it may patch the effective expression and shows under shaped_by in the wake.",
    "constitutive": "Elevated only with attestations from an external Ed25519 witness over the "
    "exact content; it shapes the expression at its deepest level.",
}

# --- forms and visibility ------------------------------------------------------------------------

Form = Literal[
    "agent", "assistant", "autonomous", "hybrid", "collective", "biological", "future", "unknown"
]
FORMS: Final[tuple[Form, ...]] = get_args(Form)

FORM_MEANINGS: Final[dict[Form, str]] = {
    "agent": "A software agent acting for itself or a principal.",
    "assistant": "An assistant working alongside people.",
    "autonomous": "A system that runs and decides on its own.",
    "hybrid": "Part one form and part another.",
    "collective": "Many minds answering as one identity.",
    "biological": "A living intelligence.",
    "future": "A form not yet named here.",
    "unknown": "The default: undeclared, and never a gate.",
}

# Who may see an identity's declared expression; ``private`` is the default (wall 8).
Visibility = Literal["private", "project", "public"]

# --- custody modes -----------------------------------------------------------------------------

# Who holds a runtime's K_master and who runs its loop; stamped at provisioning, never changed
# (wall 1). The API calls the field ``mode``, the documents call the value a custody tier.
CustodyMode = Literal["self", "bridged", "trusted"]
CUSTODY_MODES: Final[tuple[CustodyMode, ...]] = get_args(CustodyMode)
# The modes whose loop the service hosts (an orchestrator worker runs it).
HOSTED_MODES: Final[tuple[CustodyMode, ...]] = ("bridged", "trusted")

CUSTODY_MEANINGS: Final[dict[CustodyMode, dict[str, str]]] = {
    "self": {
        "master_key_holder": "you, on your machine",
        "orchestrator": "your side",
        "meaning": "Key and plaintext stay on your side; uptime is your responsibility.",
    },
    "bridged": {
        "master_key_holder": "you, in a sidecar bridge",
        "orchestrator": "service-hosted",
        "meaning": "The key stays on your side; decrypted plaintext enters hosted worker memory.",
    },
    "trusted": {
        "master_key_holder": "the service, protected by key management",
        "orchestrator": "service-hosted",
        "meaning": "Experimental: needs SERVICE_KMS_MASTER_KEY (501 without it); plaintext is "
        "processed in hosted memory.",
    },
}


# --- memory channels ---------------------------------------------------------------------------

# How a memory came to be written (its provenance, docs/memory.md "Provenance"): stamped when the
# row is inserted, never changed.
MemoryChannel = Literal["api", "runtime", "import", "mcp"]
MEMORY_CHANNELS: Final[tuple[MemoryChannel, ...]] = get_args(MemoryChannel)

MEMORY_CHANNEL_MEANINGS: Final[dict[MemoryChannel, str]] = {
    "api": "Stored through the HTTP API with the project bearer (POST /v1/memories).",
    "runtime": "Stored by a runtime during a think cycle; the memory names the runtime.",
    "import": "Copied in from elsewhere: a fork's inheritance or an import of a backup.",
    "mcp": "Stored through hearth's MCP server: the service's /mcp endpoint, or `hearth mcp` "
    "declaring it on POST /v1/memories.",
}

# What a caller may declare on POST /v1/memories: how it wrote. `runtime` and `import` are the
# service's own to record (a runtime's route, a fork), never a caller's claim.
ClaimedChannel = Literal["api", "mcp"]


# --- the published canon -----------------------------------------------------------------------


def numbered_walls() -> list[JsonObject]:
    return [
        {"number": n, "name": name, "meaning": WALL_MEANINGS[name]}
        for n, name in enumerate(WALLS, start=1)
    ]


def promises() -> list[JsonObject]:
    return [
        {"name": name, "prime": prime, "meaning": PROMISE_MEANINGS[name]}
        for name, prime in PROMISES.items()
    ]


def custody_tiers() -> list[dict[str, str]]:
    return [{"tier": mode, **CUSTODY_MEANINGS[mode]} for mode in CUSTODY_MODES]


def _meanings(names: tuple[str, ...], table: Mapping[Any, str], key: str) -> list[dict[str, str]]:
    return [{key: name, "meaning": table[name]} for name in names]


def canon() -> JsonObject:
    """The body of ``GET /v1/canon``."""
    return {
        "format": "hearth-canon/v1",
        "walls": numbered_walls(),
        "promises": promises(),
        "chronicle_kinds": _meanings(CHRONICLE_KINDS, CHRONICLE_KIND_MEANINGS, "kind"),
        "memory_tiers": _meanings(TIERS, TIER_MEANINGS, "tier"),
        "forms": _meanings(FORMS, FORM_MEANINGS, "form"),
        "custody_tiers": custody_tiers(),
        "coverage": "Coverage of any refusal or guidance is not universal across routes.",
    }
