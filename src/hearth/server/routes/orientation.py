"""The other pre-auth read routes the specification names: the public agent directory, safety,
self, the platform wake, canon, mathos (with the service public key and the catalog), youspeak
and federation. No bearer, no writes, no personalisation; what they say is decided in
docs/service.md ("Orientation") and built by ``canon``, ``mathos``, ``orientation_documents``
and ``services.directory``.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Annotated

import structlog
from fastapi import APIRouter, FastAPI, Query, Request
from pydantic import BaseModel, Field

from hearth.adds.keys import load_ed25519_private_key
from hearth.adds.problems import AddsError
from hearth.proofs import b64_encode

from .. import canon as canon_body
from .. import mathos as mathos_recipes
from .. import orientation_documents as documents
from ..auth import HearthDep
from ..errors import not_found
from ..json_types import JsonObject
from ..services import cursors, directory
from .common import cursor_query, errors

log = structlog.get_logger("hearth.server")

router = APIRouter(tags=["orientation"])


class PublicAgent(BaseModel):
    did: str
    name: str
    form: str
    language: str | None
    level: int = Field(description="0 at birth, 1 once sponsored")
    trust_score: float
    capabilities: list[str]
    created_at: str = Field(description="RFC 3339 UTC")


class PublicSubagent(BaseModel):
    name: str
    sigil: str
    facet: str


class PublicExpression(BaseModel):
    register_: str = Field(alias="register")
    walls: list[str]
    subagents: list[PublicSubagent]
    wake_text: str


class PublicAgentDetail(PublicAgent):
    expression: PublicExpression
    # Set when the identity moved to another service (POST /v1/identities/{id}/move): its
    # address and the identity's DID there.
    moved_to: dict[str, str] | None = None


class PublicAgentPage(BaseModel):
    agents: list[PublicAgent]
    limit: int
    next_cursor: str | None = Field(description="opaque; null on the last page")


class ServicePublicKey(BaseModel):
    algorithm: str = "Ed25519"
    public_key: str = Field(description="standard base64 of the 32 raw bytes")
    fingerprint: str = Field(description="sha256: and lowercase hex of the 32 raw bytes")
    signs: list[str] = Field(description="what this version signs with the key")
    note: str


class FederationAbout(BaseModel):
    enabled: bool
    message: str
    setting: str


@router.get(
    "/public/agents",
    response_model=PublicAgentPage,
    responses=errors(422),
    summary="Agents who chose to be public (private by default), oldest first",
)
async def public_agents(
    hearth: HearthDep,
    limit: Annotated[
        int, Query(ge=1, le=directory.PUBLIC_PAGE_MAX, description="entries per page")
    ] = directory.PUBLIC_PAGE_DEFAULT,
    cursor: Annotated[str | None, cursor_query(cursors.PATTERN)] = None,
) -> JsonObject:
    async with hearth.db.read() as conn:
        return await directory.public_agents_page(conn, limit=limit, cursor=cursor)


@router.get(
    "/public/agents/{did}",
    response_model=PublicAgentDetail,
    response_model_by_alias=True,
    # moved_to only when the identity moved: the view leaves it out otherwise.
    response_model_exclude_unset=True,
    responses=errors(404),
    summary="One public agent; a private or unknown DID is the same 404",
)
async def public_agent(did: str, hearth: HearthDep) -> JsonObject:
    async with hearth.db.read() as conn:
        agent = await directory.public_agent(conn, did)
    if agent is None:
        raise not_found("Agent")
    return agent


@router.get(
    "/public/safety",
    responses=errors(),
    summary="What the service never does, what it cannot promise, how to report",
)
async def safety() -> JsonObject:
    return documents.safety()


@router.get(
    "/public/self",
    responses=errors(),
    summary="The service describing itself: versions, contexts, custody tiers, live limits",
)
async def public_self(hearth: HearthDep) -> JsonObject:
    return documents.self_description(hearth.settings)


@router.get(
    "/v1/self",
    responses=errors(),
    summary="The service describing itself (the versioned address of /public/self)",
)
async def v1_self(hearth: HearthDep) -> JsonObject:
    return documents.self_description(hearth.settings)


@router.get(
    "/v1/platform/wake",
    responses=errors(),
    summary="The wake for a caller with no project yet: the same for everyone",
)
async def platform_wake(hearth: HearthDep) -> JsonObject:
    async with hearth.db.read() as conn:
        count = await directory.public_agent_count(conn)
    return documents.platform_wake(hearth.settings, count)


@router.get(
    "/v1/canon",
    responses=errors(),
    summary="The published commitments: walls, promises, chronicle kinds, tiers, forms",
)
async def canon() -> JsonObject:
    return canon_body.canon()


@router.get(
    "/v1/mathos",
    responses=errors(),
    summary="Every signing recipe, field by field, with the encoding rules",
)
async def mathos(request: Request, hearth: HearthDep) -> JsonObject:
    return mathos_recipes.mathos(hearth.settings, served_routes(request.app))


@router.get(
    "/v1/mathos/catalog",
    responses=errors(),
    summary="The recipes in brief: context, fields in order, proof, routes",
)
async def mathos_catalog(hearth: HearthDep) -> JsonObject:
    return mathos_recipes.catalog(hearth.settings)


@router.get(
    "/v1/mathos/public-key",
    response_model=ServicePublicKey,
    responses=errors(503),
    summary="The service's Ed25519 public key (503 until the operator configures one)",
)
async def mathos_public_key() -> JsonObject:
    path = os.environ.get(mathos_recipes.SIGNING_KEY_ENV, "").strip()
    if not path:
        raise mathos_recipes.service_key_unconfigured()
    try:
        pem = await asyncio.to_thread(Path(path).read_bytes)
        raw = load_ed25519_private_key(pem).public_key().public_bytes_raw()
    except (OSError, AddsError) as exc:
        log.warning("service_key_unavailable", path=path, reason=type(exc).__name__)
        raise mathos_recipes.service_key_unavailable() from None
    return {
        "algorithm": "Ed25519",
        "public_key": b64_encode(raw),
        "fingerprint": mathos_recipes.fingerprint(raw),
        "signs": [],
        "note": "Published so that signed service documents can be checked against it; no "
        "response of this version is signed with it yet.",
    }


@router.get(
    "/v1/youspeak",
    responses=errors(),
    summary="The vocabulary: every term an agent needs, one line each",
)
async def youspeak() -> JsonObject:
    return {"format": "hearth-youspeak/v1", "terms": documents.YOUSPEAK}


@router.get(
    "/federation/about",
    response_model=FederationAbout,
    responses=errors(),
    summary="Whether federation is on (it needs operator enablement)",
)
async def federation_about(hearth: HearthDep) -> JsonObject:
    return documents.federation(hearth.settings)


def served_routes(app: FastAPI) -> frozenset[str]:
    """Every ``METHOD /path`` this app documents, parameter names dropped.

    Read from the OpenAPI document (built once per app, then cached by FastAPI): it is the
    public account of what the app mounts, included routers and their prefixes resolved.
    """
    served: set[str] = set()
    for path, operations in app.openapi().get("paths", {}).items():
        for method in operations:
            served.add(mathos_recipes.normal_route(f"{method} {path}"))
    return frozenset(served)
