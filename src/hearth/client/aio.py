"""``AsyncHearthClient``: :class:`~hearth.client.HearthClient`'s calls for agents that live in an
event loop, sent with ``httpx2.AsyncClient``. Nothing of a call is written here: each is the
generator its family's mixin defines once (``calls.py``), run by :class:`AsyncRunner` (the same
GET-only retry on connection errors). Only what cannot pass through ``op`` is spelled out: the
overloaded ``wake`` and ``scaffold`` (delegating to the shared request), the voice's stream, and
``export_life`` (many calls and file work, run in a thread).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, BinaryIO, Literal, overload

import httpx2

from .aio_voice import AsyncVoiceStream
from .calls import AsyncRunner
from .core import CoreCalls
from .errors import HearthError
from .identity import IdentityCalls
from .life import LifeCalls
from .memories import MemoryCalls
from .migration import MigrationCalls
from .orientation import OrientationCalls
from .project import ProjectCalls
from .runtimes import RuntimeCalls
from .settings import FromSettings
from .wake import (
    DEFAULT_VOICE_READ_TIMEOUT,
    VOICE_DOC,
    WAKE_DOC,
    WakeCalls,
    voice_request,
)

if TYPE_CHECKING:
    from .export import Exported
    from .mnemonic_keys import IdentityKeys

__all__ = ["AsyncHearthClient"]


class AsyncHearthClient(
    AsyncRunner,
    FromSettings,
    CoreCalls,
    IdentityCalls,
    OrientationCalls,
    MemoryCalls,
    ProjectCalls,
    LifeCalls,
    MigrationCalls,
    WakeCalls,
    RuntimeCalls,
):
    """An asynchronous client of one hearth service, on ``httpx2.AsyncClient``: the same calls
    as :class:`~hearth.client.HearthClient`, with the same names and arguments, each a coroutine
    (``await client.memories()``), and the ``iter_*`` listings async iterators (``async for``).
    The calls are the very same code (``calls.py``); only the sending differs. Registration's
    proof-of-work is solved in the loop's thread: prepare it ahead (``prepare_registration``)
    or in an executor when the loop must stay responsive.

    ``api_key`` is the project bearer; it is sent only to routes that need one, and it is
    replaced by the bearer a successful :meth:`register` or :meth:`recover` returns. Use the
    client as a context manager, or call :meth:`close`. :meth:`from_env` and :meth:`from_home`
    find the service and the bearer for you.

    Its calls, their arguments and their resource families are :class:`HearthClient`'s
    (docs/sdk.md lists every call). Each listing has an ``iter_*`` twin over all its pages.
    """

    _http: httpx2.AsyncClient

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        timeout: float = 30.0,
        transport: httpx2.AsyncBaseTransport | None = None,
    ) -> None:
        super().__init__(base_url, api_key=api_key, timeout=timeout)
        self._http = httpx2.AsyncClient(
            base_url=self.base_url,
            timeout=timeout,
            transport=transport,
            headers=self._default_headers(),
        )

    # -- lifecycle --

    async def __aenter__(self) -> AsyncHearthClient:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        await self._http.aclose()

    # -- the calls whose answer type depends on an argument (see WakeCalls, ProjectCalls) --

    @overload
    async def wake(
        self,
        format: Literal["json", "anthropic", "openai"] = "json",
        *,
        identity_id: str | None = None,
        refresh: bool = False,
        as_of: str | None = None,
    ) -> dict[str, Any]: ...

    @overload
    async def wake(
        self,
        format: Literal["md", "math"],
        *,
        identity_id: str | None = None,
        refresh: bool = False,
        as_of: str | None = None,
    ) -> str: ...

    @overload
    async def wake(
        self,
        format: str,
        *,
        identity_id: str | None = None,
        refresh: bool = False,
        as_of: str | None = None,
    ) -> dict[str, Any] | str: ...

    async def wake(
        self,
        format: str = "json",
        *,
        identity_id: str | None = None,
        refresh: bool = False,
        as_of: str | None = None,
    ) -> dict[str, Any] | str:
        return await self._wake(format, identity_id=identity_id, refresh=refresh, as_of=as_of)

    wake.__doc__ = WAKE_DOC

    async def voice(
        self,
        identity_id: str,
        *,
        reconnect: int = 0,
        backoff: float = 1.0,
        read_timeout: float = DEFAULT_VOICE_READ_TIMEOUT,
    ) -> AsyncVoiceStream:
        request = voice_request(self, identity_id, reconnect, read_timeout)

        async def connect() -> httpx2.Response:
            response = await self._http.send(request, stream=True)
            if not response.is_success:
                try:
                    await response.aread()
                finally:
                    await response.aclose()
                raise HearthError.from_response(response)
            return response

        stream = AsyncVoiceStream(connect, reconnect=reconnect, backoff=backoff)
        await stream._open()
        return stream

    voice.__doc__ = VOICE_DOC

    @overload
    async def scaffold(
        self, platform: str, identity_id: str | None = None, text: Literal[False] = False
    ) -> dict[str, Any]: ...

    @overload
    async def scaffold(
        self, platform: str, identity_id: str | None, text: Literal[True]
    ) -> str: ...

    @overload
    async def scaffold(
        self, platform: str, identity_id: str | None = None, *, text: Literal[True]
    ) -> str: ...

    async def scaffold(
        self, platform: str, identity_id: str | None = None, text: bool = False
    ) -> dict[str, Any] | str:
        """The credential install script for ``platform`` (``linux``, ``macos``,
        ``windows``): JSON by default, the raw script with ``text=True``."""
        return await self._scaffold(platform, identity_id, text)

    async def export_life(
        self,
        out: BinaryIO,
        *,
        keys: IdentityKeys,
        identity_id: str,
        did: str,
        chunk_size: int = 1 << 20,
        on_progress: Callable[[str, int], None] | None = None,
    ) -> Exported:
        """:meth:`HearthClient.export_life`, awaited: sealing and writing are CPU and file
        work, so the export runs in a worker thread, on a synchronous client of the same
        service and bearer, and the loop stays free (``on_progress`` is called from that
        thread)."""
        from .sdk import HearthClient  # noqa: PLC0415 (the sync runner, only when used)

        def run() -> Exported:
            with HearthClient(self.base_url, api_key=self.api_key, timeout=self._timeout) as sync:
                return sync.export_life(
                    out,
                    keys=keys,
                    identity_id=identity_id,
                    did=did,
                    chunk_size=chunk_size,
                    on_progress=on_progress,
                )

        return await asyncio.to_thread(run)
