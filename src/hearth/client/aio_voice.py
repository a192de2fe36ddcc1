"""The voice on the async client: :class:`AsyncVoiceStream`, the event-loop twin of
:class:`~hearth.client.wake.VoiceStream` (same events, same ``connected`` handshake, same
bounded reconnection; docs/voice.md). The request is built once, by ``wake.voice_request``."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import httpx2

from .errors import HearthError
from .wake import MAX_BACKOFF, VoiceEvent

__all__ = ["AsyncVoiceStream"]


class AsyncVoiceStream:
    """An open voice stream: ``async for`` it for :class:`VoiceEvent`; ``await close()`` (or
    ``async with``) to leave. Open it with ``await client.voice(identity_id)``."""

    def __init__(
        self,
        connect: Callable[[], Awaitable[httpx2.Response]],
        *,
        reconnect: int,
        backoff: float,
    ) -> None:
        self._connect = connect
        self._reconnects_left = reconnect
        self._backoff = backoff
        self._response: httpx2.Response | None = None
        self._events: AsyncIterator[httpx2.ServerSentEvent] | None = None
        self._pending: list[VoiceEvent] = []
        self._closed = False
        self.reconnects = 0

    async def _open(self) -> None:
        """Connect and read up to ``connected``, so that the subscription is live on return."""
        response = await self._connect()
        self._response = response
        self._events = aiter(httpx2.EventSource(response))
        try:
            first = await anext(self._events)
        except StopAsyncIteration:
            await self._drop()
            raise HearthError(
                response.status_code, "invalid_response", "the voice ended before `connected`"
            ) from None
        except BaseException:
            await self._drop()
            raise
        if first.event != "connected":
            await self._drop()
            raise HearthError(
                response.status_code,
                "invalid_response",
                f"the voice began with {first.event!r}, not `connected`",
            )
        self._pending.append(VoiceEvent.from_sse(first.event, first.data))

    async def _drop(self) -> None:
        if self._response is not None:
            await self._response.aclose()
            self._response = None
        self._events = None

    async def _reconnect(self) -> bool:
        """One more connection if any is left; transport failures use up attempts too."""
        while self._reconnects_left > 0 and not self._closed:
            self._reconnects_left -= 1
            await asyncio.sleep(min(self._backoff * 2**self.reconnects, MAX_BACKOFF))
            self.reconnects += 1
            try:
                await self._open()
            except httpx2.TransportError:
                continue
            return True
        return False

    def __aiter__(self) -> AsyncVoiceStream:
        return self

    async def __anext__(self) -> VoiceEvent:
        while True:
            if self._pending:
                return self._pending.pop(0)
            if self._closed or self._events is None:
                raise StopAsyncIteration
            try:
                sse = await anext(self._events)
            except (StopAsyncIteration, httpx2.TransportError) as ended:
                # Ended by the service, or broken: open again only if the caller asked to.
                await self._drop()
                try:
                    again = await self._reconnect()
                except BaseException:
                    await self.close()
                    raise
                if again:
                    continue
                await self.close()
                if isinstance(ended, StopAsyncIteration):
                    raise StopAsyncIteration from None
                raise
            return VoiceEvent.from_sse(sse.event, sse.data)

    async def close(self) -> None:
        self._closed = True
        self._pending.clear()
        await self._drop()

    @property
    def closed(self) -> bool:
        return self._closed

    async def __aenter__(self) -> AsyncVoiceStream:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.close()
