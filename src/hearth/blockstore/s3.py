"""S3BlockStore: blocks on an S3-compatible object store (AWS S3, SeaweedFS, MinIO, R2, ...).

``s3://bucket/prefix`` names the place; the block ``cid`` is the object ``prefix/cid``. Where the
store is and who may use it come from the standard AWS settings in the environment
(``AWS_ENDPOINT_URL``, ``AWS_REGION``, ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
``AWS_SESSION_TOKEN``, ``AWS_ALLOW_HTTP`` for a plain-http endpoint), read by obstore (the Rust
``object_store`` crate: one client for the sync calls here and async ones, and the fastest of
those measured, docs/blockstore.md).

The local stores' guarantees hold:
- ``put`` hashes the bytes and refuses them (``BlockCorrupt``) unless they match the CID;
- a write never overwrites another block under one name: the PUT is conditional
  (``If-None-Match: *``); when the name is taken, the object there is read and verified, and
  only a damaged one is replaced (the local stores replace a damaged copy too);
- a block is visible only once complete: an S3 PUT is atomic, so a failed or cut upload leaves
  nothing under the name, and there are no temp files to sweep;
- ``get`` hashes what it read and never returns bytes that do not match (``BlockCorrupt``).
A store that cannot be reached is a ``BlockStoreError`` naming the store and the operation.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import timedelta
from typing import Any, ClassVar
from urllib.parse import urlsplit

import obstore
from obstore.exceptions import AlreadyExistsError, BaseError, NotFoundError, PreconditionError
from obstore.store import S3Store

from hearth.adds.cid import CANONICAL_CID_PATTERN, cid_for_bytes
from hearth.adds.objects import HashedBlock

from .base import BlockCorrupt, BlockNotFound, BlockStoreError, check_block, check_cid

__all__ = ["S3Batch", "S3BlockStore", "parse_s3_url"]

# A bounded wait: an unreachable store must fail an upload in seconds, not hang it.
_CLIENT_OPTIONS: dict[str, Any] = {"connect_timeout": "5s", "timeout": "60s"}


def parse_s3_url(url: str) -> tuple[str, str]:
    """(bucket, prefix) of ``s3://bucket[/prefix]``; BlockStoreError for anything else."""
    parts = urlsplit(url)
    if parts.scheme != "s3" or not parts.netloc or parts.query or parts.fragment:
        raise BlockStoreError(f"not an S3 block store URL: {url!r} (use s3://bucket/prefix)")
    return parts.netloc, parts.path.strip("/")


