"""Project bearer keys."""

from __future__ import annotations

from fastapi import APIRouter, Response

from ..auth import CallerDep, HearthDep
from ..errors import not_found
from ..json_types import JsonObject
from ..models import KeyCreate, KeyCreated, KeyList
from ..services import keys
from .common import errors

router = APIRouter(tags=["keys"])


@router.get("/v1/keys", response_model=KeyList, responses=errors(401))
async def list_keys(caller: CallerDep, hearth: HearthDep) -> JsonObject:
    async with hearth.db.read() as conn:
        return {"keys": await keys.active(conn, caller.project_id)}


@router.post("/v1/keys", status_code=201, response_model=KeyCreated, responses=errors(401, 422))
async def create_key(body: KeyCreate, caller: CallerDep, hearth: HearthDep) -> JsonObject:
    issued = await hearth.db.transaction(keys.issue, caller.project_id, body.name)
    return {**issued.record(), "api_key": issued.secret}


@router.delete("/v1/keys/{key_id}", status_code=204, responses=errors(401, 404))
async def revoke_key(key_id: str, caller: CallerDep, hearth: HearthDep) -> Response:
    async with hearth.db.write() as conn:
        if not await keys.revoke(conn, caller.project_id, key_id):
            raise not_found("Key")
    return Response(status_code=204)
