"""The console's live stream: the project's voice (routes/voice.py's events, every identity of
the project), authenticated by the console session, since a browser's EventSource cannot send
a bearer header."""

from __future__ import annotations

from collections.abc import AsyncIterator

from fastapi.sse import EventSourceResponse, ServerSentEvent

from ..auth import HearthDep
from ..routes.voice import changes_stream
from .common import router
from .session import SessionDep


@router.get("/live", response_class=EventSourceResponse)
async def live(session: SessionDep, hearth: HearthDep) -> AsyncIterator[ServerSentEvent]:
    async for event in changes_stream(hearth, session.project_id, None):
        yield event
