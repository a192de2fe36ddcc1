"""The provider node as an IPFS trustless gateway: ``GET`` and ``HEAD /ipfs/{cid}``.

Public, like the provider record: an IPFS client carries no bearer, and the blocks are
ciphertext whose readers are decided by grants (docs/service.md, "The IPFS trustless
gateway"). The blocks served are exactly those ``GET /v1/adds/blocks/{cid}`` serves: every
block the service holds for any project; never a document. Rules in ``services/ipfs_gateway.py``.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Request, Response

from ..auth import HearthDep
from ..json_types import JsonObject
from ..models import CID_PATTERN
from ..services import adds_store, provider
from ..services.ipfs_gateway import (
    CAR,
    CAR_CONTENT_TYPE,
    FILENAME_PATTERN,
    RAW,
    Format,
    car_of_block,
    car_size,
    negotiate,
)
from .common import errors

router = APIRouter(tags=["ipfs"])

PATH = "/ipfs/{cid}"
_CID_TEXT = "a CIDv1, raw codec, sha2-256, in lower-case base32 (the only CIDs served)"
_CID_FORMAT = {"pattern": CID_PATTERN}
_FORMAT_TEXT = (
    "raw: the block's bytes; car: a CARv1 holding the block. Takes precedence over Accept "
    f"({RAW} or {CAR}); one of the two is required."
)
_FORMATS = {"enum": [f.value for f in Format]}
_FILENAME_TEXT = (
    "The attachment's name in Content-Disposition (default: the CID with .bin or .car): "
    "letters, digits, '.', '_' and '-', at most 200."
)
Filename = Annotated[
    str | None, Query(description=_FILENAME_TEXT, pattern=FILENAME_PATTERN, max_length=200)
]
_BINARY = {"schema": {"type": "string", "format": "binary"}}


def _responses(description: str, *more: int) -> dict[int | str, JsonObject]:
    return {
        200: {"description": description, "content": {RAW: _BINARY, CAR_CONTENT_TYPE: _BINARY}},
        **errors(400, 404, *more),
    }


@router.get(
    PATH,
    response_class=Response,
    summary="A block as the IPFS trustless gateway answers it: raw, or in a CAR (public)",
    responses=_responses("The block (format=raw) or a CARv1 holding it (format=car).", 503),
)
async def get_block(
    cid: Annotated[str, Path(description=_CID_TEXT, json_schema_extra=_CID_FORMAT)],
    request: Request,
    hearth: HearthDep,
    format: Annotated[
        str | None, Query(description=_FORMAT_TEXT, json_schema_extra=_FORMATS)
    ] = None,
    filename: Filename = None,
) -> Response:
    adds_store.require_cid(cid)
    answer = negotiate(cid, format, request.headers.get("accept"), filename)
    data = await provider.get_block(hearth.db, cid, node=hearth.adds, metrics=hearth.metrics)
    body = data if answer.format is Format.RAW else car_of_block(cid, data)
    return Response(body, media_type=answer.content_type, headers=answer.headers)


@router.head(
    PATH,
    response_class=Response,
    summary="Whether the gateway serves a block: the headers of GET, without the bytes",
    responses=_responses("Served: the headers of GET (Content-Length included)."),
)
async def head_block(
    cid: Annotated[str, Path(description=_CID_TEXT, json_schema_extra=_CID_FORMAT)],
    request: Request,
    hearth: HearthDep,
    format: Annotated[
        str | None, Query(description=_FORMAT_TEXT, json_schema_extra=_FORMATS)
    ] = None,
    filename: Filename = None,
) -> Response:
    adds_store.require_cid(cid)
    answer = negotiate(cid, format, request.headers.get("accept"), filename)
    size = await provider.block_size(hearth.db, cid)
    length = size if answer.format is Format.RAW else car_size(size)
    headers = {**answer.headers, "Content-Type": answer.content_type}
    return Response(status_code=200, headers={**headers, "Content-Length": str(length)})
