"""The wake (GET /v1/wake): session orientation in five formats (docs/wake.md).

The document is built by ``services/wake.py`` in one read snapshot and rendered by the pure
functions of ``services/wake_render.py``. A wake read writes nothing. The rendered answer is
cached per process for a few seconds by (project, identity, format), and served only while the
project's change stamp (``services/wake_stamps.py``) has not moved; ``refresh=true`` builds it
anew.
"""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.responses import Response
from sqlalchemy import Connection

from ..auth import CallerDep, HearthDep
from ..errors import ApiError
from ..models_wake import WakeJson
from ..services import wake as wake_service
from ..services import wake_stamps
from ..services.wake_render import render
from .common import errors

router = APIRouter(tags=["wake"])


def _cached_or_built(
    conn: Connection, key: wake_service.CacheKey, refresh: bool
) -> tuple[int, wake_service.Cached | None, dict[str, Any] | None]:
    """The project's stamp, then the entry cached under it, or else the wake built anew: one
    snapshot (one connection) for both. Read before the build, in every process: a wake cached
    before the project's last change (made through any worker) was stored under an older stamp
    and is not served."""
    project_id, focus, _ = key
    stamp = wake_stamps.current(conn, project_id)
    cached = None if refresh else wake_service.CACHE.get(key, stamp=stamp)
    if cached is not None:
        return stamp, cached, None
    return stamp, None, wake_service.build(conn, project_id, focus)


@router.get(
    "/v1/wake",
    response_model=WakeJson,
    summary="The wake: project-scoped orientation (JSON, Markdown, math, or a provider's "
    "system-message payload)",
    responses={
        **errors(401, 404, 422),
        200: {
            "description": "JSON by default (`anthropic` and `openai`: the Markdown wake as that "
            "vendor's system-message payload); `md` is Markdown, `math` one fact per line. "
            "`X-Wake-Generated-At` says when the answer was built.",
            "content": {
                "text/markdown": {"schema": {"type": "string"}},
                "text/plain": {"schema": {"type": "string"}},
            },
        },
    },
)
async def wake(
    caller: CallerDep,
    hearth: HearthDep,
    identity_id: Annotated[
        uuid.UUID | None,
        Query(description="the focal identity; without it, the sole active identity, or none"),
    ] = None,
    format: Annotated[
        str,
        Query(
            max_length=32,
            description="json (default), md, math, anthropic or openai",
            json_schema_extra={"enum": list(wake_service.FORMATS)},
        ),
    ] = "json",
    refresh: Annotated[
        bool, Query(description="build the wake anew instead of answering a cached one")
    ] = False,
) -> Response:
    if format not in wake_service.FORMATS:
        raise ApiError(
            422,
            "unknown_format",
            f"The wake has no format {format!r}.",
            details={"allowed": list(wake_service.FORMATS)},
            hint="Leave format out for JSON, or pass one of the allowed formats.",
        )
    project_id = caller.project_id
    focus = str(identity_id) if identity_id is not None else None
    key = (project_id, focus, format)
    stamp, cached, document = await hearth.db.snapshot(_cached_or_built, key, refresh)
    state = "hit"
    if cached is None:
        assert document is not None
        state = "refresh" if refresh else "miss"
        body, media_type = render(document, format)
        wake_service.CACHE.put(key, body, media_type, document["generated_at"], stamp=stamp)
        generated_at = document["generated_at"]
    else:
        body, media_type, generated_at = cached.body, cached.media_type, cached.generated_at
    return Response(
        body,
        media_type=media_type,
        headers={
            "X-Wake-Generated-At": generated_at,
            "X-Wake-Cache": state,
            # Project-private orientation: no shared cache may keep it.
            "Cache-Control": "private, no-store",
        },
    )
