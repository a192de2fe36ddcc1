"""What the edge's text rule (``edge_text``, applied by ``edge_guard``) costs a request.

Run ``.venv/bin/python bench/edge_text.py``. It is a measurement, not a test: it prints the
figures and exits 0.

1. The app-wide dependency alone, on a request whose body the framework has already read and
   decoded (as it has by the time the dependency runs): a GET with a query, and JSON bodies of
   1 KiB, 64 KiB and 1 MiB, ASCII and not, beside the ``json.loads`` of the same bytes that the
   framework paid before it. A body with a ``\\u0000``-like escape is walked: shown apart.
2. A whole request through the service in process (ASGI, no socket), ``GET /v1/welcome`` and a
   refused ``POST /v1/keys`` with no bearer, with the rule in place and with it replaced by a
   dependency that does nothing: the difference is the rule's share of a request.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx2
from starlette.requests import Request

from hearth.server import edge_guard
from hearth.server.app import create_app
from hearth.server.settings import Settings


class _Route:
    body_field = object()  # a route with a body model, as FastAPI's APIRoute has


def _request(body: bytes, query: bytes = b"") -> Request:
    scope = {
        "type": "http",
        "method": "POST" if body else "GET",
        "path": "/v1/x",
        "query_string": query,
        "headers": [(b"content-type", b"application/json")] if body else [],
        "path_params": {"id": "01a20fcd-ee4a-7ea4-a0d4-ed20f660e4d2"},
        "route": _Route(),
    }
    request = Request(scope)
    request._body = body  # what the framework read, and (below) decoded, before the dependency
    if body:
        request._json = json.loads(body)
    return request


def _per_call(fn: Callable[[], Awaitable[Any]] | Callable[[], Any], rounds: int) -> float:
    """Median microseconds per call over five runs of ``rounds`` calls."""

    async def run() -> list[float]:
        times = []
        for _ in range(5):
            started = time.perf_counter()
            for _ in range(rounds):
                result = fn()
                if asyncio.iscoroutine(result):
                    await result
            times.append((time.perf_counter() - started) / rounds * 1e6)
        return times

    return statistics.median(asyncio.run(run()))


def _document(size: int, text: str) -> bytes:
    item = {"name": text, "tier": "episodic", "count": 12, "tags": ["a", "b"], "ok": True}
    items = []
    while len(json.dumps(items).encode()) < size:
        items.append(item)
    return json.dumps({"items": items}, ensure_ascii=False).encode()


def dependency_alone() -> None:
    print("1. the dependency alone (us per request), beside json.loads of the same body")
    get = _request(b"", b"cursor=abc&limit=50&identity_id=01a20fcd")
    alone = _per_call(lambda: edge_guard.refuse_unstorable(get), 20_000)
    print(f"   GET with 3 query items: {alone:8.2f}")
    for label, size, text in [
        ("1 KiB ASCII", 1024, "plain text"),
        ("64 KiB ASCII", 65_536, "plain text"),
        ("1 MiB ASCII", 1_048_576, "plain text"),
        ("1 MiB non-ASCII", 1_048_576, "ünïcödé 😀"),
    ]:
        body = _document(size, text)
        request = _request(body)
        rounds = max(20, 2_000_000 // len(body))
        rule = _per_call(lambda r=request: edge_guard.refuse_unstorable(r), rounds)
        parse = _per_call(lambda b=body: json.loads(b), rounds)
        print(f"   {label:16} rule {rule:9.2f}   json.loads {parse:9.2f}   {rule / parse:6.1%}")
    # The worst ordinary body: text holding a literal backslash-u0000 (written \\u0000 in JSON)
    # matches the byte scan, so the whole value is walked and found storable.
    literal = _request(_document(65_536, "C:\\u0000 is a path"))
    walked = _per_call(lambda: edge_guard.refuse_unstorable(literal), 200)
    print(f"   64 KiB walked (literal \\u0000 text): {walked:9.2f}")


def whole_requests() -> None:
    print("2. whole requests in process (us per request, median of 5 x 2000)")
    real = edge_guard.refuse_unstorable

    async def nothing(_connection: Any) -> None:
        return None

    for label, guard in [("with the rule", real), ("with a no-op", nothing)]:
        edge_guard.refuse_unstorable = guard  # type: ignore[assignment]
        try:
            print(f"   {label}: {_through_app()}")
        finally:
            edge_guard.refuse_unstorable = real


def _through_app() -> str:
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(
            database_url=f"sqlite+aiosqlite:///{Path(tmp)}/bench.sqlite3",
            log_level="warning",
            blocks_dir=Path(tmp) / "blocks",
            packages_dir=Path(tmp) / "dist",
        )
        app = create_app(settings)

        async def run() -> str:
            async with app.router.lifespan_context(app):
                transport = httpx2.ASGITransport(app=app)
                async with httpx2.AsyncClient(transport=transport, base_url="http://t") as client:
                    figures = []
                    for method, path, body in [
                        ("GET", "/v1/welcome", None),
                        ("POST", "/v1/keys", {"name": "bench"}),
                    ]:
                        times = []
                        for _ in range(5):
                            started = time.perf_counter()
                            for _ in range(2000):
                                await client.request(method, path, json=body)
                            times.append((time.perf_counter() - started) / 2000 * 1e6)
                        figures.append(f"{method} {path} {statistics.median(times):8.1f}")
                    return "   ".join(figures)

        return asyncio.run(run())


if __name__ == "__main__":
    dependency_alone()
    whole_requests()
