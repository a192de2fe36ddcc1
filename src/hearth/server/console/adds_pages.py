"""The console's ADDS pages: the documents the project holds (objects, heads, receipts), each
with its canonical bytes and the validator's result (``hearth.adds.validate``)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Query
from fastapi.responses import HTMLResponse

from ...adds.kinds import KINDS
from ...adds.validate import validate
from ..auth import HearthDep
from ..errors import not_found
from ..services import adds_store
from .common import PAGE, Cursor, html, router
from .session import SessionDep


@router.get("/adds")
async def adds(
    session: SessionDep,
    hearth: HearthDep,
    kind: Annotated[str | None, Query(max_length=40)] = None,
    cursor: Cursor = None,
) -> HTMLResponse:
    async with hearth.db.read() as conn:
        documents = await adds_store.list_documents(
            conn,
            session.project_id,
            kind=kind if kind in KINDS else None,
            cursor=cursor,
            limit=PAGE,
        )
        blocks = await adds_store.list_blocks(conn, session.project_id, cursor=None, limit=PAGE)
    return html(
        "adds.html",
        session,
        documents=documents,
        blocks=blocks,
        kind=kind or "",
        kinds=tuple(KINDS),
    )


@router.get("/adds/{cid}")
async def adds_document(cid: str, session: SessionDep, hearth: HearthDep) -> HTMLResponse:
    async with hearth.db.read() as conn:
        held = await adds_store.held(conn, session.project_id, [cid])
        raw = await adds_store.document_bytes(conn, cid) if cid in held.roles else None
    if raw is None or held.roles.get(cid) == "block":
        raise not_found("Document")
    result = validate(raw)
    return html(
        "adds_document.html",
        session,
        cid=cid,
        role=held.roles[cid],
        text=raw.decode("utf-8", errors="replace"),
        result=result,
    )
