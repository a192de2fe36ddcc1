"""Arrival: registration, signed discovery and recovery (public routes)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from hearth.proofs import AUTHORITY_HEADERS

from ..auth import HearthDep, signed_request
from ..client_address import client_address
from ..errors import ApiError
from ..json_types import JsonObject
from ..models import (
    DiscoveryRequest,
    DiscoveryResponse,
    ErrorBody,
    RecoverRequest,
    RecoverResponse,
    RegisterAgentRequest,
    RegisterAgentResponse,
)
from ..services import arrival, recovery
from .common import errors

router = APIRouter(tags=["arrival"])


@router.post(
    "/v1/register",
    status_code=410,
    responses={410: {"model": ErrorBody, "description": "Retired on 2026-05-15."}},
    summary="Retired: always 410 Gone",
    deprecated=True,
)
async def register_retired() -> JSONResponse:
    raise ApiError(
        410,
        "gone",
        "POST /v1/register was retired on 2026-05-15; use POST /v1/register/agent.",
        hint="Register with your own keys, a key proof and proof-of-work.",
        docs="/v1/pathways",
        next_actions=["POST /v1/register/agent"],
    )


@router.post(
    "/v1/register/agent",
    status_code=201,
    response_model=RegisterAgentResponse,
    responses=errors(401, 404, 409, 422, 429),
    summary="Register an agent with its own keys",
)
async def register_agent(
    body: RegisterAgentRequest, request: Request, hearth: HearthDep
) -> JsonObject:
    return await arrival.register(
        hearth.db,
        body,
        client_address(request, hearth.settings),
        settings=hearth.settings,
        limiter=hearth.limiter,
        metrics=hearth.metrics,
    )


@router.post(
    "/public/identities/by-pubkey",
    response_model=DiscoveryResponse,
    responses=errors(422),
    summary="Signed discovery: the identities rooted in a key you hold",
)
async def by_pubkey(body: DiscoveryRequest, hearth: HearthDep) -> JsonObject:
    return await recovery.discover(hearth.db, body, freshness_ms=hearth.settings.freshness_ms)


@router.post(
    "/v1/identity/recover",
    response_model=RecoverResponse,
    responses=errors(409, 422, 428),
    summary="Recover a rooted identity: 428 first, then repeat with the root proof",
    openapi_extra={
        "parameters": [
            {
                "name": name,
                "in": "header",
                "required": False,
                "schema": {"type": "string"},
                "description": "Exact-request root proof (identity-authority/v1), on the retry.",
            }
            for name in AUTHORITY_HEADERS
        ]
    },
)
async def recover(body: RecoverRequest, request: Request, hearth: HearthDep) -> JsonObject:
    signed = signed_request(request, await request.body())
    return await recovery.recover(
        hearth.db, body, signed, freshness_ms=hearth.settings.freshness_ms
    )
