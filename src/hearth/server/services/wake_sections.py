"""The wake's sections and the tables each one reads: what a change can touch.

The wake document is assembled from sections, each built by one function of services/wake.py
from the tables named here. A mutation's change stamp is bumped at the end of its own
transaction (services/wake_stamps.py), and it records, per section, the stamp of the last change
that wrote a table the section reads. A wake built under stamp S keeps every section whose last
change is not after S, and only the others are built again (docs/wake.md, "Partial rebuilds").

``identities`` decides who is in scope (the focus, the active agents): every other section is
built for that scope, so a change to it builds them all. A change whose tables are not known
(a bump outside a mutation's transaction, textual SQL) touches every section.
``tests/server/test_wake_sections.py`` runs the builders and checks that each reads no table
beyond its own list here, so a new read cannot go unannounced.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..db.writes import UNKNOWN

# Section -> the tables its builder reads (the counts it shows are kept by triggers on those
# same tables: db/counters.py).
READS: dict[str, frozenset[str]] = {
    "identities": frozenset({"identities", "projects"}),
    "agents": frozenset({"identities", "memories"}),
    "greeted": frozenset({"inbox_messages", "attestations"}),
    "runtimes": frozenset({"runtimes", "thoughts"}),
    "owned": frozenset({"wallets", "templates", "adds_blocks", "adds_documents"}),
    "kept": frozenset({"vault_secrets", "backups"}),
    "remembered": frozenset({"memories", "chronicle"}),
    "bonds": frozenset({"attestations", "identities"}),
}
SECTIONS: tuple[str, ...] = tuple(READS)
SCOPE = "identities"  # the section every other one is built for
ALL: frozenset[str] = frozenset(SECTIONS)

_BY_TABLE: dict[str, frozenset[str]] = {
    table: frozenset(section for section, read in READS.items() if table in read)
    for table in frozenset().union(*READS.values())
}


def touched(written: Iterable[str] | None) -> frozenset[str]:
    """The sections a transaction that wrote ``written`` can have changed (None: unknown)."""
    if written is None:
        return ALL
    found: set[str] = set()
    for table in written:
        if table == UNKNOWN:
            return ALL
        found |= _BY_TABLE.get(table, frozenset())
    return frozenset(found)


__all__ = ["ALL", "READS", "SCOPE", "SECTIONS", "touched"]
