"""The wake (GET /v1/wake): project-scoped session orientation, built from stored rows.

The document is a set of selected summaries with links to the deeper routes, never an export
of any store: every list in it is bounded, and every query is one range of an index (the
indexes in db/tables.py were made for these reads; tests/server/test_wake.py checks the query
plans). Reading it writes nothing, not even a chronicle entry: a wake read is not a mutation.

The decisions (the focus rule, what ``you_are_greeted`` means, what each summary holds, the
cache) are written down in docs/wake.md.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, Text, bindparam, cast, func, select

from ..db import counters
from ..db.engine import utcnow
from ..db.rows import IdentityRow
from ..db.tables import (
    attestations,
    backups,
    chronicle,
    identities,
    inbox_messages,
    projects,
    runtimes,
    templates,
    thoughts,
    vault_secrets,
    wallets,
)
from ..json_types import JsonObject
from . import memories as memory_service
from . import wake_counts, wake_metadata
from .identities import expression_view, find
from .times import iso
from .wake_sections import SCOPE, SECTIONS

DOCUMENT = "hearth-wake/v1"
FORMATS = ("json", "md", "math", "anthropic", "openai")

# Bounds of the summaries: the wake orients, the listings behind its links page through the rest.
AGENT_LIMIT = 50
SHAPED_BY_LIMIT = 50
MEMORY_LIMIT = 12
CONTENT_CHARS = 1_000
CHRONICLE_LIMIT = 5
RUNTIME_LIMIT = 100
GREETED_LIMIT = 20
BOND_LIMIT = 5
VAULT_NAME_LIMIT = 50
TEMPLATE_LIMIT = 10
FORK_LIMIT = 20
THOUGHT_WINDOW = timedelta(hours=24)


# --- the document -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Focus:
    """Whom the wake is for: ``identity`` None means the whole project (``rule`` says why)."""

    identity: IdentityRow | None
    rule: str  # "named", "sole_active" or "project"


@dataclass(frozen=True)
class Scope:
    """The ``identities`` section: who the wake is for, which every other section is built for
    (services/wake_sections.py)."""

    project_name: str
    focus: Focus
    agents: list[IdentityRow]  # the active identities listed, and a resting focus
    active_count: int

    @property
    def rows(self) -> list[IdentityRow]:
        return [self.focus.identity] if self.focus.identity is not None else self.agents

    @property
    def ids(self) -> list[str]:
        return [row.id for row in self.rows]

    @property
    def focus_id(self) -> str | None:
        return self.focus.identity.id if self.focus.identity is not None else None


class _Build:
    """One build's inputs: the scope and the counters, read once and only if needed."""

    def __init__(
        self,
        conn: Connection,
        project_id: str,
        scope: Scope,
        now: datetime,
        as_of: datetime | None = None,
    ) -> None:
        self.conn = conn
        self.project_id = project_id
        self.scope = scope
        self.now = now
        self.as_of = as_of  # what is remembered, as it stood then (docs/memory.md, History)
        self._counts: wake_counts.Counts | None = None

    @property
    def counts(self) -> wake_counts.Counts:
        if self._counts is None:
            scopes = [wake_counts.PROJECT, *self.scope.ids]
            self._counts = wake_counts.read(self.conn, self.project_id, scopes)
        return self._counts


def build(
    conn: Connection,
    project_id: str,
    identity_id: str | None,
    *,
    now: datetime | None = None,
    as_of: datetime | None = None,
) -> JsonObject:
    """The wake document of the project, focused on ``identity_id`` when given.

    ``identity_id`` must name an identity of this project (any other value is a 404, the same
    answer for another project's identity as for none). Without it the sole active identity is
    the focus; with several (or none) the wake covers the project with no focal identity.
    With ``as_of``, what the wake remembers (``you_remember``'s memories and counts) is as it
    stood at that time; the rest of the document is the present.
    """
    now = now or utcnow()
    sections = build_sections(conn, project_id, identity_id, now=now, as_of=as_of)
    return assemble(project_id, sections, now)


