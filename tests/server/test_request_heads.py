"""Request heads are bounded in size, in number of fields and in time (docs/service.md, "Request
heads"), on a real socket against the live service, served as `hearth serve` serves it.

No database is involved: the heads are refused before any route runs, so SQLite alone serves.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
from websockets.asyncio.client import connect

from hearth.client.bridge import bridge_url
from tests.support.bridge import provision
from tests.support.live import Live, live_service, sqlite_settings
from tests.support.metrics import value

GUARD_S = 10.0  # how long a test waits for the server before calling it hung (never a speed)
TIMEOUT_S = 0.5  # the head timeout these tests configure


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    settings = sqlite_settings(tmp_path_factory.mktemp("heads"), header_timeout_seconds=TIMEOUT_S)
    assert (settings.max_header_bytes, settings.max_header_count) == (32_768, 100)  # defaults
    with live_service(settings) as live:
        yield live


def connect_raw(live: Live) -> socket.socket:
    host, port = live.base_url.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)), timeout=GUARD_S)


def read_response(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """One response (status, lower-cased headers, body) read by its Content-Length."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65_536)
        assert chunk, f"the connection closed before a whole response: {data!r}"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines)}
    while len(body) < int(headers["content-length"]):
        chunk = sock.recv(65_536)
        assert chunk, "the connection closed inside a body"
        body += chunk
    return int(status_line.split()[1]), headers, body


