"""Attestations: the manual fallback for an elevation's sponsor attestation, and the listing
(docs/elevation.md, "Attestations").

A refused statement (unknown sponsor, self-attestation, a signature that does not verify) is
recorded in the subject's chronicle after nothing else was written (wall 5).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response
from sqlalchemy import Connection

from ..auth import CallerDep, HearthDep
from ..db.rows import IdentityRow
from ..json_types import JsonObject
from ..models_elevation import AttestationPage, AttestationStored, SponsorStatement
from ..services import attestations, chronicle, cursors, identities
from ..services.cursors import Page
from .common import cursor_query, errors

router = APIRouter(tags=["attestations"])

ROUTE = "POST /v1/attestations"


@router.post(
    "/v1/attestations",
    status_code=201,
    response_model=AttestationStored,
    responses={
        **errors(401, 403, 404, 422),
        200: {"model": AttestationStored, "description": "The same statement, already kept."},
    },
    summary="Keep another identity's signed statement (bootstrap-elevate/v1) about an identity "
    "of this project",
)
async def attest(
    body: SponsorStatement, caller: CallerDep, hearth: HearthDep, response: Response
) -> JsonObject:
    def verify(conn: Connection) -> tuple[IdentityRow, IdentityRow]:
        subject = identities.find(conn, caller.project_id, body.agent_id)
        sponsor, _key = attestations.verify(conn, subject, body)
        return subject, sponsor

    try:
        subject, sponsor = await hearth.db.snapshot(verify)
    except attestations.Refusal as refusal:
        raise await chronicle.record_refusal(
            hearth.db,
            refusal,
            project_id=caller.project_id,
            identity_id=body.agent_id,
            text=f"Refused an attestation about {body.agent_id}",
            route=ROUTE,
            sponsor=body.sponsor_ref,
            claim=body.claim,
        ) from None
    row, replayed = await hearth.db.transaction(
        attestations.store, caller.project_id, subject, sponsor, body
    )
    if replayed:
        response.status_code = 200
    return {**attestations.view(row), "replayed": replayed}


@router.get(
    "/v1/attestations",
    response_model=AttestationPage,
    responses=errors(401, 404, 422),
    summary="The project's attestations, newest first; identity_id keeps one identity's",
)
async def list_attestations(
    caller: CallerDep,
    hearth: HearthDep,
    identity_id: Annotated[
        str | None, Query(max_length=64, description="only those about this identity (UUID or DID)")
    ] = None,
    cursor: Annotated[str | None, cursor_query(cursors.PATTERN)] = None,
    limit: Annotated[int, Query(ge=1, le=1000, description="items per page")] = 100,
) -> JsonObject:
    def run(conn: Connection) -> Page:
        subject = None
        if identity_id is not None:
            subject = identities.find(conn, caller.project_id, identity_id).id
        return attestations.listing(
            conn, caller.project_id, identity_id=subject, cursor=cursor, limit=limit
        )

    page = await hearth.db.snapshot(run)
    return page.body()
