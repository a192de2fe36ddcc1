"""HttpBlockStore against real HTTP servers on loopback.

``provider`` serves exactly the block routes of docs/blockstore.md from a Starlette app (uvicorn
in a thread) with a FileBlockStore behind it; switches on its state make it lie, fail or demand
a bearer. Connection failures come from a raw socket server that drops connections.
"""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx2
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from hearth.blockstore import (
    BlockCorrupt,
    BlockNotFound,
    BlockStoreError,
    FileBlockStore,
    HttpBlockStore,
    InvalidCid,
    copy_blocks,
    open_block_store,
)
from hearth.blockstore.base import check_cid
from tests.support.blocks import INVALID_CIDS, make_block

TOKEN = "s3cret-provider-token"


@dataclass
class Provider:
    """The test provider's state: its store, its switches, and what it was sent."""

    store: FileBlockStore
    url: str = ""
    token: str | None = TOKEN
    lie: bool = False
    refuse_puts: bool = False
    garbage_listing: bool = False
    requests: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)
    put_statuses: list[int] = field(default_factory=list)


def error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": code, "message": message}, status_code=status)


@dataclass
class Current:
    """Which Provider the running app serves: each test gets a fresh one."""

    provider: Provider | None = None

    def get(self) -> Provider:
        assert self.provider is not None
        return self.provider


def provider_app(current: Current) -> Starlette:
    def refusal(request: Request) -> Response | None:
        state = current.get()
        state.requests.append((request.method, request.url.path, dict(request.headers)))
        given = request.headers.get("authorization", "")
        if state.token is not None and given != f"Bearer {state.token}":
            # Echoes what it was sent, as careless services do: the client must redact it.
            return error(401, "unauthorized", f"{given!r} is not a valid bearer")
        return None

    async def block(request: Request) -> Response:
        if (refused := refusal(request)) is not None:
            return refused
        state = current.get()
        cid = request.path_params["cid"]
        try:
            check_cid(cid)
        except InvalidCid:
            return error(400, "invalid_cid", "not a CID")
        if request.method == "PUT":
            if state.refuse_puts:
                return error(507, "insufficient_storage", "the provider is full")
            body = await request.body()
            held = await run_in_threadpool(state.store.has, cid)
            try:
                await run_in_threadpool(state.store.put, cid, body)
            except BlockCorrupt:
                return error(422, "cid_mismatch", "the body does not hash to the CID")
            status = 200 if held else 201
            state.put_statuses.append(status)
            return Response(status_code=status)
        try:
            data = await run_in_threadpool(state.store.get, cid)
        except BlockNotFound:
            return error(404, "not_found", f"no block {cid}")
        if state.lie:
            data = data[::-1] + b"!"
        return Response(data, media_type="application/octet-stream")

    async def listing(request: Request) -> Response:
        if (refused := refusal(request)) is not None:
            return refused
        state = current.get()
        if state.garbage_listing:
            return JSONResponse({"items": [{"cid": "../../etc/passwd"}], "next_cursor": None})
        limit = int(request.query_params.get("limit", "100"))
        cursor = request.query_params.get("cursor")
        held = sorted(state.store.cids())
        after = [cid for cid in held if cursor is None or cid > cursor]
        page = after[:limit]
        items = [{"cid": cid, "size": len(state.store.get(cid))} for cid in page]
        next_cursor = page[-1] if len(after) > limit else None
        return JSONResponse({"items": items, "next_cursor": next_cursor})

    return Starlette(
        routes=[
            Route("/v1/adds/blocks", listing, methods=["GET"]),
            Route("/v1/adds/blocks/{cid}", block, methods=["GET", "HEAD", "PUT"]),
        ]
    )


@contextmanager
def serve(app: Starlette) -> Iterator[str]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False, ws="none")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        for _ in range(1000):
            if server.started or not thread.is_alive():
                break
            threading.Event().wait(0.005)
        assert server.started, "the test provider did not start"
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


@pytest.fixture(scope="module")
def running_provider() -> Iterator[tuple[Current, str]]:
    current = Current()
    with serve(provider_app(current)) as url:
        yield current, url


@pytest.fixture
def provider(running_provider: tuple[Current, str], tmp_path: Path) -> Iterator[Provider]:
    current, url = running_provider
    current.provider = Provider(FileBlockStore(tmp_path / "provider", fsync=False), url=url)
    yield current.provider
    current.provider = None


@pytest.fixture(scope="module")
def client() -> Iterator[httpx2.Client]:
    """One client for most tests: making one (its TLS context) takes about 0.1 s."""
    with httpx2.Client(timeout=10) as shared:
        yield shared


@pytest.fixture
def store(provider: Provider, client: httpx2.Client) -> Iterator[HttpBlockStore]:
    with HttpBlockStore(provider.url, bearer=TOKEN, retries=0, client=client) as client_store:
        yield client_store


