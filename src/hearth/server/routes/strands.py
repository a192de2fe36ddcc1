"""Identity keys, strands and thoughts (docs/strands.md).

Registering and revoking an identity key is a signing-key mutation: bearer + root proof for
``agent_root`` identities (``auth.root_proof``, the claim inside the mutation's transaction).
Strands and thoughts need the bearer; a thought write is further signed over its exact bytes
by a key of the identity (``services.strands``). A body that carries a plaintext field is
refused under wall 7 before it is validated, and the refusal is recorded in the chronicle
(wall 5, ``refusals_recorded``).
"""

from __future__ import annotations

import json
from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query, Request
from sqlalchemy import Connection

from ..auth import (
    Authorized,
    BearerDep,
    Caller,
    CallerDep,
    HearthDep,
    SequenceHeader,
    SignatureHeader,
    TimestampHeader,
    authorize_request,
    caller_of,
    root_proof,
)
from ..db.rows import IdentityRow
from ..json_types import JsonObject
from ..models_strands import (
    KID_PATTERN,
    IdentityKeyCreate,
    IdentityKeyList,
    IdentityKeyView,
    StrandCreate,
    StrandPage,
    StrandView,
    ThoughtCreate,
    ThoughtPage,
    ThoughtWritten,
)
from ..services import chronicle, cursors, identities, identity_keys, strands
from ..services.authority import RootGrant
from .common import ROOTED, cursor_query, errors

router = APIRouter(tags=["strands"])

Kid = Annotated[str, Path(pattern=KID_PATTERN, description="the key's label")]


# --- identity keys ----------------------------------------------------------------------------


@router.post(
    "/v1/identities/{id}/keys",
    status_code=201,
    response_model=IdentityKeyView,
    responses=errors(*ROOTED),
    tags=["identity keys"],
    summary="Register a runtime or device signing key for the identity (bearer + root proof)",
)
async def register_key(
    id: str,
    auth: Annotated[Authorized[IdentityKeyCreate], Depends(root_proof(IdentityKeyCreate))],
    hearth: HearthDep,
) -> JsonObject:
    body = auth.body
    return await hearth.db.transaction(
        identity_keys.register,
        auth.grant,
        kid=body.kid,
        public_key=body.public_key,
        purpose=body.purpose,
        runtime_id=body.runtime_id,
    )


@router.get(
    "/v1/identities/{id}/keys",
    response_model=IdentityKeyList,
    responses=errors(401, 404),
    tags=["identity keys"],
    summary="The identity's keys: the root key (`primary`) first, then registered ones",
)
async def list_keys(id: str, caller: CallerDep, hearth: HearthDep) -> JsonObject:
    def run(conn: Connection) -> JsonObject:
        identity = identities.find(conn, caller.project_id, id)
        return {"identity_id": identity.id, "items": identity_keys.listing(conn, identity)}

    return await hearth.db.snapshot(run)


def _caller_and_identity(conn: Connection, bearer: str, ref: str) -> tuple[Caller, IdentityRow]:
    caller = caller_of(conn, bearer)
    return caller, identities.find(conn, caller.project_id, ref)


async def revocation_authority(
    id: str,
    request: Request,
    hearth: HearthDep,
    bearer: BearerDep,
    _sequence: SequenceHeader = None,
    _timestamp: TimestampHeader = None,
    _signature: SignatureHeader = None,
) -> RootGrant:
    """``auth.root_proof`` for a route without a body: the identity's root signs the DELETE."""
    _, identity = await hearth.db.snapshot(_caller_and_identity, bearer, id)
    return authorize_request(hearth, identity, request, await request.body())


@router.delete(
    "/v1/identities/{id}/keys/{kid}",
    response_model=IdentityKeyView,
    responses=errors(*ROOTED),
    tags=["identity keys"],
    summary="Revoke a registered key (bearer + root proof); it signs nothing from now on",
)
async def revoke_key(
    id: str,
    kid: Kid,
    grant: Annotated[RootGrant, Depends(revocation_authority)],
    hearth: HearthDep,
) -> JsonObject:
    return await hearth.db.transaction(identity_keys.revoke, grant, kid)


# --- strands --------------------------------------------------------------------------------


