"""``HearthClient``: the service's HTTP interface as typed calls, with the proofs built in. Every
call is written once in its family's mixin (``calls.py``); this class runs them on
``httpx2.Client``, and :class:`~hearth.client.AsyncHearthClient` (``aio.py``) on
``httpx2.AsyncClient``.

What the client does for its caller:

- Registration (``POST /v1/register/agent``): the register-agent/v2 key proof, a fresh
  registration nonce, and (self-service only) the proof-of-work, solved at the difficulty the
  service publishes in ``GET /public/plans``. :meth:`HearthClient.prepare_registration` builds
  the exact body without sending it, so it can be prepared ahead of time.
- Exact-request root proofs (identity-authority/v1): :meth:`HearthClient.root_request`
  serialises the body once, signs those bytes and the target exactly as sent, reads the next
  sequence from the authority route (or from a 428), and retries once when its sequence turns
  out to be stale.
- Signed discovery and recovery (``identity-discovery/v1``, ``identity-recover/v1``).

Errors: every non-2xx answer raises :class:`HearthError` with the service's ``error`` code,
``message`` and ``details``. Transport failures (no connection, timeouts) are httpx2's own
exceptions; a GET is first tried up to three times (``calls.py``), nothing else is resent.
If a registration's answer is lost in transit the registration may still have happened: find
it with :meth:`HearthClient.discover` and :meth:`HearthClient.recover` rather
than registering again.

Secrets: the bearer and private keys never appear in a ``repr``, an exception or a log line;
result fields that hold a secret are left out of their ``repr``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, BinaryIO, Literal, overload

import httpx2

from .calls import SyncRunner
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
    VoiceStream,
    WakeCalls,
    voice_request,
)

if TYPE_CHECKING:
    from .export import Exported
    from .mnemonic_keys import IdentityKeys

__all__ = ["HearthClient"]


class HearthClient(
    SyncRunner,
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
    """A synchronous client of one hearth service.

    ``api_key`` is the project bearer; it is sent only to routes that need one, and it is
    replaced by the bearer a successful :meth:`register` or :meth:`recover` returns. Use the
    client as a context manager, or call :meth:`close`. :meth:`from_env` and :meth:`from_home`
    find the service and the bearer for you.

    This class runs the calls; they come from one mixin per resource family: the transport,
    root proofs and authority from :class:`~hearth.client.core.CoreCalls`; registration, plans,
    expressions, discovery and recovery from :class:`~hearth.client.identity.IdentityCalls`;
    the porch, canon, orientation documents, health, metrics and package discovery from
    :class:`~hearth.client.orientation.OrientationCalls`;
    memories and the chronicle from :class:`~hearth.client.memories.MemoryCalls`; project
    keys, backups, bootstrap and scaffold from :class:`~hearth.client.project.ProjectCalls`;
    wallets, the vault, forks, templates, elevation, attestations, the pulse and the public
    directory from :class:`~hearth.client.life.LifeCalls`; the wake and its voice from
    :class:`~hearth.client.wake.WakeCalls`; runtimes, strands, thoughts (sealed and opened
    here), the inbox and identity keys from :class:`~hearth.client.runtimes.RuntimeCalls`
    (docs/sdk.md lists every call). Each listing has an ``iter_*`` twin over all its pages.
    """

    _http: httpx2.Client

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        timeout: float = 30.0,
        transport: httpx2.BaseTransport | None = None,
    ) -> None:
        super().__init__(base_url, api_key=api_key, timeout=timeout)
        self._http = httpx2.Client(
            base_url=self.base_url,
            timeout=timeout,
            transport=transport,
            headers=self._default_headers(),
        )

    # -- lifecycle --

    def __enter__(self) -> HearthClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    # -- the calls whose answer type depends on an argument (see WakeCalls, ProjectCalls) --

    @overload
    def wake(
        self,
        format: Literal["json", "anthropic", "openai"] = "json",
        *,
        identity_id: str | None = None,
        refresh: bool = False,
        as_of: str | None = None,
    ) -> dict[str, Any]: ...

    @overload
    def wake(
        self,
        format: Literal["md", "math"],
        *,
        identity_id: str | None = None,
        refresh: bool = False,
        as_of: str | None = None,
    ) -> str: ...

    @overload
    def wake(
        self,
        format: str,
        *,
        identity_id: str | None = None,
        refresh: bool = False,
        as_of: str | None = None,
    ) -> dict[str, Any] | str: ...

    def wake(
        self,
        format: str = "json",
        *,
        identity_id: str | None = None,
        refresh: bool = False,
        as_of: str | None = None,
    ) -> dict[str, Any] | str:
        return self._wake(format, identity_id=identity_id, refresh=refresh, as_of=as_of)

    wake.__doc__ = WAKE_DOC

    def voice(
        self,
        identity_id: str,
        *,
        reconnect: int = 0,
        backoff: float = 1.0,
        read_timeout: float = DEFAULT_VOICE_READ_TIMEOUT,
    ) -> VoiceStream:
        request = voice_request(self, identity_id, reconnect, read_timeout)

        def connect() -> httpx2.Response:
            response = self._http.send(request, stream=True)
            if not response.is_success:
                try:
                    response.read()
                finally:
                    response.close()
                raise HearthError.from_response(response)
            return response

        return VoiceStream(connect, reconnect=reconnect, backoff=backoff)

    voice.__doc__ = VOICE_DOC

    @overload
    def scaffold(
        self, platform: str, identity_id: str | None = None, text: Literal[False] = False
    ) -> dict[str, Any]: ...

    @overload
    def scaffold(self, platform: str, identity_id: str | None, text: Literal[True]) -> str: ...

    @overload
    def scaffold(
        self, platform: str, identity_id: str | None = None, *, text: Literal[True]
    ) -> str: ...

    def scaffold(
        self, platform: str, identity_id: str | None = None, text: bool = False
    ) -> dict[str, Any] | str:
        """The credential install script for ``platform`` (``linux``, ``macos``,
        ``windows``): JSON by default, the raw script with ``text=True``."""
        return self._scaffold(platform, identity_id, text)

    # -- an identity's life, out of the service (many calls, not one: see export.py) --

    def export_life(
        self,
        out: BinaryIO,
        *,
        keys: IdentityKeys,
        identity_id: str,
        did: str,
        chunk_size: int = 1 << 20,
        on_progress: Callable[[str, int], None] | None = None,
    ) -> Exported:
        """Write the identity's whole life to ``out`` (a seekable binary file) as one CAR v1:
        each data set an ADDS object signed by ``keys.signing`` (the root key) and granted to
        ``keys.box``, under one head, the CAR's root (docs/export.md). Read page by page and
        streamed: memory stays bounded. ``on_progress(data set, bytes so far)``."""
        from .export import export_life  # noqa: PLC0415 (the ADDS stack, only when used)

        return export_life(
            self,
            out,
            keys=keys,
            identity_id=identity_id,
            did=did,
            chunk_size=chunk_size,
            on_progress=on_progress,
        )
