"""HttpBlockStore: blocks kept by a hearth provider node, over its HTTP block routes.

    PUT  {base}/v1/adds/blocks/{cid}     body: the raw bytes (application/octet-stream)
                                         201 stored, 200 already held
    GET  {base}/v1/adds/blocks/{cid}     200 the bytes; 404 not held
    HEAD {base}/v1/adds/blocks/{cid}     200 held; 404 not held
    GET  {base}/v1/adds/blocks?limit=&cursor=
                                         200 {"items": [{"cid", "size"}], "next_cursor": str|null}

Errors come as JSON ``{"error": code, "message": text}`` and are raised as BlockStoreError
carrying ``code`` and ``status``. The provider is not trusted: what GET returns is hashed and
refused (BlockCorrupt) unless it matches the CID, and a download is cut off past
``max_block_size``. Every request here is idempotent, so one that fails to connect or loses
its connection is retried a few times with a short exponential backoff.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any, ClassVar

import httpx2

from hearth.adds.cid import cid_for_bytes

from .base import (
    MAX_BLOCK_SIZE,
    BlockCorrupt,
    BlockNotFound,
    BlockStoreError,
    InvalidCid,
    check_block,
    check_cid,
)

__all__ = ["BLOCKS_PATH", "HttpBlockStore"]

BLOCKS_PATH = "/v1/adds/blocks"
_RETRYABLE = (httpx2.NetworkError, httpx2.RemoteProtocolError, httpx2.ConnectTimeout)
_ERROR_BODY_LIMIT = 64 * 1024
_LISTING_LIMIT = 16 * 1024 * 1024


class HttpBlockStore:
    """A provider node's block store, reached at ``base_url``.

    ``bearer`` is sent as ``Authorization: Bearer <token>`` and never appears in an error.
    ``client``: an httpx2.Client to use (it is not closed by ``close``); by default the store
    makes its own with ``timeout``. ``retries``: extra attempts after a connection failure,
    waiting ``backoff``, then twice that, and so on. Thread-safe.
    """

    # ``get`` hashes what the provider sent and never returns bytes that do not match, so an
    # opener need not hash them again (hearth.adds.BlockSource).
    verifies_blocks: ClassVar[bool] = True

    def __init__(
        self,
        base_url: str,
        *,
        bearer: str | None = None,
        client: httpx2.Client | None = None,
        timeout: float | httpx2.Timeout = 30.0,
        retries: int = 2,
        backoff: float = 0.2,
        page_size: int = 1000,
        max_block_size: int = MAX_BLOCK_SIZE,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise BlockStoreError(f"a provider URL starts with http:// or https://: {base_url!r}")
        if retries < 0 or backoff < 0 or page_size < 1 or max_block_size < 0:
            raise ValueError("retries, backoff and max_block_size are >= 0; page_size >= 1")
        self.base_url = base_url.rstrip("/")
        self._blocks_url = self.base_url + BLOCKS_PATH
        self._bearer = bearer
        self._headers = {"Authorization": f"Bearer {bearer}"} if bearer else {}
        self._own_client = client is None
        self._client = client if client is not None else httpx2.Client(timeout=timeout)
        self._retries = retries
        self._backoff = backoff
        self._page_size = page_size
        self._max_block_size = max_block_size
        self._closed = False

    def __repr__(self) -> str:
        return f"HttpBlockStore({self.base_url!r})"

    def __enter__(self) -> HttpBlockStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def put(self, cid: str, data: bytes) -> None:
        """Upload a block (verified first). Succeeds whether the provider stored or held it."""
        check_cid(cid)
        check_block(cid, data)
        headers = {"Content-Type": "application/octet-stream"}
        status, body = self._send("PUT", f"{self._blocks_url}/{cid}", content=data, headers=headers)
        if status not in (200, 201, 204):
            raise self._error("PUT", status, body, cid=cid)

    def get(self, cid: str) -> bytes:
        """Download a block; BlockCorrupt when the provider's bytes do not hash to ``cid``."""
        check_cid(cid)
        status, body = self._send("GET", f"{self._blocks_url}/{cid}", limit=self._max_block_size)
        if status == 200:
            actual = cid_for_bytes(body)
            if actual != cid:
                raise BlockCorrupt(
                    f"the provider {self.base_url} answered {cid} with {len(body)} bytes that "
                    f"hash to {actual}: refused",
                    cid=cid,
                )
            return body
        if status in (404, 410):
            raise self._error("GET", status, body, cid=cid, missing=True)
        raise self._error("GET", status, body, cid=cid)

    def has(self, cid: str) -> bool:
        """Whether the provider holds ``cid`` (HEAD)."""
        check_cid(cid)
        status, body = self._send("HEAD", f"{self._blocks_url}/{cid}")
        if status == 200:
            return True
        if status in (404, 410):
            return False
        raise self._error("HEAD", status, body, cid=cid)

    def cids(self) -> Iterator[str]:
        """Every CID the provider lists, following ``next_cursor`` page by page."""
        cursor: str | None = None
        seen: set[str] = set()
        while True:
            params = {"limit": str(self._page_size)}
            if cursor is not None:
                params["cursor"] = cursor
            status, body = self._send("GET", self._blocks_url, params=params, limit=_LISTING_LIMIT)
            if status != 200:
                raise self._error("GET", status, body)
            items, cursor = self._parse_page(body)
            yield from items
            if cursor is None:
                return
            if cursor in seen:
                raise BlockStoreError(f"the provider {self.base_url} repeated a listing cursor")
            seen.add(cursor)

    def close(self) -> None:
        self._closed = True
        if self._own_client:
            self._client.close()

    def _parse_page(self, body: bytes) -> tuple[list[str], str | None]:
        try:
            page: Any = json.loads(body)
        except ValueError:
            page = None
        items = page.get("items") if isinstance(page, dict) else None
        cursor = page.get("next_cursor") if isinstance(page, dict) else None
        if not isinstance(items, list) or not (cursor is None or isinstance(cursor, str)):
            raise BlockStoreError(
                f"the provider {self.base_url} sent a block listing that is not "
                '{"items": [...], "next_cursor": string or null}'
            )
        cids: list[str] = []
        for item in items:
            cid = item.get("cid") if isinstance(item, dict) else None
            try:
                cids.append(check_cid(cid))
            except InvalidCid:
                raise BlockStoreError(
                    f"the provider {self.base_url} listed an item without a valid CID"
                ) from None
        return cids, cursor

    def _send(
        self,
        method: str,
        url: str,
        *,
        content: bytes | None = None,
        headers: dict[str, str] | None = None,
        params: dict[str, str] | None = None,
        limit: int | None = None,
    ) -> tuple[int, bytes]:
        """(status, body). A success's body is read up to ``limit`` bytes (more is an error);
        a failure's, or one whose body is not wanted (no ``limit``), up to 64 KiB, the rest
        dropped; HEAD has none. Connection failures are retried."""
        if self._closed:
            raise BlockStoreError(f"the block store at {self.base_url} is closed")
        all_headers = {**self._headers, **(headers or {})}
        attempt = 0
        while True:
            try:
                with self._client.stream(
                    method, url, content=content, headers=all_headers, params=params
                ) as response:
                    status = response.status_code
                    if method == "HEAD":
                        return status, b""
                    if 200 <= status < 300 and limit is not None:
                        return status, self._read(response, limit, method, url)
                    return status, _read_prefix(response, _ERROR_BODY_LIMIT)
            except _RETRYABLE as exc:
                if attempt >= self._retries:
                    raise BlockStoreError(
                        f"{method} {url}: {type(exc).__name__} after {attempt + 1} attempt(s): "
                        f"{self._redact(str(exc))}"
                    ) from exc
                time.sleep(self._backoff * 2**attempt)
                attempt += 1
            except httpx2.HTTPError as exc:
                raise BlockStoreError(
                    f"{method} {url}: {type(exc).__name__}: {self._redact(str(exc))}"
                ) from exc

    def _read(self, response: httpx2.Response, limit: int, method: str, url: str) -> bytes:
        declared = response.headers.get("Content-Length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise BlockStoreError(
                f"{method} {url}: the provider announced {declared} bytes, more than {limit}"
            )
        chunks: list[bytes] = []
        size = 0
        for chunk in response.iter_bytes():
            size += len(chunk)
            if size > limit:
                raise BlockStoreError(f"{method} {url}: the provider sent more than {limit} bytes")
            chunks.append(chunk)
        return b"".join(chunks)

    def _redact(self, text: str) -> str:
        return text.replace(self._bearer, "[bearer]") if self._bearer else text

    def _error(
        self,
        method: str,
        status: int,
        body: bytes,
        *,
        cid: str | None = None,
        missing: bool = False,
    ) -> BlockStoreError:
        code, message = _error_fields(body)
        code = self._redact(code) if code else code
        what = f"{method} {BLOCKS_PATH}/{cid}" if cid else f"{method} {BLOCKS_PATH}"
        text = f"{self.base_url}: {what}: HTTP {status}"
        if code:
            text += f" {code}"
        if message:
            text += f": {self._redact(message)}"
        kind = BlockNotFound if missing else BlockStoreError
        return kind(text, cid=cid, code=code, status=status)


def _read_prefix(response: httpx2.Response, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    for chunk in response.iter_bytes():
        chunks.append(chunk[: limit - size])
        size += len(chunk)
        if size >= limit:
            break
    return b"".join(chunks)


def _error_fields(body: bytes) -> tuple[str | None, str | None]:
    """(code, message) from an error body: JSON ``error``/``message``, else a text excerpt."""
    try:
        payload: Any = json.loads(body)
    except ValueError:
        payload = None
    if isinstance(payload, dict):
        error = payload.get("error")
        if isinstance(error, dict):  # {"error": {"code": ..., "message": ...}} also seen
            payload, error = error, error.get("code")
        message = payload.get("message")
        return (
            error[:100] if isinstance(error, str) else None,
            message[:500] if isinstance(message, str) else None,
        )
    text = body[:200].decode("utf-8", errors="replace").strip()
    return None, text or None
