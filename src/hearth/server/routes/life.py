"""An identity's life arriving from another service: the provider's X25519 key, and the
import (issue 20; the rules are in ``services/life_import.py``, docs/export.md "Import")."""

from __future__ import annotations

import tempfile
from typing import Annotated

import anyio.to_thread
from fastapi import APIRouter, Depends, Header, Query, Request

from hearth.adds import b64url_encode
from hearth.proofs import life_import as life_recipe
from hearth.proofs.life_import import PROVIDER_BOX_INFO

from ..auth import Authorized, CallerDep, HearthDep, root_proof
from ..errors import ApiError
from ..json_types import JsonObject
from ..models_life import ImportedIdentity, MovedIdentity, MoveRequest, ProviderBoxKey
from ..services import life_import, moves, provider
from ..services.provider_key import ProviderKeyUnavailable, public_key_b64url
from .common import ROOTED, errors

router = APIRouter(tags=["identities"])

CAR = "application/vnd.ipld.car"
SPOOL_IN_MEMORY = 8 << 20  # a small life stays in memory; a larger one goes to a file

_CAR_BODY: JsonObject = {
    "requestBody": {
        "required": True,
        "description": f"The exported life: the bytes of a CAR v1 file, every object granted to "
        f"this service's X25519 key (GET /public/provider/box-key). Sent as {CAR} (the SDK "
        "does) or application/octet-stream: the route reads the bytes whatever the type.",
        # Listed as octet-stream: the generic binary type every OpenAPI tool can produce.
        "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}},
    }
}
_PROOF = "The import key proof (identity-import/v1 by the identity's root key)."


async def _box_key(hearth: HearthDep) -> tuple[str, str]:
    try:
        signing = await hearth.adds.keyring.key()
        box = await hearth.adds.keyring.box_key()
    except ProviderKeyUnavailable as exc:
        raise provider.key_unavailable(exc) from None
    return public_key_b64url(signing), b64url_encode(box.public_key().public_bytes_raw())


@router.get(
    "/public/provider/box-key",
    response_model=ProviderBoxKey,
    responses=errors(503),
    summary="The service's X25519 key: grant an export to it to import it here",
)
async def provider_box_key(hearth: HearthDep) -> JsonObject:
    signing, box = await _box_key(hearth)
    return {
        "x25519_public_key": box,
        "ed25519_public_key": signing,
        "derivation": f"hkdf-sha256:{PROVIDER_BOX_INFO.decode()}",
    }


@router.post(
    "/v1/identities/import",
    status_code=201,
    response_model=ImportedIdentity,
    responses=errors(401, 409, 413, 422, 503),
    summary="Import an identity's life exported from another service (CAR body + key proof)",
    openapi_extra=_CAR_BODY,
)
async def import_identity(  # noqa: PLR0917 - FastAPI parameters: the headers and query
    request: Request,
    caller: CallerDep,
    hearth: HearthDep,
    timestamp: Annotated[
        str | None, Header(alias="X-Hearth-Import-Timestamp", description=_PROOF)
    ] = None,
    signature: Annotated[
        str | None, Header(alias="X-Hearth-Import-Signature", description=_PROOF)
    ] = None,
    display_name: Annotated[
        str | None,
        Query(
            min_length=1,
            max_length=200,
            description="The identity's name here (default: its name in the export).",
        ),
    ] = None,
) -> JsonObject:
    proof = life_import.ImportProof(timestamp, signature)
    # Only a key that exists already: an export can only have been granted to a key the
    # service published (GET /public/provider/box-key), and a refused import writes nothing,
    # not even the service's first provider key.
    try:
        signing = await hearth.adds.keyring.existing()
    except ProviderKeyUnavailable as exc:
        raise provider.key_unavailable(exc) from None
    if signing is None:
        raise ApiError(
            422,
            "import_invalid",
            "This service has published no key to grant an export to yet.",
            hint="Fetch GET /public/provider/box-key, grant the export to that key (hearth "
            "import does both), then import.",
        )
    box = life_recipe.provider_box_key(signing)
    box_public = b64url_encode(box.public_key().public_bytes_raw())
    with tempfile.SpooledTemporaryFile(SPOOL_IN_MEMORY) as car:
        # The body limit (MAX_IMPORT_BYTES) is enforced by the middleware as it streams.
        async for part in request.stream():
            car.write(part)
        car.seek(0)
        verified = await anyio.to_thread.run_sync(
            lambda: life_import.verify(
                car,
                proof,
                box_key=box,
                box_public=box_public,
                freshness_ms=hearth.settings.freshness_ms,
            )
        )
        return await hearth.db.transaction(
            life_import.write, verified, caller.project_id, proof, display_name
        )


@router.post(
    "/v1/identities/{id}/move",
    response_model=MovedIdentity,
    responses=errors(*ROOTED, 410),
    summary="Record that the identity moved to another service (bearer + root proof)",
)
async def move_identity(
    id: str,
    auth: Annotated[Authorized[MoveRequest], Depends(root_proof(MoveRequest))],
    hearth: HearthDep,
) -> JsonObject:
    return await hearth.db.transaction(moves.move, auth.grant, auth.body.service, auth.body.did)