def build_sections(
    conn: Connection,
    project_id: str,
    identity_id: str | None,
    *,
    now: datetime,
    kept: Mapping[str, Any] | None = None,
    as_of: datetime | None = None,
) -> JsonObject:
    """The sections of the wake not in ``kept`` (sections of an earlier build that no change
    since touched; they must hold the scope, ``identities``, or be empty)."""
    kept = kept or {}
    scope = kept.get(SCOPE)
    built: JsonObject = {}
    if scope is None:
        scope = built[SCOPE] = _scope(conn, project_id, identity_id)
    work = _Build(conn, project_id, scope, now, as_of)
    for name, builder in BUILDERS.items():
        if name not in kept:
            built[name] = builder(work)
    return built


def assemble(project_id: str, sections: Mapping[str, Any], now: datetime) -> JsonObject:
    """The document from its sections (``build_sections`` and those kept)."""
    scope: Scope = sections[SCOPE]
    focus_id = scope.focus_id
    return {
        "document": DOCUMENT,
        "generated_at": iso(now),
        "project": {"id": project_id, "name": scope.project_name},
        "focus": {"identity_id": focus_id, "rule": scope.focus.rule},
        "you": {"agents": sections["agents"], "active_count": scope.active_count},
        "you_are_greeted": sections["greeted"],
        "you_run": sections["runtimes"],
        "you_own": sections["owned"],
        "you_keep": sections["kept"],
        "you_remember": sections["remembered"],
        "you_bond": sections["bonds"],
        "links": _links(focus_id),
    }


def _scope(conn: Connection, project_id: str, identity_id: str | None) -> Scope:
    agents = _active_identities(conn, project_id)
    # Fewer than the limit listed is the whole count; the focus rule needs no more than that.
    listed_all = len(agents) < AGENT_LIMIT
    focus = _focus(conn, project_id, identity_id, agents, len(agents) if listed_all else None)
    if focus.identity is not None and all(a.id != focus.identity.id for a in agents):
        # A resting (inactive) identity can still be woken by name; it keeps everything.
        agents.append(focus.identity)
    active_count = len(agents) if listed_all else _active_count(conn, project_id)
    project = conn.execute(_PROJECT, {"project": project_id}).one()
    return Scope(project.name, focus, agents, active_count)


def _active_count(conn: Connection, project_id: str) -> int:
    counted = wake_counts.read(conn, project_id, [wake_counts.PROJECT])
    return counted.of(counters.ACTIVE_IDENTITIES.kind)


def _active_identities(conn: Connection, project_id: str) -> list[IdentityRow]:
    rows = conn.execute(_ACTIVE, {"project": project_id, "limit": AGENT_LIMIT}).all()
    return [IdentityRow.of(r._mapping) for r in rows]


def _focus(
    conn: Connection,
    project_id: str,
    identity_id: str | None,
    agents: list[IdentityRow],
    active_total: int | None,
) -> Focus:
    if identity_id is not None:
        # The same small 404 for another project's identity as for an unknown one.
        return Focus(find(conn, project_id, identity_id), "named")
    if active_total == 1:
        return Focus(agents[0], "sole_active")
    return Focus(None, "project")


def _agents(work: _Build) -> list[JsonObject]:
    focus_id = work.scope.focus_id
    return [_agent(work.conn, row, focus_id) for row in work.scope.agents]


def _agent(conn: Connection, row: IdentityRow, focus_id: str | None) -> JsonObject:
    shaped = memory_service.shaping(conn, row)
    shaped_by = shaped["shaped_by"]
    return {
        "id": row.id,
        "did": row.did,
        "name": row.name,
        "level": row.level,
        "trust_score": row.trust_score,
        "form": row.form,
        "status": row.status,
        "capabilities": list(row.capabilities or []),
        "authority": {"mode": row.mode, "next_sequence": row.next_sequence},
        "expression": expression_view(row.expression),
        "effective_expression": shaped["effective_expression"],
        # The latest elevations when there are many: the effective expression holds them all.
        "shaped_by": shaped_by[-SHAPED_BY_LIMIT:],
        "shaped_by_count": len(shaped_by),
        "focus": row.id == focus_id,
    }


