"""``/mcp``: hearth's MCP server on the service, Streamable HTTP (docs/mcp.md).

The endpoint is the official SDK's session manager in stateless mode, answering JSON: every
request stands alone, so any worker of a multi-worker service can take any request and nothing
is kept between them. In front of it, :class:`McpEndpoint` checks the project bearer in the
``Authorization`` header (401 with ``WWW-Authenticate`` otherwise, in the service's error
shape), and the request's tools run as :class:`ServiceBackend` for that bearer's project: the
service's own functions, called as the routes call them, never through the SDK or HTTP.

Writes here are what the routes' writes are: a memory is stored with the channel ``mcp``, and
each write publishes its change on the event bus (``memory_stored``, ``inbox_message_arrived``),
as the change feed does for the routes, so the wake's cache and the voice see it at once.
Only the tools that need the bearer alone are offered: a foundational memory of an
``agent_root`` identity needs a root proof of the exact request, which no MCP request carries,
and is refused as ``POST /v1/memories`` refuses it without one (428).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from contextvars import ContextVar
from typing import Any, Literal

from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from sqlalchemy import Connection
from starlette.types import Receive, Scope, Send

from hearth.mcp.backend import Backend, Json, Refused
from hearth.mcp.dispatch import build_server

from .auth import Caller, caller_of
from .canon import CHRONICLE_KINDS
from .context import Hearth
from .db.engine import utcnow
from .db.rows import IdentityRow, MemoryRow
from .edge_text import find_unstorable
from .error_handlers import response_of
from .errors import ApiError, unauthorized
from .events import Change
from .json_types import JsonObject
from .services import (
    authority,
    chronicle,
    cursors,
    identities,
    inbox,
    memories,
    memory_search,
    wake_cache,
    wallets,
)
from .services.authority import RootGrant, SignedRequest
from .services.runtimes import records as runtime_records
from .services.times import iso
from .services.wake_render import render

__all__ = ["PATH", "McpEndpoint", "ServiceBackend"]

PATH = "/mcp"

_BACKEND: ContextVar[Backend] = ContextVar("hearth_mcp_backend")


def _refused(exc: ApiError) -> Refused:
    return Refused(exc.status, exc.error, exc.message, exc.hint)


def _storable(**texts: str | None) -> None:
    """The edge's rule for text no database can store, applied to the tool's arguments."""
    found = find_unstorable({k: v for k, v in texts.items() if v is not None}, ("arguments",))
    if found is not None:
        raise _refused(found.refusal())


class ServiceBackend:
    """:class:`~hearth.mcp.backend.Backend` over the service's functions, for one bearer. Its
    identity is the project's sole active identity (as the wake chooses one), or none."""

    root = False

    def __init__(self, hearth: Hearth, caller: Caller) -> None:
        self._hearth = hearth
        self._caller = caller

    @property
    def _project(self) -> str:
        return self._caller.project_id

    async def _snapshot(self, fn: Any, *args: Any) -> Any:
        try:
            return await self._hearth.db.snapshot(fn, *args)
        except ApiError as exc:
            raise _refused(exc) from None

    async def _transaction(self, fn: Any, *args: Any) -> Any:
        try:
            return await self._hearth.db.transaction(fn, *args)
        except ApiError as exc:
            raise _refused(exc) from None

    async def _publish(self, identity_id: str | None, key: str, kind: str, ids: JsonObject) -> None:
        """The change as the change feed builds it for the same route (server/changes.py)."""
        at = iso(utcnow())
        assert at is not None
        details: JsonObject = {"identity_id": identity_id, **ids}
        await self._hearth.events.publish(
            Change(self._project, identity_id, key, kind, details, at)
        )

    async def whoami(self) -> JsonObject:
        identity = await self._snapshot(identities.sole_active, self._project)
        return {
            "identity_id": identity.id if identity else None,
            "did": identity.did if identity else None,
            "name": identity.name if identity else None,
            "project_id": self._project,
            "api_key_id": self._caller.key_id,
            "transport": "streamable-http",
            "root_signing": False,
        }

    async def memory_store(
        self,
        content: str,
        *,
        key: str | None,
        tier: str | None,
        untrusted: bool,
        project_level: bool,
    ) -> Json:
        _storable(content=content, key=key)
        return await self._store(
            content,
            tier=tier or "episodic",
            key=key,
            untrusted=untrusted,
            project_level=project_level,
            supersedes=None,
        )

    async def _store(
        self,
        content: str,
        *,
        tier: str,
        key: str | None,
        untrusted: bool,
        project_level: bool,
        supersedes: str | None,
    ) -> Json:
        project_id = self._project
        refusal = memories.storing_refused(tier)
        if refusal is not None:
            raise _refused(
                await chronicle.record_refusal(
                    self._hearth.db,
                    refusal,
                    project_id=project_id,
                    identity_id=None,
                    text="Refused to store a constitutive memory",
                    route="MCP memory_store",
                    tier=tier,
                )
            )

        def run(conn: Connection) -> MemoryRow:
            old = memories.find(conn, project_id, supersedes) if supersedes else None
            if old is not None:
                identity = memories.identity_of(conn, old)
            elif project_level:
                identity = None
            else:
                identity = identities.sole_active(conn, project_id)
            grant = _bearer_only_grant(identity, tier, old)
            return memories.store(
                conn,
                project_id,
                identity,
                content=content,
                tier=tier,
                key=key,
                grant=grant,
                provenance=memories.Provenance(
                    "mcp", api_key_id=self._caller.key_id, untrusted=untrusted
                ),
                supersedes=old,
            )

        row: MemoryRow = await self._transaction(run)
        if self._hearth.semantic is not None:  # found by meaning at once, as POST /v1/memories
            await self._hearth.semantic.embed([(row.id, row.content)])
        view = memories.view(row, row.created_at)
        await self._publish(
            row.identity_id,
            "you_remember",
            "memory_stored",
            {"memory_id": row.id, "tier": row.tier, "supersedes": row.supersedes},
        )
        return view

    async def memory_search(
        self,
        q: str,
        *,
        identity_id: str | None,
        tier: str | None,
        key: str | None,
        limit: int,
    ) -> Sequence[Json]:
        _storable(q=q, identity_id=identity_id, key=key)
        project_id = self._project
        semantic = self._hearth.semantic
        meaning = await semantic.meaning(project_id, q) if semantic is not None else None

        def run(conn: Connection) -> cursors.Page:
            found = identities.find(conn, project_id, identity_id).id if identity_id else None
            return memory_search.search(
                conn,
                project_id,
                q,
                identity_id=found,
                tier=tier,
                key=key,
                since=None,
                until=None,
                as_of=None,
                cursor=None,
                limit=limit,
                meaning=meaning,
            )

        page: cursors.Page = await self._snapshot(run)
        return _items(page.body())

    async def memory_read(self, memory_id: str) -> Json:
        _storable(id=memory_id)
        return await self._snapshot(memories.read, self._project, memory_id)  # type: ignore[no-any-return]

    async def memory_supersede(self, memory_id: str, content: str, *, untrusted: bool) -> Json:
        _storable(id=memory_id, content=content)
        old: MemoryRow = await self._snapshot(memories.find, self._project, memory_id)
        return await self._store(
            content,
            # As POST /v1/memories with `supersedes` and no tier (and as hearth mcp sends it):
            # the new version is episodic; replacing an elevated one needs the root proof.
            tier="episodic",
            key=old.key,
            untrusted=untrusted,
            project_level=old.identity_id is None,
            supersedes=memory_id,
        )

    async def memory_elevate(self, memory_id: str) -> Json:
        # Never offered here (catalogue.tools_for): an elevation is signed with the root key,
        # which stays on the identity's machine (hearth mcp signs it there).
        raise Refused(
            428,
            "authority_proof_required",
            f"Elevating {memory_id} needs the identity's root key to sign the exact request: "
            "use hearth mcp on the identity's machine.",
        )

    async def chronicle(
        self, *, kind: str | None, identity_id: str | None, limit: int
    ) -> Sequence[Json]:
        _storable(kind=kind, identity_id=identity_id)
        if kind is not None and kind not in CHRONICLE_KINDS:
            raise Refused(422, "validation_error", f"kind is one of {', '.join(CHRONICLE_KINDS)}.")
        project_id = self._project

        def run(conn: Connection) -> cursors.Page:
            found = identities.find(conn, project_id, identity_id).id if identity_id else None
            return chronicle.entries(
                conn,
                project_id,
                kind=kind,
                identity_id=found,
                cursor=None,
                limit=limit,
            )

        page: cursors.Page = await self._snapshot(run)
        return _items(page.body())

    async def chronicle_write(self, kind: str, text: str, *, project_level: bool) -> Json:
        _storable(kind=kind, text=text)
        project_id = self._project

        def run(conn: Connection) -> JsonObject:
            identity = None if project_level else identities.sole_active(conn, project_id)
            return chronicle.write(
                conn,
                project_id,
                identity.id if identity else None,
                kind,
                text,
                details=None,
                channel="mcp",
                api_key_id=self._caller.key_id,
            )

        entry: JsonObject = await self._transaction(run)
        await self._publish(
            entry["agent_id"],
            "you_remember",
            "chronicle_written",
            {"entry_id": entry["id"], "kind": entry["kind"]},
        )
        return entry

    async def _target(self, identity_id: str | None) -> str:
        if identity_id is not None:
            return identity_id
        identity = await self._snapshot(identities.sole_active, self._project)
        if identity is None:
            raise Refused(
                422,
                "identity_required",
                "The project has no sole active identity: give identity_id.",
            )
        return str(identity.id)

    async def inbox_send(self, body: str, *, sender: str, identity_id: str | None) -> Json:
        _storable(body=body, sender=sender, identity_id=identity_id)
        target = await self._target(identity_id)
        message: JsonObject = await self._transaction(_post, self._project, target, sender, body)
        await self._publish(
            message["identity_id"],
            "you_run",
            "inbox_message_arrived",
            {"message_id": message["id"], "sender": message["sender"]},
        )
        return message

    async def inbox_read(
        self, *, identity_id: str | None, status: str | None, limit: int
    ) -> Sequence[Json]:
        _storable(identity_id=identity_id)
        target = await self._target(identity_id)
        page: cursors.Page = await self._snapshot(_inbox_page, self._project, target, status, limit)
        return _items(page.body())

    async def runtimes(self, *, identity_id: str | None) -> Sequence[Json]:
        _storable(identity_id=identity_id)
        page: cursors.Page = await self._snapshot(_runtime_page, self._project, identity_id)
        return _items(page.body())

    async def runtime(self, runtime_id: str) -> Json:
        _storable(id=runtime_id)
        return await self._snapshot(runtime_records.read, self._project, runtime_id)  # type: ignore[no-any-return]

    async def wallets(self) -> Sequence[Json]:
        return await self._snapshot(wallets.project_wallets, self._project)  # type: ignore[no-any-return]

    async def wake(self, format: Literal["md", "json"]) -> str:
        """As ``GET /v1/wake?format=`` answers it, through the same cache."""
        key = (self._project, None, format)
        answer = await self._snapshot(_read_wake, key)
        if answer.cached is not None:
            cached: bytes = answer.cached.body
            return cached.decode("utf-8")
        document = answer.document
        body, media_type = render(document, format)
        wake_cache.CACHE.put(key, body, media_type, document["generated_at"], stamp=answer.stamp)
        return body.decode("utf-8")

    async def expression(self) -> Json:
        identity_id = await self._target(None)

        def run(conn: Connection) -> JsonObject:
            return memories.shaping(conn, identities.find(conn, self._project, identity_id))

        return await self._snapshot(run)  # type: ignore[no-any-return]


