"""The ADDS provider node: blocks, control documents, heads, inventory, the provider record and
receipts. The rules are in ``services/provider.py``; docs/service.md, "Provider node", has the
decisions.

Documents, the provider record and receipts are answered as their exact canonical bytes with the
media type ``application/adds+json``: the bytes are what the CID names, and the service's
decoration of ``application/json`` bodies (``_welcomed``) would change them.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Request, Response
from fastapi.responses import JSONResponse

from hearth.adds import Commitment
from hearth.adds.b64 import canonical_b64url_pattern

from ..auth import CallerDep, HearthDep
from ..errors import ApiError
from ..json_types import JsonObject
from ..models import (
    CID_PATTERN,
    AddsInventory,
    BlockPage,
    BlockStored,
    DocumentKind,
    DocumentPage,
    DocumentStored,
    HeadResolutionView,
    ReceiptRequest,
)
from ..services import adds_store, provider
from .common import cursor_query, errors
from .public import base_url

router = APIRouter(tags=["adds"])

OCTET_STREAM = "application/octet-stream"
ADDS_JSON = "application/adds+json"
BLOCKS = "/v1/adds/blocks"
DOCUMENTS = "/v1/adds/documents"

_BINARY = {"schema": {"type": "string", "format": "binary"}}
_DOCUMENT = {
    "schema": {
        "type": "object",
        "description": "An ADDS 0.1 control document (manifest, grant, provider_record, head "
        "or receipt), in its canonical RFC 8785 bytes.",
    }
}
_BLOCK_BODY: JsonObject = {
    "requestBody": {
        "required": True,
        "description": f"The raw block (ciphertext and tag). {OCTET_STREAM}.",
        "content": {OCTET_STREAM: _BINARY},
    }
}
_DOCUMENT_BODY: JsonObject = {
    "requestBody": {
        "required": True,
        "description": "The document's JSON bytes, in any spelling: it is validated, its "
        "signature verified, and its canonical form kept.",
        "content": {"application/json": {"schema": {"type": "object"}}},
    }
}
# Parameter annotations are written out in each route, never shared: FastAPI fills in a
# parameter's FieldInfo when it analyses a route, and a FieldInfo shared by two routes (or by the
# apps of one process) would be analysed twice.
_CID_TEXT = "a canonical CID (CIDv1, raw, sha2-256, base32)"
# Shown in the document, enforced by the service (400 invalid_cid, with the rule that failed).
_CID_FORMAT = {"pattern": CID_PATTERN}
_LIMIT_TEXT = "items per page"
_ISSUER_KEY_PATTERN = f"^{canonical_b64url_pattern(43).pattern}$"


def _adds_json(body: bytes, cid: str, status: int = 200, **headers: str) -> Response:
    return Response(
        body, status_code=status, media_type=ADDS_JSON, headers={"ETag": f'"{cid}"', **headers}
    )


# --- blocks -------------------------------------------------------------------------------------


@router.put(
    BLOCKS + "/{cid}",
    status_code=201,
    response_model=BlockStored,
    summary="Store a block under its CID (checked against the bytes)",
    responses={
        200: {"model": BlockStored, "description": "The project already held this block."},
        **errors(400, 401, 413, 422, 503),
    },
    openapi_extra=_BLOCK_BODY,
)
async def put_block(
    cid: Annotated[str, Path(description=_CID_TEXT, json_schema_extra=_CID_FORMAT)],
    request: Request,
    caller: CallerDep,
    hearth: HearthDep,
) -> Response:
    created, size = await provider.put_block(
        hearth.db,
        caller.project_id,
        cid,
        request.stream(),
        declared_length=request.headers.get("content-length"),
        limit=hearth.settings.max_block_bytes,
        node=hearth.adds,
        metrics=hearth.metrics,
    )
    return JSONResponse({"cid": cid, "size": size}, status_code=201 if created else 200)


def _block_responses(description: str, *more: int) -> dict[int | str, JsonObject]:
    return {
        200: {"description": description, "content": {OCTET_STREAM: _BINARY}},
        **errors(400, 401, 404, *more),
    }


@router.get(
    BLOCKS + "/{cid}",
    response_class=Response,
    summary="Read a block by CID (any authenticated caller)",
    responses=_block_responses("The block's bytes.", 503),
)
async def get_block(
    cid: Annotated[str, Path(description=_CID_TEXT, json_schema_extra=_CID_FORMAT)],
    _caller: CallerDep,
    hearth: HearthDep,
) -> Response:
    data = await provider.get_block(hearth.db, cid, node=hearth.adds, metrics=hearth.metrics)
    return Response(data, media_type=OCTET_STREAM, headers={"ETag": f'"{cid}"'})


@router.head(
    BLOCKS + "/{cid}",
    response_class=Response,
    summary="Whether the service holds a block (Content-Length is its size)",
    responses=_block_responses("Held: the headers of GET, without the bytes."),
)
async def head_block(
    cid: Annotated[str, Path(description=_CID_TEXT, json_schema_extra=_CID_FORMAT)],
    _caller: CallerDep,
    hearth: HearthDep,
) -> Response:
    size = await provider.block_size(hearth.db, cid)
    return Response(
        status_code=200,
        headers={
            "Content-Type": OCTET_STREAM,
            "Content-Length": str(size),
            "ETag": f'"{cid}"',
        },
    )


@router.get(
    BLOCKS,
    response_model=BlockPage,
    summary="The blocks this project holds, oldest first",
    responses=errors(401, 422),
)
async def list_blocks(
    caller: CallerDep,
    hearth: HearthDep,
    cursor: Annotated[str | None, cursor_query(adds_store.CURSOR_PATTERN)] = None,
    limit: Annotated[int, Query(ge=1, le=1000, description=_LIMIT_TEXT)] = 100,
) -> JsonObject:
    async with hearth.db.read() as conn:
        page = await adds_store.list_blocks(conn, caller.project_id, cursor=cursor, limit=limit)
    return page.body()


# --- documents ----------------------------------------------------------------------------------


@router.post(
    DOCUMENTS,
    status_code=201,
    response_model=DocumentStored,
    summary="Submit a control document (validated and verified before it is kept)",
    responses={
        200: {"model": DocumentStored, "description": "The project already held it."},
        **errors(401, 422),
    },
    openapi_extra=_DOCUMENT_BODY,
)
async def submit_document(request: Request, caller: CallerDep, hearth: HearthDep) -> Response:
    created, cid, kind = await provider.submit_document(
        hearth.db, caller.project_id, await request.body()
    )
    return JSONResponse(
        {"cid": cid, "kind": kind},
        status_code=201 if created else 200,
        headers={"Location": f"{DOCUMENTS}/{cid}"},
    )


@router.get(
    DOCUMENTS + "/{cid}",
    response_class=Response,
    summary="A document's canonical bytes by CID (any authenticated caller)",
    responses={
        200: {"description": "The canonical (RFC 8785) bytes.", "content": {ADDS_JSON: _DOCUMENT}},
        **errors(400, 401, 404),
    },
)
async def get_document(
    cid: Annotated[str, Path(description=_CID_TEXT, json_schema_extra=_CID_FORMAT)],
    _caller: CallerDep,
    hearth: HearthDep,
) -> Response:
    return _adds_json(await provider.document_bytes(hearth.db, cid), cid)


@router.get(
    DOCUMENTS,
    response_model=DocumentPage,
    summary="The documents this project holds, oldest first, optionally of one kind",
    responses=errors(401, 422),
)
async def list_documents(
    caller: CallerDep,
    hearth: HearthDep,
    kind: DocumentKind | None = None,
    cursor: Annotated[str | None, cursor_query(adds_store.CURSOR_PATTERN)] = None,
    limit: Annotated[int, Query(ge=1, le=1000, description=_LIMIT_TEXT)] = 100,
) -> JsonObject:
    async with hearth.db.read() as conn:
        page = await adds_store.list_documents(
            conn, caller.project_id, kind=kind, cursor=cursor, limit=limit
        )
    return page.body()


# --- heads and inventory ------------------------------------------------------------------------


@router.get(
    "/v1/adds/heads/{head_id:path}",
    response_model=HeadResolutionView,
    summary="Resolve a head: the current head of (issuer key, head_id), and any fork",
    responses=errors(401, 404, 422),
)
async def resolve_head(
    head_id: str,
    issuer_key: Annotated[
        str,
        Query(
            description="the issuer's Ed25519 public key, base64url (43 characters)",
            pattern=_ISSUER_KEY_PATTERN,
        ),
    ],
    _caller: CallerDep,
    hearth: HearthDep,
) -> JsonObject:
    return await provider.resolve_head(hearth.db, head_id, issuer_key)


@router.get(
    "/v1/adds/inventory",
    response_model=AddsInventory,
    summary="What this project holds: blocks, and documents by kind",
    responses=errors(401),
)
async def inventory(caller: CallerDep, hearth: HearthDep) -> JsonObject:
    async with hearth.db.read() as conn:
        held = await adds_store.inventory(conn, caller.project_id)
    blocks_count, blocks_bytes = held["blocks"]
    by_kind = {
        kind: {"count": count, "bytes": size, "href": f"{DOCUMENTS}?kind={kind}"}
        for kind, (count, size) in held["documents"].items()
    }
    return {
        "blocks": {"count": blocks_count, "bytes": blocks_bytes, "href": BLOCKS},
        "documents": {
            "count": sum(v["count"] for v in by_kind.values()),
            "bytes": sum(v["bytes"] for v in by_kind.values()),
            "href": DOCUMENTS,
            "by_kind": by_kind,
        },
        "provider_record": "/v1/adds/provider-record",
    }


# --- the provider's own documents ---------------------------------------------------------------


@router.get(
    "/v1/adds/provider-record",
    response_class=Response,
    summary="The service's current signed provider record (public)",
    responses={
        200: {"description": "The record's canonical bytes.", "content": {ADDS_JSON: _DOCUMENT}},
        **errors(404, 503),
    },
)
async def provider_record(hearth: HearthDep) -> Response:
    # Reads the latest signed record, never signs one: nothing a request carries (its Host
    # included) reaches the record (services/provider_record.py).
    record = await provider.published_record(hearth.adds)
    if record is None:
        raise ApiError(
            404,
            "no_inventory",
            "The service has published no provider record: it holds no block yet.",
            hint="A provider record lists at least one item: it is signed when the first block "
            "is stored.",
        )
    return _adds_json(record.canonical, record.cid)


@router.post(
    "/v1/adds/receipts",
    status_code=201,
    # Not a collection (no GET lists receipts; they are kept as documents): the rule would name
    # it by its segment alone, as if it were an action.
    operation_id="adds_receipts_create",
    response_class=Response,
    summary="Ask for a signed storage receipt for items this project holds",
    responses={
        201: {
            "description": "The signed receipt's canonical bytes (also kept as a document).",
            "content": {ADDS_JSON: _DOCUMENT},
        },
        **errors(401, 409, 422, 503),
    },
)
async def receipt(
    body: ReceiptRequest, request: Request, caller: CallerDep, hearth: HearthDep
) -> Response:
    signed = await provider.issue_receipt(
        hearth.db,
        caller.project_id,
        body.items,
        Commitment(body.commitment),
        base_url(request, hearth),
        node=hearth.adds,
        settings=hearth.settings,
    )
    return _adds_json(
        signed.canonical, signed.cid, status=201, Location=f"{DOCUMENTS}/{signed.cid}"
    )
