"""The wake (GET /v1/wake): session orientation in five formats (docs/wake.md).

The document is built by ``services/wake.py`` in one read snapshot and rendered by the pure
functions of ``services/wake_render.py``. A wake read writes nothing. The rendered answer, and the
sections it was assembled from, are cached per process for a few seconds
(``services/wake_cache.py``) and served only while the project's change stamps
(``services/wake_stamps.py``) say no change touched them; ``refresh=true`` builds it anew.
"""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import Response

from ..auth import CallerDep, HearthDep
from ..context import Hearth
from ..errors import ApiError
from ..models import AsOf
from ..models_wake import WakeJson
from ..services import wake as wake_service
from ..services import wake_cache
from ..services.times import naive_utc
from ..services.wake_render import render
from .common import errors

router = APIRouter(tags=["wake"])


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
async def wake(  # noqa: PLR0917 - FastAPI reads query parameters from the signature
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
    as_of: Annotated[
        AsOf | None,
        Query(
            description="what the wake remembers as it stood at this time (RFC 3339 with a "
            "zone); built anew, never cached"
        ),
    ] = None,
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
    if as_of is not None:
        # A wake of the past is asked for rarely and would only crowd the present's cache out.
        at = naive_utc(as_of)
        assert at is not None
        past = await hearth.db.snapshot(wake_service.build, project_id, focus, as_of=at)
        body, media_type = render(past, format)
        return _answer(body, media_type, past["generated_at"], "refresh")
    body, media_type, generated_at, state = await cached_wake(
        hearth, project_id, focus, format, refresh=refresh
    )
    return _answer(body, media_type, generated_at, state)


async def cached_wake(
    hearth: Hearth, project_id: str, focus: str | None, fmt: str, *, refresh: bool = False
) -> tuple[bytes, str, str, str]:
    """The wake through the cache: (body, media type, generated_at, cache state). The console
    reads the Markdown wake through here too, so a page and the JSON route share one cache."""
    key = (project_id, focus, fmt)
    answer = await hearth.db.snapshot(wake_cache.read_or_build, key, refresh=refresh)
    if answer.cached is None:
        document = answer.document
        assert document is not None
        body, media_type = render(document, fmt)
        generated_at = document["generated_at"]
        wake_cache.CACHE.put(key, body, media_type, generated_at, stamp=answer.stamp)
        return body, media_type, generated_at, "refresh" if refresh else "miss"
    cached = answer.cached
    return cached.body, cached.media_type, cached.generated_at, "hit"


def _answer(body: bytes, media_type: str, generated_at: str, state: str) -> Response:
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
