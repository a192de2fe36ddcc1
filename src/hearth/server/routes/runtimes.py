"""Runtimes: provision under a custody tier, list, read, update, soft delete, restart, the event
log and the control token (docs/runtimes.md).

Refusals under wall 1 (``runtime_custody_explicit``: a trusted runtime without the master key,
an attempt to change the custody tier or the bound identity) are recorded in the chronicle
after the refused transaction has rolled back (wall 5, ``refusals_recorded``).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request

from ..auth import Caller, CallerDep, HearthDep
from ..bridge import hub_for
from ..canon import CustodyMode
from ..context import Hearth
from ..db.engine import utcnow
from ..events import Change
from ..json_types import JsonObject
from ..models_runtimes import (
    ControlToken,
    RuntimeCreate,
    RuntimeCreated,
    RuntimeEventPage,
    RuntimePage,
    RuntimePatch,
    RuntimeView,
)
from ..runtime_states import Status
from ..services import chronicle, cursors, runtimes
from ..services.times import iso
from .common import cursor_query, errors

router = APIRouter(tags=["runtimes"])

Limit = Annotated[int, Query(ge=1, le=200, description="items per page")]


@router.post(
    "/v1/runtimes",
    status_code=201,
    response_model=RuntimeCreated,
    responses=errors(401, 404, 422, 501),
    summary="Provision a runtime under a custody tier (self, bridged, trusted); a bridged "
    "runtime's control token is answered here once",
)
async def provision(body: RuntimeCreate, caller: CallerDep, hearth: HearthDep) -> JsonObject:
    try:
        created: JsonObject = await hearth.db.transaction(
            runtimes.create,
            caller.project_id,
            body.model_dump(),
            kms_master_key=hearth.settings.kms_master_key,
        )
    except runtimes.CustodyRefusal as refusal:
        raise await chronicle.record_refusal(
            hearth.db,
            refusal,
            project_id=caller.project_id,
            identity_id=None,
            text=f"Refused to provision a {body.mode} runtime",
            route="POST /v1/runtimes",
            wall="runtime_custody_explicit",
        ) from None
    return created


@router.get(
    "/v1/runtimes",
    response_model=RuntimePage,
    responses=errors(401, 404, 422),
    summary="The project's runtimes, newest first",
)
async def list_runtimes(  # noqa: PLR0917 - FastAPI reads query parameters from the signature
    caller: CallerDep,
    hearth: HearthDep,
    status: Annotated[Status | None, Query(description="only this status")] = None,
    mode: Annotated[CustodyMode | None, Query(description="only this custody tier")] = None,
    identity_id: Annotated[
        str | None, Query(max_length=64, description="only runtimes bound to this identity")
    ] = None,
    include_deleted: Annotated[
        bool, Query(description="also the soft-deleted runtimes kept for audit")
    ] = False,
    cursor: Annotated[str | None, cursor_query(cursors.PATTERN)] = None,
    limit: Limit = 50,
) -> JsonObject:
    page = await hearth.db.snapshot(
        runtimes.listing,
        caller.project_id,
        status=status,
        mode=mode,
        identity_ref=identity_id,
        include_deleted=include_deleted,
        cursor=cursor,
        limit=limit,
    )
    return page.body()


@router.get(
    "/v1/runtimes/{id}",
    response_model=RuntimeView,
    responses=errors(401, 404),
    summary="A runtime with its liveness fields (deleted ones too, marked deleted)",
)
async def read_runtime(id: str, caller: CallerDep, hearth: HearthDep) -> JsonObject:
    return await hearth.db.snapshot(runtimes.read, caller.project_id, id)


@router.patch(
    "/v1/runtimes/{id}",
    response_model=RuntimeView,
    responses=errors(401, 404, 409, 422),
    summary="Change name, llm, region, metadata or bridge.advertised_url; mode and identity_id "
    "are immutable",
)
async def patch_runtime(
    id: str, body: RuntimePatch, caller: CallerDep, hearth: HearthDep
) -> JsonObject:
    patch = body.model_dump(exclude_unset=True)
    try:
        updated: JsonObject = await hearth.db.transaction(
            runtimes.update_runtime, caller.project_id, id, patch
        )
    except runtimes.CustodyRefusal as refusal:
        raise await chronicle.record_refusal(
            hearth.db,
            refusal,
            project_id=caller.project_id,
            identity_id=None,
            text=f"Refused to change the custody of the runtime {id}",
            route="PATCH /v1/runtimes/{id}",
            runtime_id=id,
            wall="runtime_custody_explicit",
        ) from None
    return updated


@router.delete(
    "/v1/runtimes/{id}",
    response_model=RuntimeView,
    # 409 when a concurrent delete won the race to stop it (runtime_deleted).
    responses=errors(401, 404, 409),
    summary="Soft delete: the orchestrator is stopped, the control token revoked, the record "
    "kept for audit",
)
async def delete_runtime(
    id: str, request: Request, caller: CallerDep, hearth: HearthDep
) -> JsonObject:
    deleted = await hearth.db.transaction(runtimes.soft_delete, caller.project_id, id)
    # Its bridge session, if this process holds it, ends now rather than at its next reconnect.
    await hub_for(request.app).disconnect(deleted["id"], "the runtime was deleted")
    return deleted


@router.post(
    "/v1/runtimes/{id}/restart",
    response_model=RuntimeView,
    responses=errors(401, 404, 409),
    summary="Recover a runtime in error: it re-enters starting",
)
async def restart_runtime(id: str, caller: CallerDep, hearth: HearthDep) -> JsonObject:
    return await hearth.db.transaction(runtimes.restart, caller.project_id, id)


@router.post(
    "/v1/runtimes/{id}/control-token",
    response_model=ControlToken,
    responses=errors(401, 404, 409),
    summary="Rotate a bridged runtime's control token: the new one is answered once",
)
async def rotate_control_token(
    id: str, request: Request, caller: CallerDep, hearth: HearthDep
) -> JsonObject:
    rotated = await hearth.db.transaction(runtimes.rotate_control_token, caller.project_id, id)
    # A session opened with the old token must not outlive it.
    await hub_for(request.app).disconnect(rotated["runtime_id"], "the control token was rotated")
    return rotated


@router.get(
    "/v1/runtimes/{id}/events",
    response_model=RuntimeEventPage,
    responses=errors(401, 404, 422),
    summary="The runtime's append-only event log, oldest first",
)
async def runtime_events(
    id: str,
    caller: CallerDep,
    hearth: HearthDep,
    cursor: Annotated[str | None, cursor_query(runtimes.EVENTS_CURSOR_PATTERN)] = None,
    limit: Limit = 100,
) -> JsonObject:
    page = await hearth.db.snapshot(
        runtimes.events, caller.project_id, id, cursor=cursor, limit=limit
    )
    return page.body()


# --- self custody -------------------------------------------------------------------------------


async def announce_moves(
    hearth: Hearth, caller: Caller, identity_id: str | None, moves: list[JsonObject]
) -> None:
    """Each committed move of a self runtime as a ``change`` on the voice stream, worded as the
    orchestrator words its own moves (key ``you_run``, kind ``runtime_status_changed``): the
    status is part of the wake's ``you_run``, whoever moved it."""
    for moved in moves:
        await hearth.events.publish(
            Change(
                caller.project_id,
                identity_id,
                "you_run",
                "runtime_status_changed",
                dict(moved),
                iso(utcnow()) or "",
            )
        )


@router.post(
    "/v1/runtimes/{id}/heartbeat",
    response_model=RuntimeView,
    responses=errors(401, 404, 409),
    summary="A self runtime's user-side loop reports in: last_seen_at, and the moves to running "
    "(the first heartbeat), to idle and back",
)
async def heartbeat(id: str, caller: CallerDep, hearth: HearthDep) -> JsonObject:
    view, moves = await hearth.db.transaction(
        runtimes.heartbeat,
        caller.project_id,
        id,
        idle_seconds=hearth.settings.runtime_idle_seconds,
    )
    await announce_moves(hearth, caller, view["identity_id"], moves)
    return view