def read_to_close(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (bounded by GUARD_S)."""
    data = b""
    deadline = time.monotonic() + GUARD_S
    while True:
        sock.settimeout(max(deadline - time.monotonic(), 0.01))
        try:
            chunk = sock.recv(65_536)
        except TimeoutError:
            pytest.fail(f"the server kept the connection open: {data!r}")
        except ConnectionResetError:
            return data
        if not chunk:
            return data
        data += chunk


def request(extra: bytes = b"", path: str = "/v1/welcome") -> bytes:
    return f"GET {path} HTTP/1.1\r\nHost: test\r\n".encode() + extra + b"\r\n"


def refusal(data: bytes) -> tuple[int, dict[str, str], dict[str, Any]]:
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines)}
    return int(status_line.split()[1]), headers, json.loads(body)


# --- size and count -----------------------------------------------------------------------------


def test_a_64_kib_header_is_refused_with_431_in_the_error_shape(live: Live) -> None:
    with connect_raw(live) as sock:
        sock.sendall(request(b"X-Big: " + b"a" * 65_536 + b"\r\n"))
        status, headers, body = refusal(read_to_close(sock))
    assert status == 431
    assert body["error"] == "request_header_fields_too_large"
    assert "32768 bytes" in body["message"]
    assert set(body) == {"error", "message"}
    assert headers["content-type"] == "application/json"
    assert headers["connection"] == "close"
    assert headers["x-request-id"]
    assert headers["x-welcomed"] == "5"


def test_2000_headers_of_100_bytes_are_refused_with_431(live: Live) -> None:
    fields = b"".join(b"X-F%04d: %s\r\n" % (i, b"v" * 91) for i in range(2000))
    with connect_raw(live) as sock:
        sock.sendall(request(fields))
        status, _, body = refusal(read_to_close(sock))
    assert (status, body["error"]) == (431, "request_header_fields_too_large")
    assert "100 header fields" in body["message"]


def test_an_unfinished_header_is_refused_once_it_passes_the_bound(live: Live) -> None:
    """The bound holds before the line ends: a header still growing is not buffered for ever."""
    with connect_raw(live) as sock:
        sock.sendall(b"GET /v1/welcome HTTP/1.1\r\nHost: test\r\nX-Endless: ")
        for _ in range(40):  # 40 KiB of one value, never ended, in 1 KiB reads
            sock.sendall(b"a" * 1024)
            time.sleep(0.001)
        status, _, body = refusal(read_to_close(sock))
    assert (status, body["error"]) == (431, "request_header_fields_too_large")


def test_an_oversized_request_line_is_refused_with_431(live: Live) -> None:
    with connect_raw(live) as sock:
        sock.sendall(request(path="/v1/welcome?q=" + "a" * 40_000))
        status, _, body = refusal(read_to_close(sock))
    assert (status, body["error"]) == (431, "request_header_fields_too_large")


def test_heads_within_the_bounds_are_served_and_the_connection_is_kept(live: Live) -> None:
    within = b"".join(b"X-F%02d: %s\r\n" % (i, b"v" * 200) for i in range(90))  # ~19 KiB
    with connect_raw(live) as sock:
        for extra in (b"", within, b""):  # three requests on one connection
            sock.sendall(request(extra))
            status, headers, body = read_response(sock)
            assert status == 200, body
            assert headers.get("connection") != "close"
            assert json.loads(body)["welcome"]


@pytest.mark.parametrize("size", [40_000, 200_000])
def test_bodies_larger_than_the_head_bound_pass_on_a_kept_connection(live: Live, size: int) -> None:
    """Only head bytes count: a body that arrives in the same read as its head (or as the end
    of the previous request) is body, however large, on the first request or a later one."""
    body = json.dumps({"name": "x" * size}).encode()
    post = (
        b"POST /v1/keys HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n" % len(body)
    ) + body
    with connect_raw(live) as sock:
        for _ in range(3):  # three on one connection, each sent in one write
            sock.sendall(post)
            status, headers, answer = read_response(sock)
            assert status == 401, answer  # no bearer: the route's answer, not the door's
            assert headers.get("connection") != "close"


def test_a_request_that_is_not_http_is_refused_in_the_error_shape(live: Live) -> None:
    with connect_raw(live) as sock:
        sock.sendall(b"HELLO THERE\r\n\r\n")
        status, headers, body = refusal(read_to_close(sock))
    assert (status, body["error"]) == (400, "bad_request")
    assert headers["x-request-id"]


def test_head_refusals_are_counted_by_their_error_code(live: Live) -> None:
    """Made by the protocol before any app runs, and still in ``hearth_refusals_total``
    (docs/service.md, "Metrics"); a connection closed without an answer is not a refusal."""

    def scrape() -> str:
        with live.client() as client:
            response = client.get("/metrics")
        assert response.status_code == 200, response.text
        return response.text

    before = scrape()
    with connect_raw(live) as sock:
        sock.sendall(request(b"X-Big: " + b"a" * 65_536 + b"\r\n"))
        assert refusal(read_to_close(sock))[0] == 431
    with connect_raw(live) as sock:
        sock.sendall(b"HELLO THERE\r\n\r\n")
        assert refusal(read_to_close(sock))[0] == 400
    with connect_raw(live) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")
        assert refusal(read_to_close(sock))[0] == 408
    with connect_raw(live) as sock:
        assert read_to_close(sock) == b""
    after = scrape()

    def delta(**labels: str) -> float:
        return value(after, "hearth_refusals_total", **labels) - value(
            before, "hearth_refusals_total", **labels
        )

    assert delta(error="request_header_fields_too_large") == 1
    assert delta(error="bad_request") == 1
    assert delta(error="request_timeout") == 1
    assert delta() == 3


# --- time ----------------------------------------------------------------------------------------


def test_half_a_head_is_answered_408_and_closed(live: Live) -> None:
    with connect_raw(live) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")
        status, headers, body = refusal(read_to_close(sock))
    assert (status, body["error"]) == (408, "request_timeout")
    assert headers["x-request-id"]


def test_a_connection_that_sends_nothing_is_closed_without_an_answer(live: Live) -> None:
    with connect_raw(live) as sock:
        assert read_to_close(sock) == b""


def test_a_head_dripped_byte_by_byte_does_not_extend_its_time(live: Live) -> None:
    """Each byte arriving does not restart the clock: the deadline is the head's, not the read's."""
    drip = request(b"".join(b"X-F%02d: v\r\n" % i for i in range(90)))
    with connect_raw(live) as sock:
        sock.setblocking(False)
        answered = b""
        for byte in drip:  # ~1,300 bytes at one per 10 ms: far beyond the head's time
            try:
                sock.send(bytes([byte]))
            except (BrokenPipeError, ConnectionResetError):
                break
            with contextlib.suppress(BlockingIOError):  # nothing answered yet
                answered += sock.recv(65_536)
            if answered:
                break
            time.sleep(0.01)
        sock.setblocking(True)
        answered += read_to_close(sock)
    assert answered.startswith(b"HTTP/1.1 408 "), answered


def test_fifty_half_open_connections_are_all_closed(live: Live) -> None:
    socks = [connect_raw(live) for _ in range(50)]
    try:
        for sock in socks:
            sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")
        answers = [read_to_close(sock) for sock in socks]
    finally:
        for sock in socks:
            sock.close()
    assert all(answer.startswith(b"HTTP/1.1 408 ") for answer in answers)


def test_an_idle_kept_alive_connection_follows_the_keep_alive_timeout(live: Live) -> None:
    """The head timeout starts with a head's first byte: between requests, an idle connection is
    kept for uvicorn's keep-alive time (5 s), not the head's (0.5 s here), and then closed."""
    with connect_raw(live) as sock:
        sock.sendall(request())
        assert read_response(sock)[0] == 200
        time.sleep(TIMEOUT_S * 4)  # idle well past the head timeout
        sock.sendall(request())
        assert read_response(sock)[0] == 200  # the same connection answered
        assert read_to_close(sock) == b""  # and idle, it is closed quietly in the end


# --- upgrades -------------------------------------------------------------------------------------


def test_a_websocket_upgrade_still_works(live: Live) -> None:
    bridged = provision(live)
    url = bridge_url(live.base_url, bridged.runtime_id)

    async def handshake() -> dict[str, Any]:
        async with connect(
            url, additional_headers={"Authorization": f"Bearer {bridged.control_token}"}
        ) as websocket:
            await asyncio.sleep(TIMEOUT_S * 2)  # an open session outlives the head timeout
            challenge: dict[str, Any] = json.loads(await websocket.recv())
            return challenge

    challenge = asyncio.run(handshake())
    assert challenge["type"] == "challenge"
    assert challenge["runtime_id"] == bridged.runtime_id


def test_an_upgrade_with_too_many_headers_is_refused(live: Live) -> None:
    fields = b"".join(b"X-F%03d: v\r\n" % i for i in range(150))
    upgrade = (
        b"Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
        b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
    )
    with connect_raw(live) as sock:
        sock.sendall(request(upgrade + fields, path="/v1/runtimes/x/bridge"))
        status, _, body = refusal(read_to_close(sock))
    assert (status, body["error"]) == (431, "request_header_fields_too_large")
