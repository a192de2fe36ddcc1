"""AsyncHearthClient: the same surface as HearthClient (names and signatures, each call a
coroutine, each iter_* an async iterator), and the async client against the live service."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

import pytest

from hearth.client import AsyncHearthClient, HearthClient, HearthError, new_identity
from tests.support.live import POW_BITS

# What differs by nature, not by oversight: the context-manager protocol (``with`` and
# ``async with``).
_LIFECYCLE = {"__enter__", "__exit__", "__aenter__", "__aexit__"}


def _public(cls: type) -> dict[str, Any]:
    return {
        name: inspect.getattr_static(cls, name)
        for name in dir(cls)
        if not name.startswith("_") or name in _LIFECYCLE
    }


def _parameters(call: Any) -> list[tuple[str, Any, Any]]:
    return [(p.name, p.kind, p.default) for p in inspect.signature(call).parameters.values()]


def test_the_two_clients_have_the_same_surface() -> None:
    sync_names = set(_public(HearthClient)) - _LIFECYCLE
    async_names = set(_public(AsyncHearthClient)) - _LIFECYCLE
    assert sorted(sync_names ^ async_names) == []
    sync = HearthClient("http://h.test")
    aio = AsyncHearthClient("http://h.test")
    compared = 0
    for name in sorted(sync_names):
        sync_call, async_call = getattr(sync, name), getattr(aio, name)
        if not callable(sync_call) or isinstance(sync_call, type):
            assert type(sync_call) is type(async_call), name  # base_url, api_key
            continue
        assert _parameters(sync_call) == _parameters(async_call), name
        assert not inspect.iscoroutinefunction(sync_call), name
        if name.startswith("iter_"):
            assert inspect.isasyncgenfunction(async_call), name
            assert inspect.isgeneratorfunction(sync_call), name
        elif name in ("from_env", "from_home"):
            assert inspect.ismethod(async_call), name  # constructors, not calls
        else:
            assert inspect.iscoroutinefunction(async_call), name
        compared += 1
    assert compared > 80  # every call of every family, not an empty comparison
    assert {"iter_memories", "iter_thoughts", "iter_public_agents", "voice"} <= sync_names
    sync.close()
    asyncio.run(aio.close())
    held = AsyncHearthClient("http://h.test", api_key="bearer-never-shown")
    assert "bearer-never-shown" not in repr(held)
    assert repr(held) == "AsyncHearthClient(base_url='http://h.test', api_key=<set>)"
    asyncio.run(held.close())


def test_the_async_client_against_the_live_service(live_service: str) -> None:
    asyncio.run(_async_session(live_service))


async def _async_session(base_url: str) -> None:
    made = new_identity()
    async with AsyncHearthClient(base_url) as client:
        plans = await client.plans()
        assert plans.pow_difficulty_bits == POW_BITS
        me = await client.register(made.keys, "Ada")
        assert client.api_key == me.api_key
        authority = await client.authority(me.agent_id)
        assert authority.mode == "agent_root"

        voice = await client.voice(me.agent_id)
        async with voice:
            first = await anext(voice)
            assert first.event == "connected"
            # A root-proven call: the authority read, the proof and its sequence, all async.
            rooted = await client.memory_store(
                "The harbour at dawn.",
                tier="foundational",
                agent_id=me.agent_id,
                root_key=made.keys.signing,
            )
            assert rooted.tier == "foundational"
            change = await anext(voice)
            while change.event != "change":
                change = await anext(voice)
            assert change.kind == "memory_stored"

        stored = [await client.memory_store(f"note {n}", agent_id=me.agent_id) for n in range(4)]
        assert (await client.memory(stored[0].id)).content == "note 0"
        walked = [m.id async for m in client.iter_memories(agent_id=me.agent_id, limit=2)]
        listed = (await client.memories(agent_id=me.agent_id, limit=50)).items
        assert walked == [m.id for m in listed]
        assert {m.id for m in stored} | {rooted.id} <= set(walked)
        searched = [h.memory.id async for h in client.iter_memory_search("note", limit=2)]
        assert set(searched) == {m.id for m in stored}
        best = (await client.memory_search('"note 2"')).items
        assert [h.memory.id for h in best] == [stored[2].id]

        markdown = await client.wake("md", refresh=True)
        assert "note 3" in markdown
        document = await client.wake(refresh=True)
        assert document["focus"]["identity_id"] == me.agent_id

        with pytest.raises(HearthError) as refused:
            await client.memory("00000000-0000-0000-0000-000000000000")
        assert refused.value.status == 404


def test_iterators_walk_every_page(live_service: str) -> None:
    made = new_identity()
    with HearthClient(live_service) as client:
        me = client.register(made.keys, "Ada")
        for n in range(5):
            client.memory_store(f"note {n}", agent_id=me.agent_id)
        pages = []
        page = client.memories(limit=2)
        pages.append(page)
        while page.next_cursor:
            page = client.memories(limit=2, cursor=page.next_cursor)
            pages.append(page)
        assert len(pages) >= 3
        expected = [m.id for p in pages for m in p.items]
        assert [m.id for m in client.iter_memories(limit=2)] == expected
        # Starting from a known cursor resumes there.
        resumed = [m.id for m in client.iter_memories(limit=2, cursor=pages[1].next_cursor)]
        assert resumed == [m.id for p in pages[2:] for m in p.items]
        for memory_id in expected[:3]:
            client.memory_delete(memory_id)  # each deletion is chronicled
        entries = [e.id for e in client.iter_chronicle(limit=2)]
        assert len(entries) >= 3
        assert entries == [e.id for e in client.chronicle(limit=50).items]
