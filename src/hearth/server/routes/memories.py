"""Memories: store, list, read, delete and elevate (docs/service.md, "Memory and chronicle").

Root proofs: the identity that must sign is found through the memory (or, when storing, through
``agent_id``), so these routes have dependencies of their own rather than ``auth.root_proof``;
the checks and the claim are the same (``auth.authorize_request``, then
``grant.claim(conn)`` inside the mutation's transaction).

Refusals under the memory-tier rules (``memories.Refusal``) are recorded in the chronicle after
the refused transaction has rolled back: recording the refusal is the one write a refused
request makes (wall 5, ``refusals_recorded``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request, Response
from sqlalchemy import Connection

from ..auth import (
    BearerDep,
    Caller,
    CallerDep,
    HearthDep,
    SequenceHeader,
    SignatureHeader,
    TimestampHeader,
    authorize_request,
    caller_of,
)
from ..canon import MemoryChannel
from ..db.rows import IdentityRow, MemoryRow
from ..json_types import JsonObject
from ..memory_tiers import Tier
from ..models import (
    AsOf,
    ElevateRequest,
    MemoryCreate,
    MemoryHistory,
    MemoryPage,
    MemorySearchPage,
    MemoryStored,
    MemoryView,
)
from ..services import chronicle, cursors, identities, memories, memory_search
from ..services.authority import RootGrant
from ..services.cursors import Page
from ..services.times import naive_utc
from .common import cursor_query, errors

router = APIRouter(tags=["memories"])


@dataclass(frozen=True)
class MemoryAuth:
    """Who asks, the memory (when storing: the one superseded, or None), its identity (None:
    project-level) and the verified root proof (None when none is needed)."""

    caller: Caller
    memory: MemoryRow | None
    identity: IdentityRow | None
    grant: RootGrant | None
    body: Any = None


def _caller_and_binding(
    conn: Connection, bearer: str, agent_id: str | None
) -> tuple[Caller, IdentityRow | None]:
    caller = caller_of(conn, bearer)
    return caller, memories.binding(conn, caller.project_id, agent_id)


def _caller_memory_identity(
    conn: Connection, bearer: str, memory_id: str
) -> tuple[Caller, MemoryRow, IdentityRow | None]:
    caller = caller_of(conn, bearer)
    memory = memories.find(conn, caller.project_id, memory_id)
    return caller, memory, memories.identity_of(conn, memory)


async def store_authority(
    request: Request,
    hearth: HearthDep,
    bearer: BearerDep,
    body: MemoryCreate,
    _sequence: SequenceHeader = None,
    _timestamp: TimestampHeader = None,
    _signature: SignatureHeader = None,
) -> MemoryAuth:
    """A foundational memory of an agent_root identity is a memory-foundation mutation: it
    needs the identity's root proof. Everything else needs the bearer only."""
    caller, identity, old = await hearth.db.snapshot(
        _caller_binding_superseded, bearer, body.agent_id, body.supersedes
    )
    grant = None
    # Superseding an elevated memory of an identity unmakes part of it, as deleting it would:
    # the identity's root proof is needed (docs/memory.md, "History").
    unmakes = old is not None and old.tier != "episodic"
    if identity is not None and (body.requested_tier == "foundational" or unmakes):
        grant = authorize_request(hearth, identity, request, await request.body())
    return MemoryAuth(caller, old, identity, grant, body)


def _caller_binding_superseded(
    conn: Connection, bearer: str, agent_id: str | None, supersedes: str | None
) -> tuple[Caller, IdentityRow | None, MemoryRow | None]:
    caller, identity = _caller_and_binding(conn, bearer, agent_id)
    old = memories.find(conn, caller.project_id, supersedes) if supersedes else None
    return caller, identity, old


async def elevation_authority(
    id: str,
    request: Request,
    hearth: HearthDep,
    bearer: BearerDep,
    body: ElevateRequest,
    _sequence: SequenceHeader = None,
    _timestamp: TimestampHeader = None,
    _signature: SignatureHeader = None,
) -> MemoryAuth:
    """The memory's identity signs its elevation (bearer only for legacy_bearer identities
    and project-level memories)."""
    caller, memory, identity = await hearth.db.snapshot(_caller_memory_identity, bearer, id)
    grant = None
    if identity is not None:
        grant = authorize_request(hearth, identity, request, await request.body())
    return MemoryAuth(caller, memory, identity, grant, body)


