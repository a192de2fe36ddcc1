"""The clients' only retry: a GET that fails on the way is tried again (at most three times in
all); a POST (or any other method) is sent once, whatever happens to it (wall 2)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import httpx2
import pytest

from hearth.client import AsyncHearthClient, HearthClient
from hearth.client import calls as calls_module
from hearth.client.calls import GET_ATTEMPTS

Handler = Callable[[httpx2.Request], httpx2.Response]


@pytest.fixture(autouse=True)
def no_pauses(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(calls_module, "_PAUSE", 0.0)


def failing(seen: list[str], *, failures: int) -> Handler:
    """Refuses the first ``failures`` connections, then answers a plans document."""

    def handle(request: httpx2.Request) -> httpx2.Response:
        seen.append(f"{request.method} {request.url.path}")
        if len(seen) <= failures:
            raise httpx2.ConnectError("connection refused", request=request)
        return httpx2.Response(200, json={"no_exploit_loophole": {"pow_difficulty_bits": 8}})

    return handle


def test_a_get_is_retried_on_connection_errors_then_gives_up() -> None:
    seen: list[str] = []
    transport = httpx2.MockTransport(failing(seen, failures=2))
    with HearthClient("http://h.test", transport=transport) as client:
        assert client.plans().pow_difficulty_bits == 8
    assert seen == ["GET /public/plans"] * 3

    seen.clear()
    transport = httpx2.MockTransport(failing(seen, failures=GET_ATTEMPTS))
    client = HearthClient("http://h.test", transport=transport)
    with client, pytest.raises(httpx2.ConnectError):
        client.plans()
    assert seen == ["GET /public/plans"] * GET_ATTEMPTS


def test_a_post_is_never_retried() -> None:
    seen: list[str] = []
    transport = httpx2.MockTransport(failing(seen, failures=1))
    client = HearthClient("http://h.test", api_key="k", transport=transport)
    with client, pytest.raises(httpx2.ConnectError):
        client.memory_store("spend nothing twice")
    assert seen == ["POST /v1/memories"]


def test_a_read_timeout_is_not_retried() -> None:
    """The service is slow, not gone: retrying would only multiply the wait."""
    seen: list[str] = []

    def slow(request: httpx2.Request) -> httpx2.Response:
        seen.append(request.method)
        raise httpx2.ReadTimeout("slow", request=request)

    client = HearthClient("http://h.test", transport=httpx2.MockTransport(slow))
    with client, pytest.raises(httpx2.ReadTimeout):
        client.plans()
    assert seen == ["GET"]


def test_the_async_client_retries_the_same_way() -> None:
    async def session() -> None:
        seen: list[str] = []
        transport = httpx2.MockTransport(failing(seen, failures=2))
        async with AsyncHearthClient("http://h.test", api_key="k", transport=transport) as c:
            assert (await c.plans()).pow_difficulty_bits == 8
            assert seen == ["GET /public/plans"] * 3
            seen.clear()
            with pytest.raises(httpx2.ConnectError):
                await c.memory_store("spend nothing twice")
            seen_post = list(seen)
        assert seen_post == ["POST /v1/memories"]

    asyncio.run(session())