def _greeted(work: _Build) -> JsonObject:
    """Who has reached out to the identities in scope: senders of pending inbox messages and
    attesters of attestations received, one entry per (sender, identity), newest first.
    Message bodies are not shown: they are untrusted text and the wake is read into prompts."""
    conn, scope_ids = work.conn, work.scope.ids
    greeted: list[JsonObject] = []
    pending = 0
    if scope_ids:
        for row in conn.execute(_PENDING_BY_SENDER, {"ids": scope_ids}):
            pending += int(row.total)
            greeted.append(
                {
                    "sender": row.sender,
                    "identity_id": row.identity_id,
                    "via": "inbox",
                    "count": int(row.total),
                    "latest_at": iso(row.latest_at),
                }
            )
        for row in conn.execute(_ATTESTERS, {"ids": scope_ids}):
            greeted.append(
                {
                    "sender": row.attester_did,
                    "identity_id": row.subject_identity_id,
                    "via": "attestation",
                    "count": int(row.total),
                    "latest_at": iso(row.latest_at),
                }
            )
    greeted.sort(key=lambda g: (g["latest_at"] or "", g["sender"], g["via"]), reverse=True)
    return {"agents": greeted[:GREETED_LIMIT], "senders": len(greeted), "pending_inbox": pending}


def _runtimes(work: _Build) -> JsonObject:
    conn, project_id, now = work.conn, work.project_id, work.now
    rows = conn.execute(_RUNTIMES, {"project": project_id, "limit": RUNTIME_LIMIT}).all()
    count = len(rows)
    if count == RUNTIME_LIMIT:
        count = work.counts.of(counters.RUNTIMES.kind)
    recent: dict[str, tuple[int, datetime | None]] = {}
    if rows:
        for stat in conn.execute(
            _THOUGHTS_SINCE, {"ids": [r.id for r in rows], "since": now - THOUGHT_WINDOW}
        ):
            recent[stat.runtime_id] = (int(stat.total), stat.latest)
    entries = []
    for row in rows:
        thought_count, latest = recent.get(row.id, (0, None))
        last_thought = max(
            (t for t in (row.last_thought_at, latest) if t is not None), default=None
        )
        provider, model = wake_metadata.llm_named(row.llm)
        entries.append(
            {
                "id": row.id,
                "name": row.name,
                "mode": row.mode,
                "status": row.status,
                "region": row.region,
                "last_seen_at": iso(row.last_seen_at),
                "last_thought_at": iso(last_thought),
                "thought_count_24h": thought_count,
                "bridge_connected": bool(row.bridge_connected),
                "llm_provider": provider,
                "llm_model": model,
                # Bounded and labelled as data: it is the creator's freeform JSON, and the wake
                # is read into prompts (services/wake_metadata.py).
                "metadata": wake_metadata.for_wake_stored(row._mapping["metadata"]),
            }
        )
    return {"runtimes": entries, "count": count}


def _owned(work: _Build) -> JsonObject:
    conn, project_id, counts = work.conn, work.project_id, work.counts
    params = {"project": project_id}
    wallet_rows = conn.execute(_WALLETS, params).all()
    template_rows = conn.execute(_TEMPLATES, {**params, "limit": TEMPLATE_LIMIT}).all()
    published = len(template_rows)
    if published == TEMPLATE_LIMIT:
        published = counts.of(counters.TEMPLATES.kind)
    return {
        "wallets": [
            {
                "id": w.id,
                "name": w.name,
                "identity_id": w.identity_id,
                "balance": int(w.balance),
                "currency": w.currency,
            }
            for w in wallet_rows
        ],
        "templates": {
            "published": published,
            "items": [
                {"id": t.id, "name": t.name, "price": int(t.price), "status": t.status}
                for t in template_rows
            ],
        },
        "adds": {
            "blocks": counts.of(counters.BLOCKS.kind),
            "documents": counts.of(counters.DOCUMENTS.kind),
        },
    }


