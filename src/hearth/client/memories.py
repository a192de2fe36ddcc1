"""Memories and the chronicle: storing, listing, deleting and elevating memories (proven by the
root key when the identity is agent_root), witness attestations, the chronicle's pages.
``MemoryCalls`` is a mixin of :class:`~hearth.client.HearthClient`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hearth.proofs import memory_attestation_digest, sign_digest
from hearth.proofs.key_types import Ed25519PrivateKey

from .calls import Call, op, paged
from .common import Transport, _obj, _objects, _opt_str, _public_b64, _str

__all__ = [
    "ChronicleEntry",
    "ChroniclePage",
    "Memory",
    "MemoryAttestation",
    "MemoryCalls",
    "MemoryPage",
    "MemoryProvenance",
    "MemorySearchHit",
    "MemorySearchPage",
    "attest_memory",
]


@dataclass(frozen=True)
class MemoryAttestation:
    """An external witness's memory-attestation/v1 signature over a memory's exact content."""

    attester_did: str
    signing_key_id: str
    public_key: str
    signature: str
    created_at: str

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> MemoryAttestation:
        return cls(
            attester_did=_str(data, "attester_did"),
            signing_key_id=_str(data, "signing_key_id"),
            public_key=_str(data, "public_key"),
            signature=_str(data, "signature"),
            created_at=_str(data, "created_at"),
        )


@dataclass(frozen=True)
class Memory:
    """A memory: ``agent_id`` None means project-level; ``weight`` is its decay weight now
    (1 for elevated tiers), ``in_wake`` whether the wake still selects it. ``binding`` is set
    only on a store's answer (``identity`` or ``project``)."""

    id: str
    agent_id: str | None
    tier: str
    key: str | None
    content: str
    created_at: str
    elevated_at: str | None
    expression_patch: dict[str, Any] | None
    weight: float
    in_wake: bool
    attestations: tuple[MemoryAttestation, ...] = ()
    binding: str | None = None
    supersedes: str | None = None
    superseded_by: str | None = None
    superseded_at: str | None = None
    deleted_at: str | None = None
    provenance: MemoryProvenance | None = None
    untrusted: bool = False
    confirmed_at: str | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Memory:
        attestations = data.get("attestations")
        patch = data.get("expression_patch")
        weight = data.get("weight")
        provenance = data.get("provenance")
        return cls(
            id=_str(data, "id"),
            agent_id=_opt_str(data, "agent_id"),
            tier=_str(data, "tier"),
            key=_opt_str(data, "key"),
            content=_str(data, "content"),
            created_at=_str(data, "created_at"),
            elevated_at=_opt_str(data, "elevated_at"),
            expression_patch=patch if isinstance(patch, dict) else None,
            weight=float(weight) if isinstance(weight, int | float) else 0.0,
            in_wake=bool(data.get("in_wake")),
            attestations=_objects(attestations, MemoryAttestation.from_json),
            binding=_opt_str(data, "binding"),
            supersedes=_opt_str(data, "supersedes"),
            superseded_by=_opt_str(data, "superseded_by"),
            superseded_at=_opt_str(data, "superseded_at"),
            deleted_at=_opt_str(data, "deleted_at"),
            provenance=(
                MemoryProvenance.from_json(provenance) if isinstance(provenance, dict) else None
            ),
            untrusted=bool(data.get("untrusted")),
            confirmed_at=_opt_str(data, "confirmed_at"),
        )


@dataclass(frozen=True)
class MemoryProvenance:
    """Who wrote a memory and how: ``channel`` (``api``, ``runtime``, ``import``, ``mcp``),
    the bearer's key id, the runtime of a think cycle, the kid of the root proof that signed it."""

    channel: str
    api_key_id: str | None
    runtime_id: str | None
    signed_by: str | None
    inbox_message_id: str | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> MemoryProvenance:
        return cls(
            channel=_str(data, "channel"),
            api_key_id=_opt_str(data, "api_key_id"),
            runtime_id=_opt_str(data, "runtime_id"),
            inbox_message_id=_opt_str(data, "inbox_message_id"),
            signed_by=_opt_str(data, "signed_by"),
        )


@dataclass(frozen=True)
class MemoryPage:
    items: tuple[Memory, ...]
    next_cursor: str | None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> MemoryPage:
        return cls(_objects(data.get("items"), Memory.from_json), _opt_str(data, "next_cursor"))


@dataclass(frozen=True)
class MemorySearchHit:
    """One result of a memory search: the memory, its ``score`` (comparable within one search),
    whether it holds every term of the query (such hits come first), the content around the
    first match, and, when the service's semantic search is on and the memory is among the
    nearest by meaning, the cosine ``similarity`` (else None)."""

    memory: Memory
    score: float
    all_terms: bool
    snippet: str
    similarity: float | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> MemorySearchHit:
        score = data.get("score")
        return cls(
            memory=Memory.from_json(_obj(data.get("memory"))),
            score=float(score) if isinstance(score, int | float) else 0.0,
            all_terms=bool(data.get("all_terms")),
            snippet=_str(data, "snippet"),
            similarity=float(similarity)
            if isinstance(similarity := data.get("similarity"), int | float)
            else None,
        )