def test_round_trip(provider: Provider, store: HttpBlockStore) -> None:
    blocks = dict(make_block(n, size) for n, size in enumerate([0, 1, 100, 200_000]))
    for cid, data in blocks.items():
        assert not store.has(cid)
        store.put(cid, data)
        assert store.has(cid)
        assert provider.store.get(cid) == data
    for cid, data in blocks.items():
        assert store.get(cid) == data
    assert sorted(store.cids()) == sorted(blocks)

    cid, data = next(iter(blocks.items()))
    store.put(cid, data)
    assert provider.put_statuses == [201] * len(blocks) + [200]


def test_requests_carry_the_bearer_and_the_content_type(
    provider: Provider, store: HttpBlockStore
) -> None:
    cid, data = make_block("headers")
    store.put(cid, data)
    store.get(cid)
    store.has(cid)
    list(store.cids())
    methods = [(method, path) for method, path, _ in provider.requests]
    assert methods == [
        ("PUT", f"/v1/adds/blocks/{cid}"),
        ("GET", f"/v1/adds/blocks/{cid}"),
        ("HEAD", f"/v1/adds/blocks/{cid}"),
        ("GET", "/v1/adds/blocks"),
    ]
    for _, _, headers in provider.requests:
        assert headers["authorization"] == f"Bearer {TOKEN}"
    assert provider.requests[0][2]["content-type"] == "application/octet-stream"


def test_listing_follows_cursors_across_pages(provider: Provider, client: httpx2.Client) -> None:
    blocks = dict(make_block(n) for n in range(10))
    for cid, data in blocks.items():
        provider.store.put(cid, data)
    with HttpBlockStore(provider.url, bearer=TOKEN, page_size=3, client=client) as store:
        assert list(store.cids()) == sorted(blocks)
    listings = [path for method, path, _ in provider.requests if path == "/v1/adds/blocks"]
    assert len(listings) == 4  # 3 + 3 + 3 + 1


def test_a_missing_block_is_block_not_found(store: HttpBlockStore) -> None:
    cid, _ = make_block("absent")
    with pytest.raises(BlockNotFound) as caught:
        store.get(cid)
    assert isinstance(caught.value, KeyError)
    assert (caught.value.status, caught.value.code, caught.value.cid) == (404, "not_found", cid)
    assert f"no block {cid}" in str(caught.value)
    assert not store.has(cid)


def test_a_lying_provider_is_refused(provider: Provider, store: HttpBlockStore) -> None:
    cid, data = make_block("truth", 1000)
    store.put(cid, data)
    provider.lie = True
    with pytest.raises(BlockCorrupt, match="refused") as caught:
        store.get(cid)
    assert caught.value.cid == cid


def test_service_errors_carry_code_status_and_message(
    provider: Provider, store: HttpBlockStore
) -> None:
    provider.refuse_puts = True
    cid, data = make_block("full")
    with pytest.raises(BlockStoreError) as caught:
        store.put(cid, data)
    assert type(caught.value) is BlockStoreError
    assert (caught.value.status, caught.value.code) == (507, "insufficient_storage")
    assert "the provider is full" in str(caught.value)


def test_a_wrong_bearer_is_reported_without_the_bearer(
    provider: Provider, client: httpx2.Client
) -> None:
    wrong = "wrong-token-0123456789"
    cid, data = make_block("auth")
    with HttpBlockStore(provider.url, bearer=wrong, client=client) as store:
        refusals: list[BlockStoreError] = []
        for call in (
            lambda: store.put(cid, data),
            lambda: store.get(cid),
            lambda: list(store.cids()),
            lambda: store.has(cid),  # HEAD: a status without a body
        ):
            with pytest.raises(BlockStoreError) as caught:
                call()
            refusals.append(caught.value)
    for refusal in refusals:
        assert refusal.status == 401
        assert wrong not in str(refusal)
    for refusal in refusals[:3]:
        assert refusal.code == "unauthorized"
        assert "'Bearer [bearer]' is not a valid bearer" in str(refusal)
    # The provider did receive the token it echoed: the redaction is the client's doing.
    assert all(headers["authorization"] == f"Bearer {wrong}" for *_, headers in provider.requests)


def test_no_bearer_sends_no_authorization(provider: Provider, client: httpx2.Client) -> None:
    provider.token = None
    cid, data = make_block("open")
    with HttpBlockStore(provider.url, client=client) as store:
        store.put(cid, data)
        assert store.get(cid) == data
    assert all("authorization" not in headers for *_, headers in provider.requests)


def test_bad_bytes_and_names_are_refused_before_sending(
    provider: Provider, store: HttpBlockStore
) -> None:
    cid, _ = make_block("claimed")
    _, other = make_block("other")
    with pytest.raises(BlockCorrupt):
        store.put(cid, other)
    for name in INVALID_CIDS.values():
        with pytest.raises(InvalidCid):
            store.get(name)  # type: ignore[arg-type]
    assert provider.requests == []


