"""The chronicle: what happened to the project and its identities, newest first."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from sqlalchemy import Connection

from ..auth import CallerDep, HearthDep
from ..canon import ChronicleKind
from ..json_types import JsonObject
from ..models import ChronicleCreate, ChronicleEntry, ChroniclePage
from ..services import chronicle, cursors, identities
from ..services.cursors import Page
from .common import cursor_query, errors

router = APIRouter(tags=["chronicle"])


@router.post(
    "/v1/chronicle",
    status_code=201,
    response_model=ChronicleEntry,
    responses=errors(401, 404, 422),
    summary="Write a chronicle entry (any kind but refusal, seal and note, the service's own)",
)
async def write_entry(body: ChronicleCreate, caller: CallerDep, hearth: HearthDep) -> JsonObject:
    def run(conn: Connection) -> JsonObject:
        return chronicle.write(
            conn,
            caller.project_id,
            body.agent_id,
            body.kind,
            body.text,
            details=body.details,
            channel=body.channel,
            api_key_id=caller.key_id,
        )

    return await hearth.db.transaction(run)


@router.get(
    "/v1/chronicle",
    response_model=ChroniclePage,
    responses=errors(401, 404, 422),
    summary="The project's chronicle, newest first (refusals are recorded here)",
)
async def read_chronicle(  # noqa: PLR0917 - FastAPI reads query parameters from the signature
    caller: CallerDep,
    hearth: HearthDep,
    kind: Annotated[ChronicleKind | None, Query(description="only entries of this kind")] = None,
    agent_id: Annotated[
        str | None,
        Query(max_length=64, description="only entries about this identity (UUID or DID)"),
    ] = None,
    cursor: Annotated[str | None, cursor_query(cursors.PATTERN)] = None,
    limit: Annotated[int, Query(ge=1, le=1000, description="entries per page")] = 100,
) -> JsonObject:
    def run(conn: Connection) -> Page:
        identity_id = None
        if agent_id is not None:
            identity_id = identities.find(conn, caller.project_id, agent_id).id
        return chronicle.entries(
            conn,
            caller.project_id,
            kind=kind,
            identity_id=identity_id,
            cursor=cursor,
            limit=limit,
        )

    page = await hearth.db.snapshot(run)
    return page.body()
