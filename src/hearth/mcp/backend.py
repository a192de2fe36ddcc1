"""What the MCP server needs from a transport's side: ``Backend``, one async method per thing it
asks the service. ``hearth mcp`` implements it with the SDK (``hearth.mcp.stdio``), the service's
``/mcp`` with its own functions (``hearth.server.mcp_http``); ``hearth.mcp.dispatch`` turns MCP
requests into these calls. Answers are the service's JSON (mappings), as its routes answer.

A refusal is raised as :class:`Refused` with the service's own status, code and message.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, Protocol, runtime_checkable

__all__ = ["Backend", "Json", "LocalFiles", "Refused"]

Json = Mapping[str, Any]


class Refused(Exception):
    """The service said no: its status, error code, message and hint."""

    def __init__(self, status: int, error: str, message: str, hint: str | None = None) -> None:
        super().__init__(f"{error} (HTTP {status}): {message}")
        self.status = status
        self.error = error
        self.message = message
        self.hint = hint


class Backend(Protocol):
    """One identity's (or, over HTTP, one bearer's) view of the service."""

    @property
    def root(self) -> bool:
        """Whether root-signed tools can run (the identity's root key is open here)."""
        ...

    async def whoami(self) -> dict[str, Any]: ...

    async def memory_store(
        self,
        content: str,
        *,
        key: str | None,
        tier: str | None,
        untrusted: bool,
        project_level: bool,
    ) -> Json: ...

    async def memory_search(
        self,
        q: str,
        *,
        identity_id: str | None,
        tier: str | None,
        key: str | None,
        limit: int,
    ) -> Sequence[Json]: ...

    async def memory_read(self, memory_id: str) -> Json: ...

    async def memory_supersede(self, memory_id: str, content: str, *, untrusted: bool) -> Json: ...

    async def memory_elevate(self, memory_id: str) -> Json: ...

    async def chronicle(
        self, *, kind: str | None, identity_id: str | None, limit: int
    ) -> Sequence[Json]: ...

    async def chronicle_write(self, kind: str, text: str, *, project_level: bool) -> Json: ...

    async def inbox_send(self, body: str, *, sender: str, identity_id: str | None) -> Json: ...

    async def inbox_read(
        self, *, identity_id: str | None, status: str | None, limit: int
    ) -> Sequence[Json]: ...

    async def runtimes(self, *, identity_id: str | None) -> Sequence[Json]: ...

    async def runtime(self, runtime_id: str) -> Json: ...

    async def wallets(self) -> Sequence[Json]: ...

    async def wake(self, format: Literal["md", "json"]) -> str:
        """The wake's body exactly as ``GET /v1/wake?format=`` answers it."""
        ...

    async def expression(self) -> Json: ...


@runtime_checkable
class LocalFiles(Protocol):
    """The ADDS tools' side of a backend that runs on the user's machine (``hearth mcp`` only):
    files read and written here, signed and opened with the identity's keys."""

    async def adds_publish(self, path: str, *, media_type: str | None) -> Json: ...

    async def adds_open(
        self, manifest_cid: str, grant_cid: str, path: str, *, overwrite: bool
    ) -> Json: ...
