"""An identity's inbox (docs/strands.md, "The inbox"): post a message (the "inbox event" that
wakes the identity's idle runtimes) and list messages.

Taking, completing and releasing messages is the hosted orchestrator's (``services.inbox``)
for hosted runtimes. A ``self`` runtime's loop runs on the user's machine, so it does the same
over HTTP, through the routes under /v1/runtimes/{id}/inbox (docs/runtimes.md, "Self
custody"): only for a self runtime of the caller's project, and only for the messages that
runtime took."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Response

from ..auth import CallerDep, HearthDep
from ..json_types import JsonObject
from ..models import MemoryView
from ..models_strands import (
    InboxMessage,
    InboxPage,
    InboxPost,
    InboxPosted,
    InboxRemember,
    InboxStatus,
)
from ..services import cursors, inbox, memories
from .common import cursor_query, errors
from .runtimes import announce_moves

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
) -> JsonObject:
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
    cursor: Annotated[str | None, cursor_query(cursors.PATTERN)] = None,
    limit: Annotated[int, Query(ge=1, le=200, description="items per page")] = 50,
) -> JsonObject:
    page = await hearth.db.snapshot(
        inbox.listing, caller.project_id, id, status=status, cursor=cursor, limit=limit
    )
    return page.body()


# --- a self runtime's loop --------------------------------------------------------------------


@router.post(
    "/v1/runtimes/{id}/inbox/take",
    response_model=InboxMessage,
    responses={
        204: {"description": "No message is waiting for the runtime's identity."},
        **errors(401, 404, 409),
    },
    summary="A self runtime takes its identity's oldest pending message (never one another "
    "loop took); 204 when none is waiting",
)
async def take_message(id: str, caller: CallerDep, hearth: HearthDep) -> Any:
    message, moves = await hearth.db.transaction(inbox.take_for_self, caller.project_id, id)
    if moves:
        await announce_moves(hearth, caller, message["identity_id"] if message else None, moves)
    if message is None:
        return Response(status_code=204)
    return message


@router.post(
    "/v1/runtimes/{id}/inbox/{message_id}/complete",
    response_model=InboxMessage,
    responses=errors(401, 404, 409),
    summary="A self runtime marks a message it took as done (its thought is stored)",
)
async def complete_message(
    id: str, message_id: str, caller: CallerDep, hearth: HearthDep
) -> JsonObject:
    return await hearth.db.transaction(inbox.complete_for_self, caller.project_id, id, message_id)


@router.post(
    "/v1/runtimes/{id}/inbox/{message_id}/release",
    response_model=InboxMessage,
    responses=errors(401, 404, 409),
    summary="A self runtime gives back a message it took: its cycle failed, and the message is "
    "pending again",
)
async def release_message(
    id: str, message_id: str, caller: CallerDep, hearth: HearthDep
) -> JsonObject:
    return await hearth.db.transaction(inbox.release_for_self, caller.project_id, id, message_id)


@router.post(
    "/v1/runtimes/{id}/inbox/{message_id}/remember",
    status_code=201,
    response_model=MemoryView,
    responses=errors(401, 404, 409, 422),
    summary="A self runtime stores a message it took as an untrusted memory of its identity",
)
async def remember_message(
    id: str,
    message_id: str,
    caller: CallerDep,
    hearth: HearthDep,
    body: InboxRemember | None = None,
) -> JsonObject:
    memory = await hearth.db.transaction(
        inbox.remember_for_self,
        caller.project_id,
        id,
        message_id,
        key=body.key if body else None,
        api_key_id=caller.key_id,
    )
    return memories.view(memory, memory.created_at)