def _bearer_only_grant(
    identity: IdentityRow | None, tier: str, old: MemoryRow | None
) -> RootGrant | None:
    """What ``POST /v1/memories`` asks of a store with no proof headers: nothing for an
    episodic memory, else the identity's proof (an ``agent_root`` identity refuses with 428,
    ``authority_required``, naming the sequence a signer would use)."""
    unmakes = old is not None and old.tier != "episodic"
    if identity is None or not (tier == "foundational" or unmakes):
        return None
    unsigned = SignedRequest(method="POST", target="/v1/memories", body=b"", headers={})
    return authority.authorize(identity, unsigned, freshness_ms=0)


def _read_wake(conn: Connection, key: wake_cache.CacheKey) -> wake_cache.Answer:
    return wake_cache.read_or_build(conn, key, refresh=False)


def _post(conn: Connection, project_id: str, target: str, sender: str, body: str) -> JsonObject:
    return inbox.post(conn, project_id, target, sender=sender, body=body)


def _inbox_page(
    conn: Connection, project_id: str, target: str, status: str | None, limit: int
) -> cursors.Page:
    return inbox.listing(conn, project_id, target, status=status, cursor=None, limit=limit)


def _runtime_page(conn: Connection, project_id: str, identity_id: str | None) -> cursors.Page:
    return runtime_records.listing(conn, project_id, identity_ref=identity_id, limit=200)