def _kept(work: _Build) -> JsonObject:
    """Names and counts only: a vault value or a backup blob never enters the wake."""
    conn, project_id, scope_ids = work.conn, work.project_id, work.scope.ids
    params = {"project": project_id}
    names = [r.name for r in conn.execute(_VAULT_NAMES, {**params, "limit": VAULT_NAME_LIMIT})]
    count = len(names)
    if count == VAULT_NAME_LIMIT:
        count = work.counts.of(counters.VAULT.kind)
    found = {r.agent_id: r for r in conn.execute(_BACKUPS, {"ids": scope_ids})} if scope_ids else {}
    key_backups = [
        {
            "agent_id": agent_id,
            "present": agent_id in found,
            "count": int(found[agent_id].total) if agent_id in found else 0,
            "latest_at": iso(found[agent_id].latest_at) if agent_id in found else None,
        }
        for agent_id in scope_ids
    ]
    return {"vault": {"count": count, "names": names}, "key_backups": key_backups}


def _remembered(work: _Build) -> JsonObject:
    """With a focus: its selection plus the project-level memories, and their counts. Without
    one: the project-level selection, and the counts of the whole project."""
    conn, project_id, focus_id, now = work.conn, work.project_id, work.scope.focus_id, work.now
    selected = memory_service.select_for_wake(
        conn,
        project_id,
        focus_id,
        MEMORY_LIMIT,
        now=now,
        include_project_level=True,
        as_of=work.as_of,
    )
    if work.as_of is not None:
        counts = memory_service.counts_as_of(conn, project_id, focus_id, work.as_of)
    elif focus_id is None:
        counts = wake_counts.memory_totals(conn, project_id)
    else:
        counts = work.counts.tiers([focus_id, wake_counts.PROJECT])
    if focus_id is None:
        entries = conn.execute(
            _PROJECT_CHRONICLE, {"project": project_id, "limit": CHRONICLE_LIMIT}
        ).all()
    else:
        entries = conn.execute(
            _IDENTITY_CHRONICLE, {"identity": focus_id, "limit": CHRONICLE_LIMIT}
        ).all()
    as_of: JsonObject = {} if work.as_of is None else {"as_of": iso(work.as_of)}
    return {
        **as_of,
        "memories": [_memory(m) for m in selected],
        "counts": counts,
        "chronicle": [
            {
                "id": e.id,
                "kind": e.kind,
                "agent_id": e.identity_id,
                "text": e.text,
                "created_at": iso(e.created_at),
            }
            for e in entries
        ],
    }


def _memory(view: JsonObject) -> JsonObject:
    content: str = view["content"]
    return {
        "id": view["id"],
        "agent_id": view["agent_id"],
        "tier": view["tier"],
        "key": view["key"],
        "content": content[:CONTENT_CHARS],
        "content_truncated": len(content) > CONTENT_CHARS,
        "created_at": view["created_at"],
        "elevated_at": view["elevated_at"],
        "weight": round(float(view["weight"]), 4),
    }


def _bonds(work: _Build) -> JsonObject:
    conn, project_id, scope, scope_ids = work.conn, work.project_id, work.scope.rows, work.scope.ids
    received: JsonObject = {"count": 0, "recent": []}
    given: JsonObject = {"count": 0, "recent": []}
    parents: list[JsonObject] = []
    forks: list[JsonObject] = []
    if scope_ids:
        ids = {"ids": scope_ids}
        received = {
            "count": work.counts.of(counters.RECEIVED.kind, scope_ids),
            "recent": [_attestation(r) for r in conn.execute(_RECEIVED, ids)],
        }
        mine = {"project": project_id, **ids}
        given = {
            "count": work.counts.of(counters.GIVEN.kind, scope_ids),
            "recent": [_attestation(r) for r in conn.execute(_GIVEN, mine)],
        }
        parent_ids = sorted({r.parent_identity_id for r in scope if r.parent_identity_id})
        known = (
            {p.id: p for p in conn.execute(_PARENTS, {"project": project_id, "ids": parent_ids})}
            if parent_ids
            else {}
        )
        for row in scope:
            parent_id = row.parent_identity_id
            if parent_id is None:
                continue
            parent = known.get(parent_id)
            parents.append(
                {
                    "identity_id": row.id,
                    "parent_id": parent_id,
                    # A parent outside this project is named by id only.
                    "did": parent.did if parent is not None else None,
                    "name": parent.name if parent is not None else None,
                }
            )
        forks = [
            {
                "id": f.id,
                "did": f.did,
                "name": f.name,
                "status": f.status,
                "parent_id": f.parent_identity_id,
            }
            for f in conn.execute(_FORKS, {"project": project_id, "ids": scope_ids})
        ]
    return {
        "attestations_received": received,
        "attestations_given": given,
        "parents": parents,
        "forks": forks,
    }