async def deletion_authority(
    id: str,
    request: Request,
    hearth: HearthDep,
    bearer: BearerDep,
    _sequence: SequenceHeader = None,
    _timestamp: TimestampHeader = None,
    _signature: SignatureHeader = None,
) -> MemoryAuth:
    """Deleting a foundational or constitutive memory of an identity unmakes part of it: the
    identity's root proof is needed, as for elevation. Episodic memories need the bearer."""
    caller, memory, identity = await hearth.db.snapshot(_caller_memory_identity, bearer, id)
    grant = None
    if identity is not None and memory.tier != "episodic":
        grant = authorize_request(hearth, identity, request, await request.body())
    return MemoryAuth(caller, memory, identity, grant)


@router.post(
    "/v1/memories",
    status_code=201,
    response_model=MemoryStored,
    responses=errors(401, 404, 409, 422, 428),
    summary="Store a memory (episodic by default; foundational needs the root proof of an "
    "agent_root identity)",
)
async def store(
    auth: Annotated[MemoryAuth, Depends(store_authority)], hearth: HearthDep
) -> JsonObject:
    body: MemoryCreate = auth.body
    tier = body.requested_tier
    project_id = auth.caller.project_id
    identity_id = auth.identity.id if auth.identity else None
    refusal = memories.storing_refused(tier)
    if refusal is not None:
        raise await chronicle.record_refusal(
            hearth.db,
            refusal,
            project_id=project_id,
            identity_id=identity_id,
            text="Refused to store a constitutive memory",
            route="POST /v1/memories",
            tier=tier,
        ) from None
    row = await hearth.db.transaction(
        memories.store,
        project_id,
        auth.identity,
        content=body.content,
        tier=tier,
        key=body.key,
        grant=auth.grant,
        provenance=memories.Provenance(
            body.channel, api_key_id=auth.caller.key_id, untrusted=body.untrusted
        ),
        supersedes=auth.memory,
    )
    if hearth.semantic is not None:  # found by meaning too, before the answer says stored
        await hearth.semantic.embed([(row.id, row.content)])
    view = memories.view(row, row.created_at)
    return {**view, "binding": "identity" if auth.identity else "project"}


@router.get(
    "/v1/memories",
    response_model=MemoryPage,
    responses=errors(401, 404, 422),
    summary="The project's memories, newest first",
)
async def list_memories(  # noqa: PLR0917 - FastAPI reads query parameters from the signature
    caller: CallerDep,
    hearth: HearthDep,
    tier: Annotated[Tier | None, Query(description="only this tier")] = None,
    agent_id: Annotated[
        str | None,
        Query(max_length=64, description="only memories bound to this identity (UUID or DID)"),
    ] = None,
    key: Annotated[
        str | None, Query(min_length=1, max_length=200, description="only this key")
    ] = None,
    channel: Annotated[
        MemoryChannel | None, Query(description="only memories written through this channel")
    ] = None,
    untrusted: Annotated[
        bool,
        Query(description="the untrusted memories (not yet confirmed) instead of the trusted"),
    ] = False,
    as_of: Annotated[
        AsOf | None,
        Query(description="the memories as they stood at this time (RFC 3339, with a zone)"),
    ] = None,
    cursor: Annotated[str | None, cursor_query(cursors.PATTERN)] = None,
    # Contents run to 64 KiB each: a page stays well under the size of a large answer.
    limit: Annotated[int, Query(ge=1, le=200, description="items per page")] = 50,
) -> JsonObject:
    def run(conn: Connection) -> Page:
        identity_id = None
        if agent_id is not None:
            identity_id = identities.find(conn, caller.project_id, agent_id).id
        return memories.listing(
            conn,
            caller.project_id,
            tier=tier,
            identity_id=identity_id,
            key=key,
            channel=channel,
            untrusted=untrusted,
            as_of=naive_utc(as_of),
            cursor=cursor,
            limit=limit,
        )

    page = await hearth.db.snapshot(run)
    return page.body()


