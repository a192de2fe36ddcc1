"""Identities: authority state, the root-proof-protected expression, and the pulse."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends
from sqlalchemy import Connection

from ..auth import Authorized, CallerDep, HearthDep, root_proof
from ..json_types import JsonObject
from ..models import AuthorityView, Expression, ExpressionState, ExpressionView, IdentityProfile
from ..models_elevation import Pulse
from ..services import identities, memories, pulse
from .common import ROOTED, errors

router = APIRouter(tags=["identities"])


@router.get(
    "/v1/identities/{id}/authority", response_model=AuthorityView, responses=errors(401, 404)
)
async def authority(id: str, caller: CallerDep, hearth: HearthDep) -> JsonObject:
    identity = await hearth.db.snapshot(identities.find, caller.project_id, id)
    return identities.authority_view(identity)


@router.get(
    "/v1/identities/{id}/profile",
    response_model=IdentityProfile,
    responses=errors(401, 404),
    summary="The identity's own fields: name, form, language, level, sponsor, metadata...",
)
async def profile(id: str, caller: CallerDep, hearth: HearthDep) -> JsonObject:
    identity = await hearth.db.snapshot(identities.find, caller.project_id, id)
    return identities.profile_view(identity)


@router.get(
    "/v1/identities/{id}/expression",
    response_model=ExpressionState,
    responses=errors(401, 404),
    summary="The declared expression, the effective one, and the memories that shaped it",
)
async def get_expression(id: str, caller: CallerDep, hearth: HearthDep) -> JsonObject:
    def run(conn: Connection) -> JsonObject:
        return memories.shaping(conn, identities.find(conn, caller.project_id, id))

    return await hearth.db.snapshot(run)


@router.put(
    "/v1/identities/{id}/expression",
    response_model=ExpressionView,
    responses=errors(*ROOTED),
    summary="Replace the identity's expression (bearer + root proof)",
)
async def put_expression(
    id: str,
    auth: Annotated[Authorized[Expression], Depends(root_proof(Expression))],
    hearth: HearthDep,
) -> JsonObject:
    expression = auth.body.model_dump(by_alias=True)
    await hearth.db.transaction(identities.set_expression, auth.grant, expression)
    return identities.expression_view(expression)


@router.get(
    "/v1/identities/{id}/pulse",
    response_model=Pulse,
    responses=errors(401, 404),
    summary="Liveness derived from activity: latest moments, 24-hour counts, a descriptive state",
)
async def get_pulse(id: str, caller: CallerDep, hearth: HearthDep) -> JsonObject:
    def run(conn: Connection) -> JsonObject:
        return pulse.pulse(conn, identities.find(conn, caller.project_id, id))

    return await hearth.db.snapshot(run)