def _attestation(row: Any) -> JsonObject:
    return {
        "id": row.id,
        "subject_identity_id": row.subject_identity_id,
        "attester_did": row.attester_did,
        "claim": row.claim,
        "context": row.context,
        "created_at": iso(row.created_at),
    }


def _links(focus_id: str | None) -> dict[str, str]:
    agent = f"?agent_id={focus_id}" if focus_id else ""
    links = {
        "memories": f"/v1/memories{agent}",
        "chronicle": f"/v1/chronicle{agent}",
        "runtimes": "/v1/runtimes",
        "wallets": "/v1/wallets",
        "vault": "/v1/vault",
        "keys": "/v1/keys",
        "adds_inventory": "/v1/adds/inventory",
    }
    if focus_id:
        links["expression"] = f"/v1/identities/{focus_id}/expression"
        links["authority"] = f"/v1/identities/{focus_id}/authority"
        links["key_backup"] = f"/v1/identity/backup/{focus_id}"
    return links


# Every section but the scope, in the document's order (services/wake_sections.py).
BUILDERS: dict[str, Callable[[_Build], Any]] = {
    "agents": _agents,
    "greeted": _greeted,
    "runtimes": _runtimes,
    "owned": _owned,
    "kept": _kept,
    "remembered": _remembered,
    "bonds": _bonds,
}
assert set(BUILDERS) | {SCOPE} == set(SECTIONS), "every section has one builder"


# --- statements, built once ---------------------------------------------------------------------

_IDS: Any = bindparam("ids", expanding=True)

_PROJECT = select(projects.c.name).where(projects.c.id == bindparam("project"))
_ACTIVE_WHERE = (identities.c.project_id == bindparam("project"), identities.c.status == "active")
_ACTIVE = (
    select(identities)
    .where(*_ACTIVE_WHERE)
    .order_by(identities.c.created_at, identities.c.id)
    .limit(bindparam("limit"))
)

_latest = func.max(inbox_messages.c.created_at).label("latest_at")
_PENDING_BY_SENDER = (
    select(
        inbox_messages.c.identity_id, inbox_messages.c.sender, func.count().label("total"), _latest
    )
    .where(inbox_messages.c.identity_id.in_(_IDS), inbox_messages.c.status == "pending")
    .group_by(inbox_messages.c.identity_id, inbox_messages.c.sender)
)
_ATTESTERS = (
    select(
        attestations.c.subject_identity_id,
        attestations.c.attester_did,
        func.count().label("total"),
        func.max(attestations.c.created_at).label("latest_at"),
    )
    .where(attestations.c.subject_identity_id.in_(_IDS))
    .group_by(attestations.c.subject_identity_id, attestations.c.attester_did)
)

_LIVE_RUNTIMES = (runtimes.c.project_id == bindparam("project"), runtimes.c.deleted_at.is_(None))
_RUNTIMES = (
    select(
        runtimes.c.id,
        runtimes.c.name,
        runtimes.c.mode,
        runtimes.c.status,
        runtimes.c.region,
        # As stored (JSON text): decoded once per distinct value (wake_metadata's caches).
        cast(runtimes.c.llm, Text).label("llm"),
        cast(runtimes.c.metadata, Text).label("metadata"),
        runtimes.c.bridge_connected,
        runtimes.c.last_seen_at,
        runtimes.c.last_thought_at,
    )
    .where(*_LIVE_RUNTIMES)
    .order_by(runtimes.c.created_at, runtimes.c.id)
    .limit(bindparam("limit"))
)
_THOUGHTS_SINCE = (
    select(
        thoughts.c.runtime_id,
        func.count().label("total"),
        func.max(thoughts.c.created_at).label("latest"),
    )
    .where(thoughts.c.runtime_id.in_(_IDS), thoughts.c.created_at >= bindparam("since"))
    .group_by(thoughts.c.runtime_id)
)

