"""The wake's voice: a Server-Sent Events stream of the changes of the caller's project
(docs/voice.md).

Everything that can refuse (bearer, identity) is checked in a dependency, before the first byte
of the stream: a refusal is an ordinary JSON error. Once the stream runs it only ends when the
client goes away, its queue overflows or the service shuts down; the subscription is dropped in
every case (the generator's ``finally``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Annotated

from fastapi import APIRouter, Depends, Query
from fastapi.sse import EventSourceResponse, ServerSentEvent
from sqlalchemy import Connection

from ..auth import BearerDep, Caller, HearthDep, caller_of
from ..changes import KEYS
from ..context import Hearth
from ..db.engine import utcnow
from ..events import Change
from ..json_types import JsonObject
from ..middleware import WELCOMED
from ..services import identities
from ..services.times import iso
from .common import errors

router = APIRouter(tags=["wake"])

# FastAPI documents a route's error models under the route's own media type, which here is
# text/event-stream; refusals are JSON (they come before the stream), so say so explicitly.
_ERRORS: dict[int | str, JsonObject] = {
    status: {
        "description": response["description"],
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}},
    }
    for status, response in errors(401, 404, 422).items()
}


@dataclass(frozen=True)
class VoiceTarget:
    caller: Caller
    identity_id: str


def _caller_and_identity(conn: Connection, bearer: str, ref: str) -> VoiceTarget:
    caller = caller_of(conn, bearer)
    return VoiceTarget(caller, str(identities.find(conn, caller.project_id, ref).id))


async def voice_target(
    hearth: HearthDep,
    bearer: BearerDep,
    identity_id: Annotated[
        str,
        Query(
            min_length=1,
            max_length=64,
            description="the identity (UUID or DID) whose changes, with the project-level "
            "ones, the stream reports",
        ),
    ],
) -> VoiceTarget:
    return await hearth.db.snapshot(_caller_and_identity, bearer, identity_id)


def _change_data(change: Change) -> JsonObject:
    # Details first, so that `key`, `kind`, `identity_id` and `at` can never be overwritten.
    return {
        **change.details,
        "key": change.key,
        "kind": change.kind,
        "identity_id": change.identity_id,
        "at": change.at,
    }


@router.get(
    "/v1/wake/voice",
    response_class=EventSourceResponse,
    responses=_ERRORS,
    summary="The wake's voice: Server-Sent Events for every change of the project",
    description="Events: `connected` (data: `identity_id`, `keys`) once; `change` (data: `key`, "
    "`kind`, `identity_id`, `at` and the ids of what changed) after each committed mutation of "
    "the project that concerns this identity or the whole project; `welcome` (data: "
    "`axiom_id` 5, `promise`, `at`, `interval_seconds`) about every 15 seconds. Data lines are "
    "JSON. No `id:` lines: a reconnecting client reads the wake again to catch up.",
)
async def voice(
    target: Annotated[VoiceTarget, Depends(voice_target)], hearth: HearthDep
) -> AsyncIterator[ServerSentEvent]:
    async for event in changes_stream(hearth, target.caller.project_id, target.identity_id):
        yield event


async def changes_stream(
    hearth: Hearth, project_id: str, identity_id: str | None
) -> AsyncIterator[ServerSentEvent]:
    """The events of one stream: ``identity_id`` None hears every change of the project (the
    console's live pages, whose people see the whole project)."""
    bus = hearth.events
    interval = hearth.settings.voice_welcome_seconds
    # Subscribed before `connected` is sent: whatever commits after the client saw it is sent.
    subscription = bus.subscribe(project_id, identity_id)
    loop = asyncio.get_running_loop()
    try:
        yield ServerSentEvent(
            event="connected",
            data={"identity_id": identity_id, "keys": list(KEYS)},
        )
        next_welcome = loop.time() + interval
        while True:
            try:
                change = await subscription.next(next_welcome - loop.time())
            except EOFError:
                return  # overflowed or shutting down: the client reconnects
            if change is not None:
                yield ServerSentEvent(event="change", data=_change_data(change))
            if loop.time() >= next_welcome:
                yield ServerSentEvent(
                    event="welcome",
                    data={**WELCOMED, "at": iso(utcnow()), "interval_seconds": interval},
                )
                next_welcome = loop.time() + interval
    finally:
        bus.unsubscribe(subscription)
