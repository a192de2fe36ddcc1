"""Mounting the console on the app: its pages and forms, its static files, its headers, and the
redirect to sign-in for a page asked for without a session."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import Response
from fastapi.staticfiles import StaticFiles

from . import actions, adds_pages, live, pages
from .common import router, see_other
from .render import STATIC
from .security import ConsoleHeaders
from .session import PATH, SignInNeeded

# The modules that add routes to ``router`` (imported for that).
_ROUTES = (actions, adds_pages, live, pages)


async def _sign_in_first(_request: Request, _exc: Exception) -> Response:
    return see_other(f"{PATH}/sign-in")


def install(app: FastAPI) -> None:
    app.mount(f"{PATH}/static", StaticFiles(directory=STATIC), name="console-static")
    app.include_router(router)
    app.add_exception_handler(SignInNeeded, _sign_in_first)
    app.add_middleware(ConsoleHeaders)