_WALLETS = (
    select(wallets)
    .where(wallets.c.project_id == bindparam("project"))
    .order_by(wallets.c.created_at, wallets.c.id)
)
_TEMPLATES = (
    select(templates.c.id, templates.c.name, templates.c.price, templates.c.status)
    .where(templates.c.publisher_project_id == bindparam("project"))
    .order_by(templates.c.created_at.desc(), templates.c.id.desc())
    .limit(bindparam("limit"))
)

_VAULT_NAMES = (
    select(vault_secrets.c.name)
    .where(vault_secrets.c.project_id == bindparam("project"))
    .order_by(vault_secrets.c.name)
    .limit(bindparam("limit"))
)
_BACKUPS = (
    select(
        backups.c.agent_id,
        func.count().label("total"),
        func.max(backups.c.created_at).label("latest_at"),
    )
    .where(backups.c.agent_id.in_(_IDS))
    .group_by(backups.c.agent_id)
)

_CHRONICLE_COLUMNS = (
    chronicle.c.id,
    chronicle.c.kind,
    chronicle.c.identity_id,
    chronicle.c.text,
    chronicle.c.created_at,
)
_NEWEST_ENTRIES = (chronicle.c.created_at.desc(), chronicle.c.id.desc())
_PROJECT_CHRONICLE = (
    select(*_CHRONICLE_COLUMNS)
    .where(chronicle.c.project_id == bindparam("project"))
    .order_by(*_NEWEST_ENTRIES)
    .limit(bindparam("limit"))
)
_IDENTITY_CHRONICLE = (
    select(*_CHRONICLE_COLUMNS)
    .where(chronicle.c.identity_id == bindparam("identity"))
    .order_by(*_NEWEST_ENTRIES)
    .limit(bindparam("limit"))
)

_ATTESTATION_COLUMNS = (
    attestations.c.id,
    attestations.c.subject_identity_id,
    attestations.c.attester_did,
    attestations.c.claim,
    attestations.c.context,
    attestations.c.created_at,
)
_NEWEST_ATTESTATIONS = (attestations.c.created_at.desc(), attestations.c.id.desc())
_RECEIVED_WHERE = attestations.c.subject_identity_id.in_(_IDS)
_RECEIVED = (
    select(*_ATTESTATION_COLUMNS)
    .where(_RECEIVED_WHERE)
    .order_by(*_NEWEST_ATTESTATIONS)
    .limit(BOND_LIMIT)
)
# ix_attestations_attester_created serves this (migration 0010).
_GIVEN_WHERE = (
    attestations.c.project_id == bindparam("project"),
    attestations.c.attester_identity_id.in_(_IDS),
)
_GIVEN = (
    select(*_ATTESTATION_COLUMNS)
    .where(*_GIVEN_WHERE)
    .order_by(*_NEWEST_ATTESTATIONS)
    .limit(BOND_LIMIT)
)
_PARENTS = select(identities.c.id, identities.c.did, identities.c.name).where(
    identities.c.project_id == bindparam("project"), identities.c.id.in_(_IDS)
)
_FORKS = (
    select(
        identities.c.id,
        identities.c.did,
        identities.c.name,
        identities.c.status,
        identities.c.parent_identity_id,
    )
    .where(
        identities.c.project_id == bindparam("project"),
        identities.c.parent_identity_id.in_(_IDS),
    )
    .order_by(identities.c.created_at, identities.c.id)
    .limit(FORK_LIMIT)
)


__all__ = [
    "BUILDERS",
    "DOCUMENT",
    "FORMATS",
    "Focus",
    "Scope",
    "assemble",
    "build",
    "build_sections",
]
