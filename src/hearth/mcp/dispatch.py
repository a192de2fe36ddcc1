"""The MCP server itself, for either transport: the official SDK's low-level ``Server`` whose
handlers list the catalogue and turn each tool call, resource read and prompt into calls of a
:class:`~hearth.mcp.backend.Backend`, shaped by :mod:`hearth.mcp.shaping`.

``backend_of`` gives the backend of the request being served: one for ``hearth mcp``, the
bearer's for each request on the service's ``/mcp``.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any, Final

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from hearth import __version__

from . import shaping
from .backend import Backend, LocalFiles, Refused
from .catalogue import (
    CHRONICLE_URI,
    EXPRESSION_URI,
    PROMPTS,
    RESOURCE_TEMPLATES,
    RESOURCES,
    SERVER_INSTRUCTIONS,
    WAKE_URI,
    InvalidArguments,
    ToolSpec,
    Transport,
    check_arguments,
    memory_id_of,
    tools_for,
)

__all__ = ["RESOURCE_NOT_FOUND", "build_server"]

# The MCP specification's code for a resource that does not exist.
RESOURCE_NOT_FOUND: Final = -32002

Context = ServerRequestContext[Any]
Handler = Callable[[Backend, dict[str, Any]], Awaitable[types.CallToolResult]]


async def _whoami(backend: Backend, _args: dict[str, Any]) -> types.CallToolResult:
    return shaping.whoami_result(await backend.whoami())


async def _store(backend: Backend, args: dict[str, Any]) -> types.CallToolResult:
    memory = await backend.memory_store(
        args["content"],
        key=args.get("key"),
        tier=args.get("tier"),
        untrusted=args["untrusted"],
        project_level=args["project_level"],
    )
    return shaping.memory_result(memory, "stored")


async def _search(backend: Backend, args: dict[str, Any]) -> types.CallToolResult:
    hits = await backend.memory_search(
        args["q"],
        identity_id=args.get("identity_id"),
        tier=args.get("tier"),
        key=args.get("key"),
        limit=args["limit"],
    )
    return shaping.search_result(args["q"], hits)


async def _read(backend: Backend, args: dict[str, Any]) -> types.CallToolResult:
    return shaping.memory_result(await backend.memory_read(args["id"]))


async def _supersede(backend: Backend, args: dict[str, Any]) -> types.CallToolResult:
    memory = await backend.memory_supersede(
        args["id"], args["content"], untrusted=args["untrusted"]
    )
    return shaping.memory_result(memory, "stored")


async def _elevate(backend: Backend, args: dict[str, Any]) -> types.CallToolResult:
    return shaping.memory_result(await backend.memory_elevate(args["id"]), "elevated")


async def _chronicle(backend: Backend, args: dict[str, Any]) -> types.CallToolResult:
    entries = await backend.chronicle(
        kind=args.get("kind"), identity_id=args.get("identity_id"), limit=args["limit"]
    )
    return shaping.chronicle_result(entries)


async def _write(backend: Backend, args: dict[str, Any]) -> types.CallToolResult:
    entry = await backend.chronicle_write(
        args["kind"], args["text"], project_level=args["project_level"]
    )
    return shaping.entry_result(entry)


async def _send(backend: Backend, args: dict[str, Any]) -> types.CallToolResult:
    message = await backend.inbox_send(
        args["body"], sender=args["sender"], identity_id=args.get("identity_id")
    )
    return shaping.sent_result(message)


async def _inbox(backend: Backend, args: dict[str, Any]) -> types.CallToolResult:
    messages = await backend.inbox_read(
        identity_id=args.get("identity_id"), status=args.get("status"), limit=args["limit"]
    )
    return shaping.inbox_result(messages)


async def _runtimes(backend: Backend, args: dict[str, Any]) -> types.CallToolResult:
    return shaping.runtimes_result(await backend.runtimes(identity_id=args.get("identity_id")))


async def _runtime(backend: Backend, args: dict[str, Any]) -> types.CallToolResult:
    return shaping.runtime_result(await backend.runtime(args["id"]))


async def _wallets(backend: Backend, _args: dict[str, Any]) -> types.CallToolResult:
    return shaping.wallets_result(await backend.wallets())


def _local(backend: Backend) -> LocalFiles:
    if not isinstance(backend, LocalFiles):  # the catalogue offers the tools on stdio only
        raise Refused(404, "unknown_tool", "No local file tools are offered here.")
    return backend


async def _publish(backend: Backend, args: dict[str, Any]) -> types.CallToolResult:
    published = await _local(backend).adds_publish(args["path"], media_type=args.get("media_type"))
    return shaping.published_result(published)


async def _open(backend: Backend, args: dict[str, Any]) -> types.CallToolResult:
    opened = await _local(backend).adds_open(
        args["manifest_cid"], args["grant_cid"], args["path"], overwrite=args["overwrite"]
    )
    return shaping.opened_result(opened)


HANDLERS: Final[dict[str, Handler]] = {
    "whoami": _whoami,
    "memory_store": _store,
    "memory_search": _search,
    "memory_read": _read,
    "memory_supersede": _supersede,
    "memory_elevate": _elevate,
    "chronicle_list": _chronicle,
    "chronicle_write": _write,
    "inbox_send": _send,
    "inbox_read": _inbox,
    "runtimes_list": _runtimes,
    "runtime_status": _runtime,
    "wallet_balance": _wallets,
    "adds_publish": _publish,
    "adds_open": _open,
}


def _json_text(uri: str, value: Any) -> types.TextResourceContents:
    text = json.dumps(value, ensure_ascii=False, indent=2)
    return types.TextResourceContents(uri=uri, mime_type="application/json", text=text)


ListenHandler = Callable[
    [Context, types.SubscriptionsListenRequestParams],
    Awaitable[types.SubscriptionsListenResult],
]


def build_server(
    backend_of: Callable[[], Backend],
    transport: Transport,
    *,
    listen: ListenHandler | None = None,
) -> Server[Any]:
    """The MCP server over ``backend_of()``'s backend; ``listen`` serves
    ``subscriptions/listen`` (resource updates) where the transport can hold a stream."""

    def offered() -> dict[str, ToolSpec]:
        return {spec.name: spec for spec in tools_for(transport, root=backend_of().root)}

    async def list_tools(
        _ctx: Context, _params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[spec.tool() for spec in offered().values()])

    async def call_tool(_ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult:
        spec = offered().get(params.name)
        if spec is None:
            return shaping.refused(404, "unknown_tool", f"No tool {params.name!r} is offered here.")
        try:
            arguments = check_arguments(spec, params.arguments)
            return await HANDLERS[spec.name](backend_of(), arguments)
        except InvalidArguments as exc:
            return shaping.refused(422, "invalid_arguments", str(exc))
        except Refused as exc:
            return shaping.refused(exc.status, exc.error, exc.message, exc.hint)

    async def list_resources(
        _ctx: Context, _params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=list(RESOURCES))

    async def list_templates(
        _ctx: Context, _params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=list(RESOURCE_TEMPLATES))

    async def read_resource(
        _ctx: Context, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        backend = backend_of()
        try:
            return types.ReadResourceResult(contents=await _read_resource(backend, uri))
        except Refused as exc:
            code = RESOURCE_NOT_FOUND if exc.status == 404 else types.INVALID_PARAMS
            raise MCPError(code, f"{exc.error}: {exc.message}", {"uri": uri}) from None

    async def list_prompts(
        _ctx: Context, _params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=list(PROMPTS))

    async def get_prompt(
        _ctx: Context, params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        if params.name != "wake":
            raise MCPError(types.INVALID_PARAMS, f"No prompt {params.name!r}.")
        try:
            wake = await backend_of().wake("md")
        except Refused as exc:
            raise MCPError(types.INVALID_PARAMS, f"{exc.error}: {exc.message}") from None
        return types.GetPromptResult(
            description="The wake, as the opening of a session.",
            messages=[
                types.PromptMessage(
                    role="user",
                    content=types.TextContent(
                        type="text",
                        text="This is your wake from hearth: who you are and what you "
                        "remember. Take it as your orientation for this session.\n\n" + wake,
                    ),
                )
            ],
        )

    return Server(
        "hearth",
        version=__version__,
        title="hearth",
        instructions=SERVER_INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
        on_subscriptions_listen=listen,
    )


async def _read_resource(
    backend: Backend, uri: str
) -> list[types.TextResourceContents | types.BlobResourceContents]:
    if uri == WAKE_URI:
        markdown = await backend.wake("md")
        document = await backend.wake("json")
        return [
            types.TextResourceContents(uri=uri, mime_type="text/markdown", text=markdown),
            types.TextResourceContents(uri=uri, mime_type="application/json", text=document),
        ]
    if uri == CHRONICLE_URI:
        entries = await backend.chronicle(kind=None, identity_id=None, limit=50)
        return [_json_text(uri, shaping.chronicle_result(entries).structured_content)]
    if uri == EXPRESSION_URI:
        return [_json_text(uri, dict(await backend.expression()))]
    memory_id = memory_id_of(uri)
    if memory_id is not None:
        return [_json_text(uri, shaping.memory_fields(await backend.memory_read(memory_id)))]
    raise MCPError(RESOURCE_NOT_FOUND, f"No resource {uri!r}.", {"uri": uri})