@router.get(
    "/v1/memories/search",
    operation_id="memories_search",  # one search, not a listing of searches
    response_model=MemorySearchPage,
    responses=errors(401, 404, 422),
    summary="Search the project's memories: words, quoted phrases, prefixes (term*); best first",
)
async def search_memories(  # noqa: PLR0917 - FastAPI reads query parameters from the signature
    caller: CallerDep,
    hearth: HearthDep,
    q: Annotated[
        str,
        Query(
            min_length=1,
            max_length=500,
            description='words, "quoted phrases" and prefixes (term*); docs/memory.md',
        ),
    ],
    identity_id: Annotated[
        str | None,
        Query(max_length=64, description="only memories bound to this identity (UUID or DID)"),
    ] = None,
    tier: Annotated[Tier | None, Query(description="only this tier")] = None,
    key: Annotated[
        str | None, Query(min_length=1, max_length=200, description="only this key")
    ] = None,
    since: Annotated[
        datetime | None, Query(description="only memories stored at or after this time")
    ] = None,
    until: Annotated[
        datetime | None, Query(description="only memories stored before this time")
    ] = None,
    as_of: Annotated[
        AsOf | None,
        Query(description="among the memories as they stood at this time (RFC 3339, with a zone)"),
    ] = None,
    cursor: Annotated[str | None, cursor_query(cursors.OFFSET_PATTERN)] = None,
    limit: Annotated[int, Query(ge=1, le=50, description="results per page")] = 20,
) -> JsonObject:
    def run(conn: Connection) -> Page:
        found = None
        if identity_id is not None:
            found = identities.find(conn, caller.project_id, identity_id).id
        return memory_search.search(
            conn,
            caller.project_id,
            q,
            identity_id=found,
            tier=tier,
            key=key,
            since=naive_utc(since),
            until=naive_utc(until),
            as_of=naive_utc(as_of),
            cursor=cursor,
            limit=limit,
            meaning=meaning,
        )

    meaning = None
    if hearth.semantic is not None:
        memory_search.parse(q)  # an unreadable query is refused before any encoding
        meaning = await hearth.semantic.meaning(caller.project_id, q)
    page = await hearth.db.snapshot(run)
    return page.body()


@router.get("/v1/memories/{id}", response_model=MemoryView, responses=errors(401, 404))
async def read_memory(id: str, caller: CallerDep, hearth: HearthDep) -> JsonObject:
    return await hearth.db.snapshot(memories.read, caller.project_id, id)


@router.delete(
    "/v1/memories/{id}",
    status_code=204,
    responses=errors(401, 404, 409, 422, 428),
    summary="Delete a memory for good; the chronicle records the deletion",
)
async def delete_memory(
    auth: Annotated[MemoryAuth, Depends(deletion_authority)], hearth: HearthDep
) -> Response:
    assert auth.memory is not None
    await hearth.db.transaction(memories.remove, auth.caller.project_id, auth.memory, auth.grant)
    return Response(status_code=204)


@router.post(
    "/v1/memories/{id}/elevate",
    response_model=MemoryView,
    responses=errors(401, 403, 404, 409, 422, 428),
    summary="Elevate a memory to foundational (self-attested) or constitutive (witnessed)",
)
async def elevate(
    auth: Annotated[MemoryAuth, Depends(elevation_authority)], hearth: HearthDep
) -> JsonObject:
    body: ElevateRequest = auth.body
    assert auth.memory is not None
    memory = auth.memory
    patch = body.expression_patch.model_dump(exclude_none=True) if body.expression_patch else None
    attestations = [a.model_dump() for a in body.attestations] if body.attestations else None
    try:
        elevated: JsonObject = await hearth.db.transaction(
            memories.elevate,
            auth.caller.project_id,
            memory.id,
            auth.identity,
            tier=body.tier,
            expression_patch=patch,
            attestations=attestations,
            grant=auth.grant,
        )
    except memories.Refusal as refusal:
        raise await chronicle.record_refusal(
            hearth.db,
            refusal,
            project_id=auth.caller.project_id,
            identity_id=memory.identity_id,
            text=f"Refused to elevate the memory {memory.id} to {body.tier}",
            route="POST /v1/memories/{id}/elevate",
            memory_id=memory.id,
            tier=body.tier,
        ) from None
    return elevated


@router.get(
    "/v1/memories/{id}/history",
    response_model=MemoryHistory,
    responses=errors(401, 404),
    summary="Every version of the memory's chain, oldest first (tombstones without content)",
)
async def memory_history(id: str, caller: CallerDep, hearth: HearthDep) -> JsonObject:
    items = await hearth.db.snapshot(memories.history, caller.project_id, id)
    return {"items": items}


@router.post(
    "/v1/memories/{id}/confirm",
    response_model=MemoryView,
    responses=errors(401, 404, 409),
    summary="Confirm an untrusted memory (a person vouches for it): it joins the wake",
)
async def confirm_memory(id: str, caller: CallerDep, hearth: HearthDep) -> JsonObject:
    def run(conn: Connection) -> JsonObject:
        memory = memories.find(conn, caller.project_id, id)
        return memories.confirm(conn, caller.project_id, memory, caller.key_id)

    confirmed: JsonObject = await hearth.db.transaction(run)
    return confirmed
