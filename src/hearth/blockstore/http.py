"""HttpBlockStore: blocks kept by a hearth provider node, over its HTTP block routes.

    PUT  {base}/v1/adds/blocks/{cid}     body: the raw bytes (application/octet-stream)
                                         201 stored, 200 already held
    GET  {base}/v1/adds/blocks/{cid}     200 the bytes; 404 not held
    HEAD {base}/v1/adds/blocks/{cid}     200 held; 404 not held
    GET  {base}/v1/adds/blocks?limit=&cursor=
                                         200 {"items": [{"cid", "size"}], "next_cursor": str|null}

The requests are ``hearth.client.adds.AddsClient``'s, which the CLI uses too; this module is
what makes them a ``BlockStore``. Its failures (``hearth.client.errors``: a refusal, a transport
failure, an answer that breaks the route's promise) are raised as BlockStoreError carrying
``code`` and ``status``, the client error as ``__cause__``. The provider is not trusted: what
GET returns is hashed and refused (BlockCorrupt) unless it matches the CID, and a download is
cut off past ``max_block_size``. Every request here is idempotent, so one that fails to connect
or loses its connection is retried a few times with a short exponential backoff.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any, ClassVar

import httpx2

from hearth.adds.cid import cid_for_bytes
from hearth.client.adds import BLOCKS_PATH, AddsClient, Answer
from hearth.client.errors import ClientError

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
        self._node = AddsClient(
            base_url,
            bearer=bearer,
            client=client,
            timeout=timeout,
            retries=retries,
            backoff=backoff,
        )
        self.base_url = self._node.base_url
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
        answer = self._ask(lambda: self._node.put_block(cid, data), cid)
        if answer.status not in (200, 201, 204):
            raise self._refused(f"PUT {BLOCKS_PATH}/{cid}", answer, cid=cid)

    def get(self, cid: str) -> bytes:
        """Download a block; BlockCorrupt when the provider's bytes do not hash to ``cid``."""
        check_cid(cid)
        answer = self._ask(lambda: self._node.get_block(cid, limit=self._max_block_size), cid)
        body = answer.content
        if answer.status == 200:
            actual = cid_for_bytes(body)
            if actual != cid:
                raise BlockCorrupt(
                    f"the provider {self.base_url} answered {cid} with {len(body)} bytes that "
                    f"hash to {actual}: refused",
                    cid=cid,
                )
            return body
        missing = answer.status in (404, 410)
        raise self._refused(f"GET {BLOCKS_PATH}/{cid}", answer, cid=cid, missing=missing)

    def has(self, cid: str) -> bool:
        """Whether the provider holds ``cid`` (HEAD)."""
        check_cid(cid)
        answer = self._ask(lambda: self._node.has_block(cid), cid)
        if answer.status == 200:
            return True
        if answer.status in (404, 410):
            return False
        raise self._refused(f"HEAD {BLOCKS_PATH}/{cid}", answer, cid=cid)

    def cids(self) -> Iterator[str]:
        """Every CID the provider lists, following ``next_cursor`` page by page."""
        cursor: str | None = None
        seen: set[str] = set()
        while True:
            request = partial(
                self._node.block_page,
                page_size=self._page_size,
                cursor=cursor,
                limit=_LISTING_LIMIT,
            )
            answer = self._ask(request, None)
            if answer.status != 200:
                raise self._refused(f"GET {BLOCKS_PATH}", answer)
            items, cursor = self._parse_page(answer.content)
            yield from items
            if cursor is None:
                return
            if cursor in seen:
                raise BlockStoreError(f"the provider {self.base_url} repeated a listing cursor")
            seen.add(cursor)

    def close(self) -> None:
        self._closed = True
        self._node.close()

    def _ask(self, request: Callable[[], Answer], cid: str | None) -> Answer:
        """The node's answer to ``request``; a client failure (no answer, or one that breaks
        the route's promise) as a BlockStoreError."""
        if self._closed:
            raise BlockStoreError(f"the block store at {self.base_url} is closed")
        try:
            return request()
        except ClientError as exc:
            raise BlockStoreError(str(exc), cid=cid) from exc

    def _refused(
        self, request: str, answer: Answer, *, cid: str | None = None, missing: bool = False
    ) -> BlockStoreError:
        refusal = self._node.refusal(request, answer)
        kind = BlockNotFound if missing else BlockStoreError
        error = kind(str(refusal), cid=cid, code=refusal.code, status=refusal.status)
        error.__cause__ = refusal
        return error

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
