"""The memory server that does not lose anything: two ``hearth mcp`` processes and the service's
``/mcp`` store 1,000 memories at once, and exactly those 1,000 are stored (none lost, none
twice), each recorded as written through MCP."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from hearth.client import HearthClient
from tests.support.cli_homes import home_with_identity
from tests.support.live import live_on
from tests.support.mcp_hosts import call_ok, http_session, stdio_session

TOTAL = 1_000
# Calls in flight per host at once: enough to interleave the three writers on the service.
IN_FLIGHT = 8


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_three_hosts_store_a_thousand_memories_and_all_are_kept(kind: str, tmp_path: Path) -> None:
    with live_on(kind, tmp_path / "service") as live:
        (tmp_path / "me").mkdir()
        home, _profile = home_with_identity(live, tmp_path / "me", "Swift")
        bearer = (home / "api_key").read_text().strip()
        contents = [f"memory {i:04d} of the flock" for i in range(TOTAL)]
        shares = [contents[0::3], contents[1::3], contents[2::3]]

        async def store(session: Any, share: list[str]) -> list[str]:
            gate = asyncio.Semaphore(IN_FLIGHT)

            async def one(client: Any, content: str) -> str:
                async with gate:
                    stored = await call_ok(client, "memory_store", {"content": content})
                    return str(stored["memory"]["id"])

            async with session as client:
                return list(await asyncio.gather(*(one(client, c) for c in share)))

        async def all_at_once() -> list[list[str]]:
            return list(
                await asyncio.gather(
                    store(stdio_session(home), shares[0]),
                    store(stdio_session(home), shares[1]),
                    store(http_session(live.base_url, bearer), shares[2]),
                )
            )

        answered = [i for ids in asyncio.run(all_at_once()) for i in ids]
        with HearthClient(live.base_url, api_key=bearer) as sdk:
            kept = list(sdk.iter_memories(channel="mcp", limit=200))

    assert len(answered) == len(set(answered)) == TOTAL
    assert sorted(m.id for m in kept) == sorted(answered)
    counted = Counter(m.content for m in kept)
    assert set(counted) == set(contents)
    assert set(counted.values()) == {1}
