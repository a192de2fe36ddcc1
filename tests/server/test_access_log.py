"""The access log (docs/service.md, "Request ids and the access log"): `hearth serve` writes one
JSON line per request with its request id, method, route template, status and duration, and
nothing the request carried; uvicorn's own lines are the same JSON.

The log is read from the standard error of a real `hearth serve` process. No database is
involved in what is checked, so SQLite alone serves.
"""

from __future__ import annotations

import asyncio
import json
import socket
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from tests.support.live import free_port, live_service, sqlite_settings
from tests.support.served import Served, hearth_serve, serve_env

BEARER_SECRET = "hk_bearer-secret-0f9e8d7c6b5a"
QUERY_SECRET = "query-secret-1a2b3c4d"
PATH_ID = "path-id-5e6f7a8b"


@contextmanager
def logging_server(tmp: Path) -> Iterator[Served]:
    """``hearth serve`` logging at info, in JSON. It counts as up once uvicorn says so in the
    log: a readiness probe would add access lines of its own."""
    port = free_port()
    env = serve_env(
        tmp,
        f"sqlite:///{tmp}/hearth.sqlite3",
        port,
        LOG_LEVEL="info",
        LOG_FORMAT="json",
        MAX_BODY_BYTES="2048",
    )

    def started(served: Served) -> bool:
        return any("Application startup complete" in line for line in served.lines())

    with hearth_serve(tmp, env, port, ready=started) as served:
        yield served


