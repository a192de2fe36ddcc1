"""Probes for orchestrators and load balancers: ``/healthz`` (the process answers) and
``/readyz`` (it can serve: services/readiness.py has the rules). Public, no bearer, no writes
to the database, nothing secret in the answer."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from ..auth import HearthDep
from ..errors import ApiError
from ..json_types import JsonObject
from ..services.readiness import readiness
from .common import errors

router = APIRouter(tags=["health"])


@router.get("/healthz", summary="Liveness: the process answers (touches nothing else)")
async def healthz() -> JsonObject:
    return {"status": "ok"}


@router.get(
    "/readyz",
    summary="Readiness: database at this release's schema, block store writable, Redis state",
    responses=errors(503),
)
async def readyz(hearth: HearthDep) -> JSONResponse:
    object_store = await hearth.adds.object_store()
    result = await readiness(
        hearth.db,
        hearth.settings.blocks_dir,
        object_store=object_store,
        redis_configured=bool(hearth.settings.redis_url and hearth.settings.redis_url.strip()),
        limiter=hearth.limiter,
        events=hearth.events,
    )
    if not result.ready:
        raise ApiError(
            503,
            "not_ready",
            f"Not ready: {', '.join(result.failing)}.",
            details={"checks": result.checks},
        )
    return JSONResponse({"status": "ready", "checks": result.checks})
