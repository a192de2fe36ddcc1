"""The ADDS provider node's rules: blocks checked on write, documents validated and verified
before they are kept, heads resolved, and the service's own signed provider record and receipts.

Decisions (docs/service.md, "Provider node"):
- A block is kept once, whoever uploads it; each project that uploads it holds it. Any
  authenticated caller may read a block or a document by CID: blocks are ciphertext and
  documents are signed public metadata, so access to content is governed by grants (the content
  key is wrapped to the grant's audience), not by who may download the bytes.
- Documents signed by anyone may be submitted: the service is a store. Their signer is recorded.
- The provider record lists the most recent blocks held; services/provider_record.py signs it
  at start and after block writes, never on a read, and each new one supersedes the last.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import AsyncIterator, Sequence

import anyio
import structlog

from hearth.adds import (
    Commitment,
    InventoryItem,
    Role,
    SignedDocument,
    b64url_decode,
    build_receipt,
    canonicalize,
    cid_for_bytes,
    validate,
)
from hearth.adds.cid import cid_from_digest
from hearth.adds.heads import resolve_heads
from hearth.blockstore import BlockCorrupt, BlockNotFound, BlockStoreError
from hearth.proofs.key_types import Ed25519PrivateKey

from ..db.engine import Database
from ..db.ids import new_id
from ..edge_text import find_unstorable
from ..errors import ApiError, not_found
from ..json_types import JsonObject
from ..observability import Metrics
from ..settings import Settings
from . import adds_store
from .adds_node import AddsNode
from .adds_store import StoredDocument
from .provider_key import ProviderKeyUnavailable, public_key_b64url
from .provider_record import ProviderRecord, provider_id

log = structlog.get_logger("hearth.server")

MAX_HEADS = 1_000  # head documents of one (issuer, head_id) read to resolve it
_VALIDATE_IN_THREAD = 64 * 1024  # larger documents are validated off the event loop


# --- blocks -------------------------------------------------------------------------------------


def too_large(limit: int) -> ApiError:
    return ApiError(
        413,
        "payload_too_large",
        f"Blocks are limited to {limit} bytes (one 16 MiB chunk and its tag by default).",
    )


async def put_block(
    db: Database,
    project_id: str,
    cid: str,
    body: AsyncIterator[bytes],
    *,
    declared_length: str | None,
    limit: int,
    node: AddsNode,
    metrics: Metrics,
) -> tuple[bool, int]:
    """Keep the block and record it for the project: (new for the project, size).

    The CID is checked before the body is read, the size while it streams in (a declared length
    over the limit is refused unread), and the hash once it is complete. The bytes reach the
    block store (durably) before the project's row is written, so an acknowledged block is
    always there to serve. ``limit`` is the largest block accepted, in bytes.
    """
    adds_store.require_cid(cid)
    if declared_length is not None and declared_length.isdigit() and int(declared_length) > limit:
        raise too_large(limit)
    digest = hashlib.sha256()
    data = bytearray()
    async for chunk in body:
        if len(data) + len(chunk) > limit:
            raise too_large(limit)
        data += chunk
        digest.update(chunk)
    actual = cid_from_digest(digest.digest())
    if actual != cid:
        raise ApiError(
            422,
            "cid_mismatch",
            "The bytes do not hash to the CID in the URL.",
            details={"cid": cid, "computed_cid": actual, "size": len(data)},
            hint="A block's CID is CIDv1, raw codec, sha2-256 of exactly the bytes sent.",
        )
    block = bytes(data)
    store = await node.blocks()
    # A store that fails (a full disk) is the service's fault: the 500 carries a request id.
    # An object store that cannot be reached is a 503 saying so, and nothing was recorded.
    try:
        await anyio.to_thread.run_sync(store.put, cid, block)
    except BlockCorrupt:
        raise
    except BlockStoreError as exc:
        raise _store_unavailable(exc) from None
    async with db.write() as conn:
        created = await adds_store.record_block(conn, project_id, cid, len(block))
    metrics.block_bytes_stored.inc(len(block))
    if created:  # the inventory may have changed: the record follows (at once or shortly)
        await node.records.block_stored()
    return created, len(block)


async def block_size(db: Database, cid: str) -> int:
    """The size of a block the service holds; 404 otherwise."""
    adds_store.require_cid(cid)
    async with db.read() as conn:
        size = await adds_store.block_size(conn, cid)
    if size is None:
        raise not_found("Block")
    return size


async def get_block(db: Database, cid: str, *, node: AddsNode, metrics: Metrics) -> bytes:
    await block_size(db, cid)
    store = await node.blocks()
    try:
        data = await anyio.to_thread.run_sync(store.get, cid)
    except BlockNotFound:
        # Recorded but not on disk: the block directory was lost or moved. Not the caller's
        # fault, and nothing they can do; reported as absent, and loudly in the log.
        log.error("block_missing_from_store", cid=cid)
        raise not_found("Block") from None
    except BlockCorrupt:
        # The store gave bytes that do not hash to the CID: never served (a 500, logged).
        log.error("block_corrupt_in_store", cid=cid)
        raise
    except BlockStoreError as exc:
        raise _store_unavailable(exc) from None
    metrics.block_bytes_served.inc(len(data))
    return data


def _store_unavailable(exc: BlockStoreError) -> ApiError:
    log.error("block_store_unavailable", cid=exc.cid, reason=exc.message)
    return ApiError(
        503,
        "block_store_unavailable",
        "The block store did not answer; nothing was stored or read. Try again later.",
    )


# --- documents ----------------------------------------------------------------------------------


def parse_document(raw: bytes) -> StoredDocument:
    """A valid, verified document and its canonical bytes; 422 ``invalid_document`` otherwise."""
    result = validate(raw)
    if not result.valid:
        raise ApiError(
            422,
            "invalid_document",
            "The document is not a valid ADDS 0.1 document.",
            details={"problems": [problem.as_dict() for problem in result.errors]},
            docs="/v1/openapi.json",
        )
    assert result.kind is not None
    assert isinstance(result.document, dict)
    # A valid document may still hold a NUL in free text (a grant's audience, a head's head_id)
    # that its columns could not keep: the edge's rule, applied where this raw body is parsed.
    unstorable = find_unstorable(result.document)
    if unstorable is not None:
        raise unstorable.refusal()
    canonical = canonicalize(result.document, simple=result.simple)
    return StoredDocument(cid_for_bytes(canonical), result.kind, canonical, result.document)


async def submit_document(db: Database, project_id: str, raw: bytes) -> tuple[bool, str, str]:
    """Validate and keep a document: (new for the project, cid, kind)."""
    if len(raw) > _VALIDATE_IN_THREAD:
        stored = await anyio.to_thread.run_sync(parse_document, raw)
    else:
        stored = parse_document(raw)
    async with db.write() as conn:
        created = await adds_store.store_document(conn, project_id, stored)
    return created, stored.cid, stored.kind


async def document_bytes(db: Database, cid: str) -> bytes:
    adds_store.require_cid(cid)
    async with db.read() as conn:
        found = await adds_store.document_bytes(conn, cid)
    if found is None:
        raise not_found("Document")
    return found


async def resolve_head(db: Database, head_id: str, issuer_key: str) -> JsonObject:
    """The resolution of one head history (issuer key, head_id) from the heads held for any
    project: heads are signed pointers, public metadata like the documents they point to.

    Reads at most MAX_HEADS heads, the highest sequences first: enough for the current head, a
    fork at the top and the parents it names; forks further down than that are not reported.
    404 when the service holds no valid head of that history.
    """
    async with db.read() as conn:
        documents = await adds_store.head_documents(
            conn, issuer_key=issuer_key, head_id=head_id, limit=MAX_HEADS
        )
    if not documents:
        raise not_found("Head")
    resolutions = await anyio.to_thread.run_sync(
        lambda: resolve_heads(documents, head_id=head_id, issuer_key=b64url_decode(issuer_key))
    )
    if not resolutions:
        raise not_found("Head")
    return resolutions[0].as_json()


# --- the provider record ------------------------------------------------------------------------


async def signing_key(node: AddsNode) -> tuple[Ed25519PrivateKey, str]:
    try:
        key = await node.keyring.key()
    except ProviderKeyUnavailable as exc:
        raise key_unavailable(exc) from None
    return key, public_key_b64url(key)


def key_unavailable(exc: ProviderKeyUnavailable) -> ApiError:
    log.error("provider_key_unavailable", reason=str(exc))
    return ApiError(
        503,
        "provider_key_unavailable",
        "The service's provider key cannot be used; the operator has been told.",
    )


async def published_record(node: AddsNode) -> ProviderRecord | None:
    """The latest signed provider record, or None; reads only (services/provider_record.py)."""
    try:
        return await node.records.published()
    except ProviderKeyUnavailable as exc:
        raise key_unavailable(exc) from None


# --- receipts -----------------------------------------------------------------------------------


async def issue_receipt(
    db: Database,
    project_id: str,
    items: Sequence[str],
    commitment: Commitment,
    base_url: str,
    *,
    node: AddsNode,
    settings: Settings,
) -> SignedDocument:
    """A signed receipt for items the project holds, kept as one of its documents.

    Every item must be held by the caller's project (409 ``not_held`` lists those that are not):
    a provider commits only to what it has.
    """
    cids = list(dict.fromkeys(items))
    async with db.read() as conn:
        held = await adds_store.held(conn, project_id, cids)
    missing = [cid for cid in cids if cid not in held.sizes]
    if missing:
        raise ApiError(
            409,
            "not_held",
            f"{len(missing)} of the items are not held by this project.",
            details={"missing": missing},
            hint="PUT the blocks to /v1/adds/blocks/{cid} and POST the documents to "
            "/v1/adds/documents first.",
        )
    record = await published_record(node)
    key, _ = await signing_key(node)
    now = int(time.time())
    receipt = build_receipt(
        key=key,
        provider_id=provider_id(settings, base_url),
        receipt_id=new_id(),
        issued_at=now,
        retention_until=now + settings.receipt_retention_days * 86_400,
        commitment=commitment,
        items=[InventoryItem(cid, held.sizes[cid], Role(held.roles[cid])) for cid in cids],
        provider_record=record.cid if record is not None else None,
    )
    stored = StoredDocument(receipt.cid, "receipt", receipt.canonical, receipt.document)
    async with db.write() as conn:
        await adds_store.store_document(conn, project_id, stored)
    return receipt