def access_lines(records: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    by_id: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        if record.get("event") == "request":
            by_id.setdefault(record["request_id"], []).append(record)
    return by_id


def test_one_json_access_line_per_request_with_its_id_and_no_secret(tmp_path: Path) -> None:
    secret_headers = {"Authorization": f"Bearer {BEARER_SECRET}"}
    sent: dict[str, tuple[str, str | None, int]] = {}  # request id -> (method, route, status)
    with logging_server(tmp_path) as served, httpx2.Client(base_url=served.base_url) as client:
        # The caller's id is taken, echoed and logged.
        rid = str(uuid.uuid4())
        response = client.get(
            f"/v1/welcome?api_key={QUERY_SECRET}",
            headers={**secret_headers, "X-Request-Id": rid},
        )
        assert (response.status_code, response.headers["x-request-id"]) == (200, rid)
        sent[rid] = ("GET", "/v1/welcome", 200)

        # The route template is logged, not the path with its id.
        rid = str(uuid.uuid4())
        response = client.get(
            f"/v1/identities/{PATH_ID}/authority?token={QUERY_SECRET}",
            headers={**secret_headers, "X-Request-Id": rid},
        )
        assert (response.status_code, response.headers["x-request-id"]) == (401, rid)
        sent[rid] = ("GET", "/v1/identities/{id}/authority", 401)

        # An id that is not a UUID is replaced by a new one.
        for bad in ("has spaces in it", "x" * 129, "semi;colon", "trace.1:a-1", f"{rid}0"):
            response = client.get("/v1/welcome", headers={"X-Request-Id": bad})
            new = response.headers["x-request-id"]
            assert new != bad
            assert uuid.UUID(new).version == 4
            sent[new] = ("GET", "/v1/welcome", 200)

        # Refusals carry the id too: an unknown URL, a declared body over the limit (413,
        # refused before routing, so no route).
        response = client.get(f"/v1/no-such-door/{PATH_ID}")
        sent[response.headers["x-request-id"]] = ("GET", None, 404)
        response = client.post(
            "/v1/keys", content=b"{" + b" " * 4096 + b"}", headers=secret_headers
        )
        assert response.status_code == 413
        sent[response.headers["x-request-id"]] = ("POST", None, 413)

        # A head refused before any route (431) is answered and logged with its id.
        rid = str(uuid.uuid4())
        host, port = served.base_url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(
                f"GET /v1/welcome?k={QUERY_SECRET} HTTP/1.1\r\nHost: x\r\nX-Request-Id: {rid}\r\n"
                f"Authorization: Bearer {BEARER_SECRET}\r\nX-Big: {'a' * 40_000}\r\n\r\n".encode()
            )
            answer = b""
            while chunk := sock.recv(65_536):
                answer += chunk
        assert answer.startswith(b"HTTP/1.1 431 ")
        assert f"x-request-id: {rid}\r\n".encode() in answer
        sent[rid] = ("GET", None, 431)

        # A WebSocket upgrade refused by the route: its id on the refusal, its line in the log,
        # and uvicorn's own WebSocket line (which holds the query string) not written.
        rid = str(uuid.uuid4())
        ws_url = served.base_url.replace("http://", "ws://")
        ws_url += f"/v1/runtimes/{uuid.uuid4()}/bridge?token={QUERY_SECRET}"

        async def upgrade() -> tuple[int, str | None]:
            try:
                async with connect(
                    ws_url, additional_headers={**secret_headers, "X-Request-Id": rid}
                ):
                    pass
            except InvalidStatus as exc:
                return exc.response.status_code, exc.response.headers.get("x-request-id")
            raise AssertionError("the upgrade was accepted")

        status, echoed = asyncio.run(upgrade())
        assert echoed == rid
        sent[rid] = ("GET", "/v1/runtimes/{runtime_id}/bridge", status)

    text = served.log.read_text()
    records = [json.loads(line) for line in served.lines()]  # every line is JSON
    logged = access_lines(records)
    for rid, (method, route, status) in sent.items():
        assert len(logged.get(rid, [])) == 1, (rid, logged.get(rid))
        (line,) = logged[rid]
        assert (line["method"], line["route"], line["status"]) == (method, route, status), line
        assert isinstance(line["duration_ms"], int | float)
        assert line["duration_ms"] >= 0
        assert line["level"] == "info"
        assert set(line) == {
            "event",
            "request_id",
            "method",
            "route",
            "status",
            "duration_ms",
            "level",
            "timestamp",
        }
    for secret in (BEARER_SECRET, QUERY_SECRET, PATH_ID):
        assert secret not in text
    # uvicorn's own lines, startup included, are the same JSON.
    uvicorn_events = [r["event"] for r in records if r.get("logger", "").startswith("uvicorn")]
    assert any(event.startswith("Uvicorn running on") for event in uvicorn_events)
    assert "Application startup complete." in uvicorn_events
    assert all({"level", "timestamp"} <= set(r) for r in records)


def test_an_unexpected_500_carries_the_request_id_header(tmp_path: Path) -> None:
    with live_service(sqlite_settings(tmp_path)) as live:

        @live.app.get("/boom")
        async def boom() -> None:
            raise RuntimeError("internals")

        with live.client() as client:
            # nginx's $request_id: 32 hex digits, taken in the hyphenated form.
            response = client.get("/boom", headers={"X-Request-Id": "0123456789ABCDEF" * 2})
    assert response.status_code == 500
    rid = "01234567-89ab-cdef-0123-456789abcdef"
    assert response.headers["x-request-id"] == rid
    assert response.json()["request_id"] == rid  # the specification's uuid


GIVEN_UUID = "6f1c2a9e-3b4d-4e5f-8a6b-7c8d9e0f1a2b"


@pytest.mark.parametrize(
    "given", [None, "", "a" * 129, "tab\there", "ok:id.1-2_3", GIVEN_UUID, GIVEN_UUID.upper()]
)
def test_request_ids_are_taken_only_when_they_are_uuids(
    given: str | None,
) -> None:
    from hearth.server.access import request_id_of  # noqa: PLC0415 - the rule, in isolation

    headers = [] if given is None else [(b"X-Request-Id", given.encode())]
    taken = request_id_of(headers)
    if given is not None and given.lower() == GIVEN_UUID:
        assert taken == GIVEN_UUID
    else:
        assert uuid.UUID(taken).version == 4
