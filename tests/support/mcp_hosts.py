"""MCP hosts for the tests: the official ``mcp`` client speaking to a real ``hearth mcp``
subprocess over stdio, or to the live service's ``/mcp`` over Streamable HTTP.

The stdio server is started by the SDK's own stdio transport, which ends the process when the
session's block ends (the suite's process guard checks that none outlives it).
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult

HEARTH = str(Path(sys.executable).parent / "hearth")


def stdio_parameters(
    home: Path | None, *, passphrase_file: Path | None = None, env: dict[str, str] | None = None
) -> StdioServerParameters:
    """``hearth mcp --home HOME`` (no ``--home`` when None: configured from ``env``), in an
    environment with none of the suite's own HEARTH_* or SERVICE_* settings (only what ``env``
    adds)."""
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("HEARTH_", "SERVICE_")) and k != "PROMETHEUS_MULTIPROC_DIR"
    }
    args = ["mcp"] if home is None else ["mcp", "--home", str(home)]
    if passphrase_file is not None:
        args += ["--passphrase-file", str(passphrase_file)]
    return StdioServerParameters(command=HEARTH, args=args, env={**base, **(env or {})})


@asynccontextmanager
async def stdio_session(
    home: Path | None, *, passphrase_file: Path | None = None, env: dict[str, str] | None = None
) -> AsyncIterator[Client]:
    parameters = stdio_parameters(home, passphrase_file=passphrase_file, env=env)
    async with Client(parameters, read_timeout_seconds=60) as client:
        yield client


@asynccontextmanager
async def http_session(base_url: str, bearer: str) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {bearer}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        Client(streamable_http_client(f"{base_url}/mcp", http_client=http)) as client,
    ):
        yield client


def text_of(result: CallToolResult) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


def structured(result: CallToolResult) -> dict[str, Any]:
    assert result.structured_content is not None, text_of(result)
    return dict(result.structured_content)


async def call_ok(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A tool call that must succeed: its structured content."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, text_of(result)
    return structured(result)
