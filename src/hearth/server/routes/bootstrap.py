"""Bootstrap (server-generated keys), scaffold scripts and key backups."""

from __future__ import annotations

import json
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import Response

from ..auth import Authorized, CallerDep, HearthDep, root_proof
from ..errors import ApiError, not_found
from ..json_types import JsonObject
from ..models import (
    BackupCreate,
    BackupRecord,
    BootstrapRequest,
    BootstrapResponse,
    BootstrapStatus,
)
from ..models_elevation import ElevationResult, SponsorStatement
from ..scaffold import ScaffoldIdentity, render_scaffold
from ..services import backups, bootstrap, elevation, identities
from .common import ROOTED, errors
from .public import base_url

router = APIRouter(tags=["bootstrap"])


@router.post(
    "/v1/bootstrap", status_code=201, response_model=BootstrapResponse, responses=errors(401, 422)
)
async def create(body: BootstrapRequest, caller: CallerDep, hearth: HearthDep) -> JsonObject:
    return await bootstrap.bootstrap(hearth.db, caller.project_id, body)


@router.get(
    "/v1/bootstrap/scaffold",
    responses={
        **errors(401, 404, 422),
        200: {
            "description": "JSON by default; the raw script with format=text.",
            "content": {
                "application/json": {},
                "text/x-shellscript": {"schema": {"type": "string"}},
            },
        },
    },
    summary="Local credential scaffolding: an install script that never contains the bearer",
)
async def scaffold(  # noqa: PLR0917 - FastAPI reads query parameters from the signature
    request: Request,
    caller: CallerDep,
    hearth: HearthDep,
    platform: Literal["macos", "linux", "windows"] = Query(),
    identity_id: str | None = Query(default=None, max_length=64),
    format: Literal["json", "text"] = Query(default="json"),
    did: str | None = Query(default=None, max_length=64),
    name: str | None = Query(default=None, max_length=200),
) -> Response:
    async with hearth.db.read() as conn:
        ref = identity_id or did
        if ref is not None:
            identity = await conn.run_sync(identities.find, caller.project_id, ref)
        else:
            active = await identities.active_in_project(conn, caller.project_id)
            if not active:
                raise not_found("Active identity")
            if len(active) > 1:
                raise ApiError(
                    422,
                    "identity_required",
                    "This project has several active identities: name one with identity_id.",
                    details={"identities": [row.id for row in active]},
                )
            identity = active[0]
    rendered = render_scaffold(
        platform,
        base_url=base_url(request, hearth),
        project_id=caller.project_id,
        identity=ScaffoldIdentity(id=identity.id, did=identity.did, name=name or identity.name),
    )
    if format == "text":
        return Response(
            rendered.script,
            media_type=rendered.content_type,
            headers={"Content-Disposition": f'attachment; filename="{rendered.filename}"'},
        )
    return Response(json.dumps(rendered.as_json()), media_type="application/json")


def _elevation_target(_request: Request, body: SponsorStatement) -> str:
    return body.agent_id


@router.post(
    "/v1/bootstrap/elevate",
    response_model=ElevationResult,
    responses=errors(*ROOTED, 403),
    summary="Level 0 to Level 1 on a sponsor's signed statement (bearer + root proof of an "
    "agent_root target)",
)
async def elevate(
    request: Request,
    auth: Annotated[
        Authorized[SponsorStatement], Depends(root_proof(SponsorStatement, _elevation_target))
    ],
    hearth: HearthDep,
) -> JsonObject:
    return await elevation.elevate(
        hearth.db,
        auth.caller.project_id,
        auth.grant,
        auth.body,
        request_id=str(request.scope.get("state", {}).get("request_id", "")),
        master_key=hearth.settings.kms_master_key,
    )


@router.get("/v1/bootstrap/{agent_id}", response_model=BootstrapStatus, responses=errors(401, 404))
async def bootstrap_status(agent_id: str, caller: CallerDep, hearth: HearthDep) -> JsonObject:
    return await bootstrap.status(hearth.db, caller.project_id, agent_id)


@router.post(
    "/v1/identity/backup",
    status_code=201,
    response_model=BackupRecord,
    responses=errors(401, 404, 422),
)
async def store_backup(body: BackupCreate, caller: CallerDep, hearth: HearthDep) -> JsonObject:
    return await backups.store(hearth.db, caller.project_id, body)


@router.get(
    "/v1/identity/backup/{agent_id}", response_model=BackupRecord, responses=errors(401, 404)
)
async def get_backup(agent_id: str, caller: CallerDep, hearth: HearthDep) -> JsonObject:
    return await backups.latest(hearth.db, caller.project_id, agent_id)
