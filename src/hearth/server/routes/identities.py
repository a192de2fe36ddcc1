"""Identities: authority state and the root-proof-protected expression."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends
from sqlalchemy import update

from ..auth import Authorized, CallerDep, HearthDep, root_proof
from ..db.tables import identities as identities_table
from ..models import AuthorityView, Expression, ExpressionView
from ..services import identities
from .common import ROOTED, errors

router = APIRouter(tags=["identities"])


@router.get(
    "/v1/identities/{id}/authority", response_model=AuthorityView, responses=errors(401, 404)
)
async def authority(id: str, caller: CallerDep, hearth: HearthDep) -> dict[str, Any]:
    async with hearth.db.read() as conn:
        return identities.authority_view(await identities.find(conn, caller.project_id, id))


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
) -> dict[str, Any]:
    expression = auth.body.model_dump(by_alias=True)
    async with hearth.db.write() as conn:
        await conn.execute(
            update(identities_table)
            .where(identities_table.c.id == auth.identity["id"])
            .values(expression=expression)
        )
        await auth.grant.release(conn)
    return identities.expression_view({"expression": expression})
