"""An identity's inbox (docs/strands.md, "The inbox"): post a message (the "inbox event" that
wakes the identity's idle runtimes) and list messages. Taking, completing and releasing
messages is the orchestrator's (``services.inbox``), not a route's."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from ..auth import CallerDep, HearthDep
from ..models_strands import InboxPage, InboxPost, InboxPosted, InboxStatus
from ..services import inbox
from .common import errors

router = APIRouter(tags=["inbox"])


@router.post(
    "/v1/identities/{id}/inbox",
    status_code=201,
    response_model=InboxPosted,
    responses=errors(401, 404, 422),
    summary="Send a message to an identity; its idle runtimes wake",
)
async def post_message(
    id: str, body: InboxPost, caller: CallerDep, hearth: HearthDep
) -> dict[str, Any]:
    return await hearth.db.transaction(
        inbox.post, caller.project_id, id, sender=body.sender, body=body.body
    )


@router.get(
    "/v1/identities/{id}/inbox",
    response_model=InboxPage,
    responses=errors(401, 404, 422),
    summary="The identity's messages, newest first",
)
async def list_messages(  # noqa: PLR0917 - FastAPI reads query parameters from the signature
    id: str,
    caller: CallerDep,
    hearth: HearthDep,
    status: Annotated[InboxStatus | None, Query(description="only this status")] = None,
    cursor: Annotated[
        str | None, Query(max_length=200, description="next_cursor of the previous page")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=200, description="items per page")] = 50,
) -> dict[str, Any]:
    page = await hearth.db.snapshot(
        inbox.listing, caller.project_id, id, status=status, cursor=cursor, limit=limit
    )
    return {"items": page.items, "next_cursor": page.next_cursor}