def test_a_block_larger_than_the_limit_is_cut_off(
    provider: Provider, client: httpx2.Client
) -> None:
    cid, data = make_block("big", 5000)
    provider.store.put(cid, data)
    with (
        HttpBlockStore(provider.url, bearer=TOKEN, max_block_size=4096, client=client) as store,
        pytest.raises(BlockStoreError, match="more than 4096"),
    ):
        store.get(cid)


def test_a_malformed_listing_is_refused(provider: Provider, store: HttpBlockStore) -> None:
    provider.garbage_listing = True
    with pytest.raises(BlockStoreError, match="without a valid CID"):
        list(store.cids())


def test_open_block_store_and_copy_through_a_provider(provider: Provider, tmp_path: Path) -> None:
    local = FileBlockStore(tmp_path / "local")
    blocks = dict(make_block(n, 700) for n in range(5))
    for cid, data in blocks.items():
        local.put(cid, data)
    remote = open_block_store(provider.url + "/", bearer=TOKEN)
    assert isinstance(remote, HttpBlockStore)
    assert copy_blocks(local, remote).copied == 5
    assert copy_blocks(local, remote).present == 5
    back = open_block_store(str(tmp_path / "back"), create=True)
    assert copy_blocks(remote, back).copied == 5
    for cid, data in blocks.items():
        assert back.get(cid) == data
    remote.close()


def test_a_closed_store_refuses_and_a_given_client_stays_open(provider: Provider) -> None:
    cid, data = make_block("client")
    with httpx2.Client(timeout=5) as client:
        store = HttpBlockStore(provider.url, bearer=TOKEN, client=client)
        store.put(cid, data)
        store.close()
        with pytest.raises(BlockStoreError, match="closed"):
            store.get(cid)
        assert client.get(f"{provider.url}/v1/adds/blocks/{cid}").status_code == 401
    with pytest.raises(BlockStoreError, match="http:// or https://"):
        HttpBlockStore("provider.example")


# --- connection failures and retries --------------------------------------------------------


class DroppingServer:
    """Accepts connections on loopback; resets the first ``drops`` of them, then answers each
    request with ``response`` (one request per connection)."""

    def __init__(self, drops: int, response: bytes) -> None:
        self.drops = drops
        self.response = response
        self.connections = 0
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.05)
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                continue
            with conn:
                self.connections += 1
                if self.connections <= self.drops:
                    # Close with RST, as a crashed or restarting node would.
                    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    continue
                conn.settimeout(5)
                received = b""
                while b"\r\n\r\n" not in received:
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    received += chunk
                conn.sendall(self.response)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self.listener.close()


@contextmanager
def dropping_server(drops: int, response: bytes) -> Iterator[DroppingServer]:
    server = DroppingServer(drops, response)
    try:
        yield server
    finally:
        server.close()


def block_response(data: bytes) -> bytes:
    head = f"HTTP/1.1 200 OK\r\nContent-Length: {len(data)}\r\nConnection: close\r\n\r\n"
    return head.encode() + data


def test_lost_connections_are_retried(client: httpx2.Client) -> None:
    cid, data = make_block("retried", 2000)
    with dropping_server(2, block_response(data)) as server:
        store = HttpBlockStore(server.url, bearer=TOKEN, retries=2, backoff=0.01, client=client)
        assert store.get(cid) == data
        assert server.connections == 3
        store.close()


def test_retries_give_up_with_a_clear_error(client: httpx2.Client) -> None:
    cid, data = make_block("given up")
    with dropping_server(100, block_response(data)) as server:
        store = HttpBlockStore(server.url, bearer=TOKEN, retries=2, backoff=0.01, client=client)
        with pytest.raises(BlockStoreError, match="after 3 attempt") as caught:
            store.has(cid)
        assert server.connections == 3
        assert TOKEN not in str(caught.value)
        store.close()


def test_a_refused_connection_is_a_block_store_error(client: httpx2.Client) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    store = HttpBlockStore(url, retries=1, backoff=0.01, client=client)
    cid, data = make_block("nobody home")
    with pytest.raises(BlockStoreError, match="ConnectError after 2 attempt"):
        store.put(cid, data)
    store.close()


def test_a_provider_answering_wrong_bytes_is_not_retried_into_acceptance(
    client: httpx2.Client,
) -> None:
    cid, _ = make_block("wanted")
    _, other = make_block("served")
    with dropping_server(0, block_response(other)) as server:
        store = HttpBlockStore(server.url, retries=2, backoff=0.01, client=client)
        with pytest.raises(BlockCorrupt):
            store.get(cid)
        assert server.connections == 1
        store.close()


def test_a_non_json_error_body_is_reported_as_text(client: httpx2.Client) -> None:
    cid, _ = make_block("text error")
    body = b"upstream exploded"
    response = (
        f"HTTP/1.1 502 Bad Gateway\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode() + body
    with dropping_server(0, response) as server:
        store = HttpBlockStore(server.url, retries=0, client=client)
        with pytest.raises(BlockStoreError, match="HTTP 502: upstream exploded") as caught:
            store.get(cid)
        assert (caught.value.status, caught.value.code) == (502, None)
        store.close()
