"""The console's pages (GET): each one the services of the JSON routes, in one read snapshot,
every listing paged (``limit`` + ``cursor``)."""

from __future__ import annotations

from typing import Annotated, get_args

from fastapi import Query
from fastapi.responses import HTMLResponse
from sqlalchemy import Connection

from ..auth import HearthDep
from ..errors import ApiError
from ..json_types import JsonObject
from ..memory_tiers import TIERS
from ..models_runtimes import Region
from ..routes.wake import cached_wake
from ..runtime_states import MOVES, STATES
from ..services import (
    chronicle,
    console_views,
    cursors,
    identities,
    inbox,
    keys,
    memories,
    memory_search,
    runtimes,
    templates,
    wallets,
)
from .common import PAGE, Cursor, html, router
from .session import SessionDep
from .states import machine


@router.get("")
async def overview(session: SessionDep, hearth: HearthDep, cursor: Cursor = None) -> HTMLResponse:
    def run(conn: Connection) -> JsonObject:
        rows, next_cursor = console_views.identities_page(conn, session.project_id, cursor, PAGE)
        return {
            "identities": rows,
            "next_cursor": next_cursor,
            "custody": console_views.custody(conn, session.project_id, [r.id for r in rows]),
            "wallets": wallets.project_wallets(conn, session.project_id),
        }

    data = await hearth.db.snapshot(run)
    async with hearth.db.read() as conn:
        project_keys = await keys.active(conn, session.project_id)
    return html("overview.html", session, keys=project_keys, **data)


@router.get("/identities/{identity_id}")
async def identity(  # noqa: PLR0917 - FastAPI reads query parameters from the signature
    identity_id: str,
    session: SessionDep,
    hearth: HearthDep,
    q: Annotated[str | None, Query(max_length=500)] = None,
    tier: Annotated[str | None, Query(max_length=40)] = None,
    cursor: Cursor = None,
    chronicle_cursor: Cursor = None,
    inbox_cursor: Cursor = None,
) -> HTMLResponse:
    project_id = session.project_id
    tier = tier if tier in TIERS else None
    meaning = None
    if q and hearth.semantic is not None:
        # As GET /v1/memories/search does: the query's meaning, when semantic search is on.
        try:
            memory_search.parse(q)
            meaning = await hearth.semantic.meaning(project_id, q)
        except ApiError:
            meaning = None  # refused again, and said on the page, below

    def run(conn: Connection) -> JsonObject:
        row = identities.find(conn, project_id, identity_id)
        search_error = None
        if q:
            try:
                hits = memory_search.search(
                    conn,
                    project_id,
                    q,
                    identity_id=row.id,
                    tier=tier,
                    cursor=cursor,
                    limit=PAGE,
                    meaning=meaning,
                )
                # Each hit as a memory of the listing, its snippet beside it.
                found = cursors.Page(
                    [{**hit["memory"], "snippet": hit["snippet"]} for hit in hits.items],
                    hits.next_cursor,
                )
            except ApiError as refusal:  # a query that does not parse: said on the page
                search_error, found = refusal.message, None
        else:
            found = memories.listing(
                conn, project_id, tier=tier, identity_id=row.id, cursor=cursor, limit=PAGE
            )
        return {
            "identity": row,
            "authority": identities.authority_view(row),
            "shaping": memories.shaping(conn, row),
            "declared": identities.expression_view(row.expression),
            "memories": found,
            "search_error": search_error,
            "chronicle": chronicle.entries(
                conn, project_id, identity_id=row.id, cursor=chronicle_cursor, limit=20
            ),
            "inbox": inbox.listing(
                conn, project_id, row.id, status=None, cursor=inbox_cursor, limit=20
            ),
            "forks": console_views.forks_of(conn, project_id, row.id, 20),
            "templates": templates.listing(conn, project_id, None, 20),
        }

    data = await hearth.db.snapshot(run)
    wake, _, _, _ = await cached_wake(hearth, project_id, data["identity"].id, "md")
    return html(
        "identity.html",
        session,
        wake=wake.decode("utf-8"),
        q=q or "",
        tier=tier or "",
        tiers=TIERS,
        **data,
    )


@router.get("/memories/{memory_id}")
async def memory(memory_id: str, session: SessionDep, hearth: HearthDep) -> HTMLResponse:
    def run(conn: Connection) -> JsonObject:
        return {
            "memory": memories.read(conn, session.project_id, memory_id),
            "history": memories.history(conn, session.project_id, memory_id),
        }

    return html("memory.html", session, **(await hearth.db.snapshot(run)))


@router.get("/runtimes")
async def runtime_list(
    session: SessionDep, hearth: HearthDep, cursor: Cursor = None
) -> HTMLResponse:
    found = await hearth.db.snapshot(
        runtimes.listing, session.project_id, cursor=cursor, limit=PAGE
    )
    return html("runtimes.html", session, runtimes=found)


@router.get("/runtimes/{runtime_id}")
async def runtime(
    runtime_id: str, session: SessionDep, hearth: HearthDep, cursor: Cursor = None
) -> HTMLResponse:
    def run(conn: Connection) -> JsonObject:
        return {
            "runtime": runtimes.read(conn, session.project_id, runtime_id),
            "events": runtimes.events(
                conn, session.project_id, runtime_id, cursor=cursor, limit=PAGE
            ),
        }

    data = await hearth.db.snapshot(run)
    return html(
        "runtime.html",
        session,
        machine=machine(data["runtime"]["status"]),
        moves=MOVES.values(),
        states=STATES,
        regions=get_args(Region),
        **data,
    )


@router.get("/runtimes/{runtime_id}/delete")
async def runtime_delete_confirm(
    runtime_id: str, session: SessionDep, hearth: HearthDep
) -> HTMLResponse:
    found = await hearth.db.snapshot(runtimes.read, session.project_id, runtime_id)
    return html("runtime_delete.html", session, runtime=found)


@router.get("/wallets/{wallet_id}")
async def wallet(
    wallet_id: str, session: SessionDep, hearth: HearthDep, cursor: Cursor = None
) -> HTMLResponse:
    def run(conn: Connection) -> JsonObject:
        return {
            "wallet": wallets.detail(conn, session.project_id, wallet_id),
            "ledger": wallets.ledger_page(conn, session.project_id, wallet_id, cursor, PAGE),
        }

    return html("wallet.html", session, **(await hearth.db.snapshot(run)))