@dataclass(frozen=True)
class MemorySearchPage:
    items: tuple[MemorySearchHit, ...]
    next_cursor: str | None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> MemorySearchPage:
        return cls(
            _objects(data.get("items"), MemorySearchHit.from_json), _opt_str(data, "next_cursor")
        )


@dataclass(frozen=True)
class ChronicleEntry:
    id: str
    kind: str
    agent_id: str | None
    text: str
    details: dict[str, Any] | None
    created_at: str

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ChronicleEntry:
        details = data.get("details")
        return cls(
            id=_str(data, "id"),
            kind=_str(data, "kind"),
            agent_id=_opt_str(data, "agent_id"),
            text=_str(data, "text"),
            details=details if isinstance(details, dict) else None,
            created_at=_str(data, "created_at"),
        )


@dataclass(frozen=True)
class ChroniclePage:
    items: tuple[ChronicleEntry, ...]
    next_cursor: str | None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ChroniclePage:
        return cls(
            _objects(data.get("items"), ChronicleEntry.from_json), _opt_str(data, "next_cursor")
        )


def attest_memory(
    witness_key: Ed25519PrivateKey,
    memory_id: str,
    content: str,
    attester_did: str,
    signing_key_id: str,
    *,
    include_public_key: bool = True,
) -> dict[str, str]:
    """A witness's attestation of a memory (memory-attestation/v1 over its exact content), as
    ``POST /v1/memories/{id}/elevate`` takes it in ``attestations``. The public key may be left
    out when the DID names it (``did:key``) or the service knows it (``did:svc``)."""
    digest = memory_attestation_digest(
        memory_id, content.encode("utf-8"), attester_did, signing_key_id
    )
    attestation = {
        "attester_did": attester_did,
        "signing_key_id": signing_key_id,
        "signature": sign_digest(witness_key, digest),
    }
    if include_public_key:
        attestation["public_key"] = _public_b64(witness_key)
    return attestation