@router.post(
    "/v1/strands",
    status_code=201,
    response_model=StrandView,
    responses=errors(401, 404, 409, 422),
    summary="Create a strand of an identity, optionally bound to one of its runtimes",
)
async def create_strand(body: StrandCreate, caller: CallerDep, hearth: HearthDep) -> JsonObject:
    return await hearth.db.transaction(
        strands.create,
        caller.project_id,
        identity_ref=body.identity_id,
        name=body.name,
        runtime_ref=body.runtime_id,
    )


@router.get(
    "/v1/strands",
    response_model=StrandPage,
    responses=errors(401, 404, 422),
    summary="The project's strands, newest first; filter by identity or runtime",
)
async def list_strands(  # noqa: PLR0917 - FastAPI reads query parameters from the signature
    caller: CallerDep,
    hearth: HearthDep,
    identity_id: Annotated[
        str | None, Query(max_length=64, description="only this identity's strands")
    ] = None,
    runtime_id: Annotated[
        str | None, Query(max_length=64, description="only strands bound to this runtime")
    ] = None,
    cursor: Annotated[str | None, cursor_query(cursors.PATTERN)] = None,
    limit: Annotated[int, Query(ge=1, le=200, description="items per page")] = 50,
) -> JsonObject:
    page = await hearth.db.snapshot(
        strands.listing,
        caller.project_id,
        identity_ref=identity_id,
        runtime_ref=runtime_id,
        cursor=cursor,
        limit=limit,
    )
    return page.body()


@router.get(
    "/v1/strands/{id}",
    response_model=StrandView,
    responses=errors(401, 404),
    summary="A strand, with the seq its next thought must carry",
)
async def read_strand(id: str, caller: CallerDep, hearth: HearthDep) -> JsonObject:
    return await hearth.db.snapshot(strands.read, caller.project_id, id)


# --- thoughts -------------------------------------------------------------------------------


def _plaintext_fields(raw: bytes) -> list[str]:
    try:
        document = json.loads(raw)
    except ValueError:
        return []  # not JSON: the body's validation answers 400
    if not isinstance(document, dict):
        return []
    return [name for name in strands.PLAINTEXT_FIELDS if name in document]


async def ciphertext_only(
    id: str, request: Request, hearth: HearthDep, bearer: BearerDep
) -> Caller:
    """Runs before the body is validated: a plaintext field is refused under wall 7 (with its
    own code, not as an unknown field) and the refusal is recorded in the chronicle."""
    caller = await hearth.db.snapshot(caller_of, bearer)
    fields = _plaintext_fields(await request.body())
    if fields:
        strand = await hearth.db.snapshot(strands.find, caller.project_id, id)
        raise await chronicle.record_refusal(
            hearth.db,
            strands.plaintext_refused(fields),
            project_id=caller.project_id,
            identity_id=strand.identity_id,
            text=f"Refused a plaintext thought for the strand {strand.id}",
            route="POST /v1/strands/{id}/thoughts",
            strand_id=strand.id,
            wall="thought_storage_ciphertext_only",
        )
    return caller


@router.post(
    "/v1/strands/{id}/thoughts",
    status_code=201,
    response_model=ThoughtWritten,
    responses=errors(401, 403, 404, 409, 422),
    summary="Append a thought: ciphertext and nonce only, signed over the exact bytes by a key "
    "of the identity, at the strand's next seq",
)
async def write_thought(
    id: str,
    body: ThoughtCreate,
    caller: Annotated[Caller, Depends(ciphertext_only)],
    hearth: HearthDep,
) -> JsonObject:
    return await hearth.db.transaction(
        strands.write,
        caller.project_id,
        id,
        seq=body.seq,
        nonce_b64=body.nonce,
        ciphertext_b64=body.ciphertext,
        signing_key_id=body.signing_key_id,
        signature=body.signature,
    )


@router.get(
    "/v1/strands/{id}/thoughts",
    response_model=ThoughtPage,
    responses=errors(401, 404, 422),
    summary="The strand's thoughts in seq order, after `after_seq`",
)
async def list_thoughts(
    id: str,
    caller: CallerDep,
    hearth: HearthDep,
    after_seq: Annotated[
        int, Query(ge=0, le=2**62, description="only thoughts with a greater seq")
    ] = 0,
    # A thought runs to 64 KiB: a page stays well under the size of a large answer.
    limit: Annotated[int, Query(ge=1, le=100, description="items per page")] = 50,
) -> JsonObject:
    return await hearth.db.snapshot(
        strands.page, caller.project_id, id, after_seq=after_seq, limit=limit
    )
