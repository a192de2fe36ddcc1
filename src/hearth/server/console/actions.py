"""The console's forms (POST): signing in and out, keys, runtimes. Each checks its session's form
token and origin first (session.py), then calls the same service as the JSON route, and
announces the same change on the voice stream as that route would (the change feed watches
/v1 only)."""

from __future__ import annotations

import json

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import ValidationError

from ..auth import HearthDep
from ..bridge import hub_for
from ..context import Hearth
from ..db.engine import utcnow
from ..errors import not_found
from ..events import Change
from ..json_types import JsonObject
from ..models import KeyCreate
from ..models_runtimes import RuntimePatch
from ..services import console_sessions, keys, runtimes
from ..services.console_sessions import ConsoleSession
from ..services.times import iso
from .common import html, router, see_other
from .session import (
    COOKIE,
    PATH,
    SessionDep,
    check_origin,
    checked_form,
    optional_session,
    over_tls,
    read_form,
)


async def announce(
    hearth: Hearth, session: ConsoleSession, identity_id: str | None, kind: str, details: JsonObject
) -> None:
    key = "you_run" if kind.startswith("runtime_") else "you"
    await hearth.events.publish(
        Change(session.project_id, identity_id, key, kind, details, iso(utcnow()) or "")
    )


@router.get("/sign-in")
async def sign_in_page(request: Request, hearth: HearthDep) -> Response:
    if await optional_session(request, hearth) is not None:
        return see_other(PATH)
    return html("sign_in.html", None)


@router.post("/sign-in")
async def sign_in(request: Request, hearth: HearthDep) -> Response:
    # No session yet, so no form token: the origin check and the cookie's SameSite=Strict keep
    # another site from signing a browser in (docs/console.md, "Forms").
    check_origin(request, hearth.settings.public_base_url)
    fields = await read_form(request)
    opened = await hearth.db.transaction(
        console_sessions.open_session,
        fields.get("bearer", "").strip(),
        hours=hearth.settings.console_session_hours,
    )
    if opened is None:
        return html(
            "sign_in.html", None, 401, error="That is not a live project key (unknown or revoked)."
        )
    previous = request.cookies.get(COOKIE)
    if previous:
        # Signing in again (another key, or the same) replaces the browser's session: the old
        # one is closed, not left to expire.
        await hearth.db.transaction(console_sessions.close, previous)
    response = RedirectResponse(PATH, status_code=303)
    response.set_cookie(
        COOKIE,
        opened.session_id,
        max_age=int(hearth.settings.console_session_hours * 3600),
        path=PATH,
        secure=over_tls(request, hearth.settings.public_base_url),
        httponly=True,
        samesite="strict",
    )
    return response


@router.post("/sign-out")
async def sign_out(request: Request, session: SessionDep, hearth: HearthDep) -> Response:
    await checked_form(request, session, hearth.settings.public_base_url)
    await hearth.db.transaction(console_sessions.close, request.cookies.get(COOKIE, ""))
    response = see_other(f"{PATH}/sign-in")
    response.delete_cookie(COOKIE, path=PATH, httponly=True, samesite="strict")
    return response


@router.post("/keys")
async def create_key(request: Request, session: SessionDep, hearth: HearthDep) -> HTMLResponse:
    fields = await checked_form(request, session, hearth.settings.public_base_url)
    try:
        body = KeyCreate.model_validate({"name": fields.get("name", "")})
    except ValidationError as invalid:
        raise RequestValidationError(invalid.errors()) from None
    issued = await hearth.db.transaction(keys.issue, session.project_id, body.name)
    await announce(hearth, session, None, "key_created", {"key_id": issued.id})
    # Shown once, on this answer only (no-store): it is never stored or shown again.
    return html("key_created.html", session, key=issued.record(), secret=issued.secret)


@router.post("/keys/{key_id}/revoke")
async def revoke_key(
    key_id: str, request: Request, session: SessionDep, hearth: HearthDep
) -> Response:
    await checked_form(request, session, hearth.settings.public_base_url)
    async with hearth.db.write() as conn:
        if not await keys.revoke(conn, session.project_id, key_id):
            raise not_found("Key")
    await announce(hearth, session, None, "key_revoked", {"key_id": key_id})
    return see_other(PATH)


@router.post("/runtimes/{runtime_id}")
async def patch_runtime(
    runtime_id: str, request: Request, session: SessionDep, hearth: HearthDep
) -> Response:
    fields = await checked_form(request, session, hearth.settings.public_base_url)
    patch: JsonObject = {}
    for name in ("name", "region"):
        if fields.get(name, "").strip():
            patch[name] = fields[name].strip()
    llm = {
        part: fields[f"llm_{part}"].strip()
        for part in ("provider", "model", "vault_key")
        if fields.get(f"llm_{part}", "").strip()
    }
    if llm:
        patch["llm"] = llm  # merged into the stored llm, as PATCH /v1/runtimes/{id} merges it
    if fields.get("advertised_url", "").strip():
        patch["bridge"] = {"advertised_url": fields["advertised_url"].strip()}
    if fields.get("metadata", "").strip():
        try:
            patch["metadata"] = json.loads(fields["metadata"])
        except ValueError:
            raise RequestValidationError(
                [{"loc": ("form", "metadata"), "msg": "metadata is not JSON", "type": "json"}]
            ) from None
    try:
        checked = RuntimePatch.model_validate(patch).model_dump(exclude_unset=True)
    except ValidationError as invalid:
        raise RequestValidationError(invalid.errors()) from None
    updated = await hearth.db.transaction(
        runtimes.update_runtime, session.project_id, runtime_id, checked
    )
    await announce(
        hearth, session, updated["identity_id"], "runtime_updated", {"runtime_id": runtime_id}
    )
    return see_other(f"{PATH}/runtimes/{runtime_id}")


@router.post("/runtimes/{runtime_id}/restart")
async def restart_runtime(
    runtime_id: str, request: Request, session: SessionDep, hearth: HearthDep
) -> Response:
    await checked_form(request, session, hearth.settings.public_base_url)
    restarted = await hearth.db.transaction(runtimes.restart, session.project_id, runtime_id)
    await announce(
        hearth,
        session,
        restarted["identity_id"],
        "runtime_restarted",
        {"runtime_id": runtime_id, "status": restarted["status"]},
    )
    return see_other(f"{PATH}/runtimes/{runtime_id}")


@router.post("/runtimes/{runtime_id}/delete")
async def delete_runtime(
    runtime_id: str, request: Request, session: SessionDep, hearth: HearthDep
) -> Response:
    fields = await checked_form(request, session, hearth.settings.public_base_url)
    if fields.get("confirm") != runtime_id:
        # The confirmation step: the form carries the id it was shown for.
        return see_other(f"{PATH}/runtimes/{runtime_id}/delete")
    deleted = await hearth.db.transaction(runtimes.soft_delete, session.project_id, runtime_id)
    await hub_for(request.app).disconnect(deleted["id"], "the runtime was deleted")
    await announce(
        hearth, session, deleted["identity_id"], "runtime_deleted", {"runtime_id": runtime_id}
    )
    return see_other(f"{PATH}/runtimes")
