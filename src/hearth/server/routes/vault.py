"""The vault: named secrets of a project, sealed at rest; no route ever answers a value.

The rules are in ``services/vault.py``; docs/service.md, "Wallets and vault", has the decisions.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Response

from ..auth import CallerDep, HearthDep
from ..errors import not_found
from ..json_types import JsonObject
from ..models import VaultList, VaultPut, VaultSecret
from ..services import vault
from .common import cursor_query, errors

router = APIRouter(tags=["vault"])

# Parameter annotations are written out in each route, never shared (see routes/adds.py).
_NAME_TEXT = (
    "the secret's name; `<identity id>:<key>` (for example `<agent_id>:config`) is in that "
    "identity's namespace"
)


@router.get(
    "/v1/vault",
    response_model=VaultList,
    summary="Names and metadata of the project's secrets, by name (never their values)",
    responses=errors(401, 404, 422),
)
async def list_secrets(
    caller: CallerDep,
    hearth: HearthDep,
    identity_id: Annotated[
        str | None, Query(max_length=64, description="only this identity's namespace")
    ] = None,
    # The last name of the previous page (services/vault.py).
    cursor: Annotated[str | None, cursor_query(vault.NAME_PATTERN)] = None,
    limit: Annotated[int, Query(ge=1, le=1000, description="items per page")] = 100,
) -> JsonObject:
    return await hearth.db.snapshot(
        lambda conn: vault.list_secrets(
            conn, caller.project_id, identity_id=identity_id, cursor=cursor, limit=limit
        )
    )


@router.put(
    "/v1/vault/{name}",
    status_code=201,
    response_model=VaultSecret,
    summary="Store or replace a secret (sealed at rest; the value is never returned)",
    responses={
        **errors(401, 404, 422),
        200: {"model": VaultSecret, "description": "An existing secret was replaced."},
    },
)
async def put_secret(
    name: Annotated[
        str, Path(min_length=1, max_length=200, pattern=vault.NAME_PATTERN, description=_NAME_TEXT)
    ],
    body: VaultPut,
    caller: CallerDep,
    hearth: HearthDep,
    response: Response,
) -> JsonObject:
    record, created = await hearth.db.transaction(
        lambda conn: vault.put_secret(
            conn,
            caller.project_id,
            name,
            body.value,
            description=body.description,
            master_key=hearth.settings.kms_master_key,
        )
    )
    if not created:
        response.status_code = 200
    return record


@router.get(
    "/v1/vault/{name}",
    response_model=VaultSecret,
    summary="A secret's metadata (never its value)",
    responses=errors(401, 404, 422),
)
async def get_secret(
    name: Annotated[
        str, Path(min_length=1, max_length=200, pattern=vault.NAME_PATTERN, description=_NAME_TEXT)
    ],
    caller: CallerDep,
    hearth: HearthDep,
) -> JsonObject:
    return await hearth.db.snapshot(vault.metadata_of, caller.project_id, name)


@router.delete(
    "/v1/vault/{name}",
    status_code=204,
    summary="Delete a secret",
    responses=errors(401, 404, 422),
)
async def delete_secret(
    name: Annotated[
        str, Path(min_length=1, max_length=200, pattern=vault.NAME_PATTERN, description=_NAME_TEXT)
    ],
    caller: CallerDep,
    hearth: HearthDep,
) -> Response:
    if not await hearth.db.transaction(vault.delete_secret, caller.project_id, name):
        raise not_found("Vault secret")
    return Response(status_code=204)
