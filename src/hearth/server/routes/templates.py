"""Templates and template births (docs/forks-templates.md, "Templates").

Every route first makes sure the built-in catalogue is seeded (``templates.ensure_catalogue``:
once per process, insert-if-absent). A 402 on a purchase is recorded in the chronicle as a
refusal (wall 2, ``no_auto_retry_payout``; wall 5) after its transaction rolled back.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from ..auth import CallerDep, HearthDep
from ..errors import ApiError
from ..json_types import JsonObject
from ..models_forks import (
    FromTemplateRequest,
    FromTemplateResponse,
    PurchaseResponse,
    TemplateDetail,
    TemplatePage,
    TemplatePublish,
)
from ..services import chronicle, cursors, templates
from ..services.birth import ServerKeys
from .common import cursor_query, errors

router = APIRouter(tags=["templates"])


@router.get(
    "/v1/templates",
    response_model=TemplatePage,
    responses=errors(401, 422),
    summary="Listed templates, newest first: the built-in voices and those projects publish",
)
async def list_templates(
    caller: CallerDep,
    hearth: HearthDep,
    cursor: Annotated[str | None, cursor_query(cursors.PATTERN)] = None,
    limit: Annotated[int, Query(ge=1, le=200, description="items per page")] = 50,
) -> JsonObject:
    await templates.ensure_catalogue(hearth.db)
    page = await hearth.db.snapshot(templates.listing, caller.project_id, cursor, limit)
    return page.body()


@router.get(
    "/v1/templates/{template_id}", response_model=TemplateDetail, responses=errors(401, 404)
)
async def get_template(template_id: str, caller: CallerDep, hearth: HearthDep) -> JsonObject:
    await templates.ensure_catalogue(hearth.db)
    return await hearth.db.snapshot(templates.detail, caller.project_id, template_id)


@router.post(
    "/v1/templates",
    status_code=201,
    response_model=TemplateDetail,
    responses=errors(401, 404, 422),
    summary="Publish an identity's expression (or a given one) as a template with a price",
)
async def publish(body: TemplatePublish, caller: CallerDep, hearth: HearthDep) -> JsonObject:
    return await hearth.db.transaction(templates.publish, caller.project_id, body)


@router.post(
    "/v1/templates/{template_id}/purchase",
    status_code=201,
    response_model=PurchaseResponse,
    responses=errors(401, 402, 404, 409),
    summary="Buy a priced template: the purchase_id makes one identity from it",
)
async def purchase(template_id: str, caller: CallerDep, hearth: HearthDep) -> JsonObject:
    await templates.ensure_catalogue(hearth.db)
    try:
        return await hearth.db.transaction(templates.purchase, caller.project_id, template_id)
    except ApiError as refused:
        if refused.status != 402:
            raise
        raise await chronicle.record_refusal(
            hearth.db,
            refused,
            project_id=caller.project_id,
            identity_id=None,
            text="Refused to buy a template",
            route="POST /v1/templates/{template_id}/purchase",
            template_id=template_id,
            wall="no_auto_retry_payout",
        ) from None


@router.post(
    "/v1/identities/from-template",
    status_code=201,
    response_model=FromTemplateResponse,
    responses=errors(401, 404, 409, 422),
    summary="A new agent with a template's expression only; the private key is answered once",
)
async def from_template(
    body: FromTemplateRequest, caller: CallerDep, hearth: HearthDep
) -> JsonObject:
    await templates.ensure_catalogue(hearth.db)
    server_keys = ServerKeys.generate()
    return await hearth.db.transaction(
        templates.from_template, caller.project_id, body, server_keys
    )
