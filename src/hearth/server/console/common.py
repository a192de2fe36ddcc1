"""What every console page shares: the router, the HTML answer, the paging limits."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.responses import HTMLResponse, RedirectResponse

from ..services.console_sessions import ConsoleSession
from .render import page

# Pages, not API operations: kept out of the OpenAPI document (and so out of the SDK's reach
# check, the fuzzer and the change table, which are about /v1).
router = APIRouter(prefix="/console", include_in_schema=False)

PAGE = 50  # rows per page of every listing
Cursor = Annotated[str | None, Query(max_length=200)]


def html(
    template: str, session: ConsoleSession | None, status: int = 200, **context: Any
) -> HTMLResponse:
    body = page(template, session=session, **context)
    # A page holds the project's data: no cache keeps it after sign-out.
    return HTMLResponse(body, status_code=status, headers={"Cache-Control": "no-store"})


def see_other(url: str) -> RedirectResponse:
    return RedirectResponse(url, status_code=303)