class S3BlockStore:
    """The blocks under ``s3://bucket/prefix``. ``config``: obstore S3 settings that override
    the environment's (tests pass the endpoint and keys this way). Thread-safe."""

    # ``get`` hashes every object it reads and refuses a mismatch (hearth.adds.BlockSource).
    verifies_blocks: ClassVar[bool] = True
    # An object store answers each GET after a round trip; the opener keeps this many in flight
    # (within its read-ahead budget, hearth.adds.BlockSource) so that one block's wait overlaps
    # the others' and each thread's hashing and decryption. Measured in bench/blockstore_s3.py
    # (docs/performance.md, "Blocks on S3"): 2 in flight reached about 0.55 of plain GETs; 6 keep
    # the opener's peak RSS near 90 MB at 1 MiB chunks where 8 took it to 99 MB, for no rate
    # that could be told apart on this machine.
    reads_in_flight: ClassVar[int] = 6

    def __init__(self, url: str, *, config: dict[str, Any] | None = None) -> None:
        self.url = url
        self._bucket, prefix = parse_s3_url(url)
        self._prefix = f"{prefix}/" if prefix else ""
        self._settings = _settings(config or {})
        try:
            self._store = S3Store(self._bucket, **self._settings)
        except BaseError as exc:
            raise BlockStoreError(f"cannot use the block store {url}: {exc}") from None
        self._probe_store: S3Store | None = None
        self._closed = False

    def __repr__(self) -> str:
        return f"S3BlockStore({self.url!r})"

    def _key(self, cid: str) -> str:
        if self._closed:
            raise BlockStoreError(f"the block store {self.url} is closed", cid=cid)
        return self._prefix + check_cid(cid)

    def _failed(self, action: str, cid: str | None, exc: BaseException) -> BlockStoreError:
        first = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
        return BlockStoreError(f"the block store {self.url} failed to {action}: {first}", cid=cid)

    def put(self, cid: str, data: bytes) -> None:
        key = self._key(cid)
        check_block(cid, data)
        self._write(key, cid, data)

    def batch(self) -> S3Batch:
        """A batch of blocks hashed by their writer (``HashedBlock``): what
        ``hearth.adds.publish`` uses, so that its sealing threads upload the blocks they seal,
        several PUTs in flight, with no second hash. Bytes named by anyone else go through
        ``put``, which hashes them."""
        if self._closed:
            raise BlockStoreError(f"the block store {self.url} is closed")
        return S3Batch(self)

    def _write(self, key: str, cid: str, data: bytes | memoryview) -> None:
        """Store ``data``, known to hash to ``cid``, under ``key`` without overwriting an
        intact copy (a conditional PUT; a damaged copy found there is replaced)."""
        try:
            obstore.put(self._store, key, data, mode="create")
            return
        except (AlreadyExistsError, PreconditionError):
            pass  # the name is taken: by this block, or by a damaged copy of it
        except BaseError as exc:
            raise self._failed(f"store block {cid}", cid, exc) from None
        try:
            self.get(cid)
            return  # held intact: a no-op
        except BlockCorrupt:
            pass
        try:
            obstore.put(self._store, key, data, mode="overwrite")
        except BaseError as exc:
            raise self._failed(f"replace the damaged block {cid}", cid, exc) from None

    def get(self, cid: str) -> bytes:
        return bytes(self.get_lent(cid))

    def get_lent(self, cid: str) -> bytes | memoryview:
        """As ``get`` (verified just the same), but a view of the buffer the client read the
        object into, with no copy of its own (``hearth.adds.LendingBlockSource``); the view
        keeps that buffer alive as long as it is held."""
        key = self._key(cid)
        try:
            data = memoryview(obstore.get(self._store, key).bytes())
        except (NotFoundError, FileNotFoundError):
            raise BlockNotFound(f"block {cid} is not in {self.url}", cid=cid) from None
        except BaseError as exc:
            raise self._failed(f"read block {cid}", cid, exc) from None
        if cid_for_bytes(data) != cid:
            check_block(cid, bytes(data))  # raises BlockCorrupt, saying what the bytes hash to
        return data

    def has(self, cid: str) -> bool:
        key = self._key(cid)
        try:
            obstore.head(self._store, key)
        except (NotFoundError, FileNotFoundError):
            return False
        except BaseError as exc:
            raise self._failed(f"look up block {cid}", cid, exc) from None
        return True

    def cids(self) -> Iterator[str]:
        if self._closed:
            raise BlockStoreError(f"the block store {self.url} is closed")
        try:
            for page in obstore.list(self._store, prefix=self._prefix or None):
                for item in page:
                    name = str(item["path"])[len(self._prefix) :]
                    if CANONICAL_CID_PATTERN.fullmatch(name):
                        yield name
        except BaseError as exc:
            raise self._failed("list blocks", None, exc) from None

    def probe(self, timeout_s: float) -> None:
        """One LIST request under the prefix (a page at most), answered within ``timeout_s``
        and never retried: the store is reachable, the bucket exists and these credentials may
        read it (``GET /readyz``). BlockStoreError otherwise. Its own client, so that a probe
        of a store gone away neither waits for the blocks' retries nor holds a thread long."""
        if self._closed:
            raise BlockStoreError(f"the block store {self.url} is closed")
        if self._probe_store is None:
            wait = f"{max(1, int(timeout_s * 1000))}ms"
            settings = dict(self._settings)
            settings["client_options"] = {
                **settings["client_options"],
                "connect_timeout": wait,
                "timeout": wait,
            }
            settings["retry_config"] = {
                "max_retries": 0,
                "retry_timeout": timedelta(seconds=timeout_s),
            }
            self._probe_store = S3Store(self._bucket, **settings)
        try:
            pages = obstore.list(self._probe_store, prefix=self._prefix or None, chunk_size=1)
            next(iter(pages), None)
        except BaseError as exc:
            raise self._failed("answer a probe", None, exc) from None

    def close(self) -> None:
        self._closed = True


def _settings(config: dict[str, Any]) -> dict[str, Any]:
    """The S3Store keyword arguments: ``config`` first, then the standard AWS variables that
    obstore does not read under these names (the endpoint, the region's fallback), the keys and
    the rest being read by obstore itself. A plain-http endpoint (a local SeaweedFS or MinIO)
    is allowed and addressed by path."""
    out = dict(config)
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    if endpoint:
        out.setdefault("endpoint", endpoint)
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    out.setdefault("region", region or "us-east-1")
    options = dict(_CLIENT_OPTIONS)
    if str(out.get("endpoint", "")).startswith("http://"):
        options["allow_http"] = True
        out.setdefault("virtual_hosted_style_request", False)
    out["client_options"] = options
    # A few quick retries (a dropped connection, a 503 under load), then a clear error: the
    # default (10 retries over up to 3 minutes) would hang an upload on a store that is down.
    out.setdefault("retry_config", {"max_retries": 3, "retry_timeout": timedelta(seconds=15)})
    return out


class S3Batch:
    """``hearth.adds.BlockBatch`` on an object store: each ``add`` is one PUT from the calling
    thread (``publish``'s sealing threads, so several are in flight), of a ``HashedBlock``
    whose CID was computed from these very bytes, so it is not hashed again. An S3 PUT is
    atomic: a block is visible once complete and never before, so ``commit`` has nothing left
    to do, and ``abort`` leaves the blocks already stored (whole, valid blocks, as the local
    stores leave the blocks a batch renamed into place before a failure)."""

    def __init__(self, store: S3BlockStore) -> None:
        self._store = store

    def add(self, block: HashedBlock) -> None:
        if not isinstance(block, HashedBlock):
            raise TypeError("a batch takes HashedBlocks; other bytes go through put")
        self._store._write(self._store._key(block.cid), block.cid, block.data)

    def commit(self) -> None:
        return None

    def abort(self) -> None:
        return None