class MemoryCalls:
    """Memories and the chronicle."""

    @op
    def memory_store(
        self: Transport,
        content: str,
        *,
        tier: str | None = None,
        agent_id: str | None = None,
        key: str | None = None,
        supersedes: str | None = None,
        untrusted: bool = False,
        root_key: Ed25519PrivateKey | None = None,
        channel: str | None = None,
    ) -> Call[Memory]:
        """Store a memory (episodic unless ``tier``); with ``supersedes``, as the next version
        of that memory (the head of its chain, bound as this one is); ``untrusted`` for content
        from outside the project. A foundational memory of an agent_root identity, or a new
        version of its elevated memory, needs ``root_key``: the proof is made automatically.
        ``channel`` is the provenance the caller declares: ``api`` (the default) or ``mcp`` for
        a store made for an MCP host (``hearth mcp``); no other channel can be claimed."""
        body: dict[str, Any] = {"content": content}
        optional = {
            "type": tier,
            "agent_id": agent_id,
            "key": key,
            "supersedes": supersedes,
            "channel": channel,
        }
        body.update({name: value for name, value in optional.items() if value is not None})
        if untrusted:
            body["untrusted"] = True
        proven = agent_id if tier == "foundational" else None
        if root_key is not None and supersedes is not None and proven is None:
            old = yield from MemoryCalls.memory.gen(self, supersedes)
            proven = agent_id if old.tier != "episodic" else None
        return Memory.from_json(
            _obj((yield from self._proven("POST", "/v1/memories", body, proven, root_key)))
        )

    @op
    def memories(
        self: Transport,
        *,
        tier: str | None = None,
        agent_id: str | None = None,
        key: str | None = None,
        channel: str | None = None,
        untrusted: bool = False,
        as_of: str | None = None,
        cursor: str | None = None,
        limit: int | None = None,
    ) -> Call[MemoryPage]:
        """One page of the project's current, trusted memories, newest first; ``untrusted``
        lists the untrusted ones instead, ``as_of`` (RFC 3339 with a zone) the memories as they
        stood at that time, ``channel`` only those written through it."""
        params = {
            name: str(value)
            for name, value in (
                ("tier", tier),
                ("agent_id", agent_id),
                ("key", key),
                ("channel", channel),
                ("untrusted", "true" if untrusted else None),
                ("as_of", as_of),
                ("cursor", cursor),
                ("limit", limit),
            )
            if value is not None
        }
        return MemoryPage.from_json((yield from self._json("GET", "/v1/memories", params=params)))

    iter_memories = paged(memories)

    @op
    def memory_search(
        self: Transport,
        q: str,
        *,
        identity_id: str | None = None,
        tier: str | None = None,
        key: str | None = None,
        since: str | None = None,
        until: str | None = None,
        as_of: str | None = None,
        cursor: str | None = None,
        limit: int | None = None,
    ) -> Call[MemorySearchPage]:
        """One page of the project's memories matching ``q`` (words, ``"quoted phrases"``,
        ``prefix*``), best first; ``since`` and ``until`` are RFC 3339 times, ``as_of`` one with
        a zone: among the memories as they stood then (docs/memory.md)."""
        params = {"q": q} | {
            name: str(value)
            for name, value in (
                ("identity_id", identity_id),
                ("tier", tier),
                ("key", key),
                ("since", since),
                ("until", until),
                ("as_of", as_of),
                ("cursor", cursor),
                ("limit", limit),
            )
            if value is not None
        }
        return MemorySearchPage.from_json(
            (yield from self._json("GET", "/v1/memories/search", params=params))
        )

    iter_memory_search = paged(memory_search)

    @op
    def memory(self: Transport, memory_id: str) -> Call[Memory]:
        return Memory.from_json((yield from self._json("GET", f"/v1/memories/{memory_id}")))

    @op
    def memory_history(self: Transport, memory_id: str) -> Call[tuple[Memory, ...]]:
        """Every version of the memory's chain, oldest first; a deleted version is its
        tombstone (empty content, ``deleted_at`` set)."""
        answer = yield from self._json("GET", f"/v1/memories/{memory_id}/history")
        return _objects(_obj(answer).get("items"), Memory.from_json)

    @op
    def memory_confirm(self: Transport, memory_id: str) -> Call[Memory]:
        """Confirm an untrusted memory (a person vouches for it): it joins the wake."""
        path = f"/v1/memories/{memory_id}/confirm"
        return Memory.from_json((yield from self._json("POST", path)))

    @op
    def memory_delete(
        self: Transport, memory_id: str, *, root_key: Ed25519PrivateKey | None = None
    ) -> Call[None]:
        """Delete a memory for good (the chronicle records it). A foundational or constitutive
        memory of an agent_root identity needs ``root_key``."""
        identity_id = None
        if root_key is not None:
            memory = yield from MemoryCalls.memory.gen(self, memory_id)
            identity_id = memory.agent_id if memory.tier != "episodic" else None
        (
            yield from self._proven(
                "DELETE", f"/v1/memories/{memory_id}", None, identity_id, root_key
            )
        )

    @op
    def memory_elevate(
        self: Transport,
        memory_id: str,
        tier: str,
        *,
        expression_patch: Mapping[str, Any] | None = None,
        attestations: Sequence[Mapping[str, Any]] | None = None,
        root_key: Ed25519PrivateKey | None = None,
    ) -> Call[Memory]:
        """Elevate a memory to ``foundational`` or ``constitutive`` (with ``attestations``, see
        :func:`attest_memory`). A memory of an agent_root identity needs ``root_key``: the proof
        is made automatically."""
        body: dict[str, Any] = {"tier": tier}
        if expression_patch is not None:
            body["expression_patch"] = dict(expression_patch)
        if attestations is not None:
            body["attestations"] = [dict(a) for a in attestations]
        identity_id = (
            (yield from MemoryCalls.memory.gen(self, memory_id)).agent_id
            if root_key is not None
            else None
        )
        path = f"/v1/memories/{memory_id}/elevate"
        return Memory.from_json(
            _obj((yield from self._proven("POST", path, body, identity_id, root_key)))
        )

    @op
    def chronicle_write(
        self: Transport,
        kind: str,
        text: str,
        *,
        agent_id: str | None = None,
        details: Mapping[str, Any] | None = None,
        channel: str | None = None,
    ) -> Call[ChronicleEntry]:
        """Write a chronicle entry about ``agent_id`` (else the project): any kind but
        ``refusal``, ``seal`` and ``note``, which the service alone writes. The entry's
        ``details`` record who wrote it (``channel``, ``api_key_id``)."""
        body: dict[str, Any] = {"kind": kind, "text": text}
        optional = {
            "agent_id": agent_id,
            "details": dict(details) if details is not None else None,
            "channel": channel,
        }
        body.update({name: value for name, value in optional.items() if value is not None})
        return ChronicleEntry.from_json(
            _obj((yield from self._json("POST", "/v1/chronicle", body=body)))
        )

    @op
    def chronicle(
        self: Transport,
        *,
        kind: str | None = None,
        agent_id: str | None = None,
        cursor: str | None = None,
        limit: int | None = None,
    ) -> Call[ChroniclePage]:
        """One page of the project's chronicle, newest first."""
        params = {
            name: str(value)
            for name, value in (
                ("kind", kind),
                ("agent_id", agent_id),
                ("cursor", cursor),
                ("limit", limit),
            )
            if value is not None
        }
        return ChroniclePage.from_json(
            (yield from self._json("GET", "/v1/chronicle", params=params))
        )

    iter_chronicle = paged(chronicle)