def _items(body: Mapping[str, Any]) -> list[Json]:
    items = body.get("items")
    return [item for item in items if isinstance(item, Mapping)] if isinstance(items, list) else []


class McpEndpoint:
    """The ASGI app at ``/mcp``: the bearer checked, then the SDK's stateless transport."""

    def __init__(self, hearth: Hearth) -> None:
        self._hearth = hearth
        self._server = build_server(_BACKEND.get, "http")
        self._manager = StreamableHTTPSessionManager(
            app=self._server, stateless=True, json_response=True
        )

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The transport's task group, for as long as the app runs (its lifespan)."""
        async with self._manager.run():
            yield

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        try:
            caller = await self._hearth.db.snapshot(caller_of, _bearer(scope))
        except ApiError as exc:
            await response_of(exc)(scope, receive, send)
            return
        token = _BACKEND.set(ServiceBackend(self._hearth, caller))
        try:
            await self._manager.handle_request(scope, receive, send)
        finally:
            _BACKEND.reset(token)


def _bearer(scope: Scope) -> str:
    headers: dict[bytes, bytes] = dict(scope.get("headers") or ())
    header = headers.get(b"authorization", b"").decode("latin-1")
    scheme, _, bearer = header.partition(" ")
    if scheme.lower() != "bearer" or not bearer.strip():
        raise unauthorized()
    return bearer.strip()
