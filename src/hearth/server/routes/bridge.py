"""The bridge WebSocket of bridged runtimes (docs/bridge.md).

``GET /v1/runtimes/{id}/bridge`` upgrades only for the runtime's current control token, on a
bridged runtime that is not deleted; every other attempt is refused before the upgrade with an
ordinary HTTP answer in the service's error shape (401, 403, 404), so a client sees a status
and a JSON body rather than a WebSocket that opens and closes. After the upgrade the
handshake and the reply loop are ``bridge.connection.serve``.

The same path answers a plain HTTP GET (no upgrade) with the same checks, then 426
``upgrade_required``: the path exists for HTTP clients too, other methods get 405 with
``Allow: GET``, and the OpenAPI document describes the upgrade on this operation (101, the
handshake headers, and the frames in ``x-websocket``; ``bridge/frames.py``). The protocol is
written down in docs/bridge.md.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request, Response, WebSocket
from fastapi.openapi.models import HTTPBearer as HTTPBearerModel
from fastapi.security.base import SecurityBase

from ..auth import HearthDep
from ..bridge import connection, frames, hub_for, store
from ..context import Hearth
from ..error_handlers import response_of
from ..errors import ApiError
from .common import errors

router = APIRouter(tags=["bridge"])

PATH = "/v1/runtimes/{runtime_id}/bridge"


class ControlToken(SecurityBase):
    """The runtime's control token as a security scheme of its own: a bridge holds the token of
    one runtime, never the project bearer. Absent, it is None, and ``store.admit`` refuses."""

    def __init__(self) -> None:
        self.model = HTTPBearerModel(
            description="A bridged runtime's control token: answered once by POST /v1/runtimes "
            "and replaced by POST /v1/runtimes/{id}/control-token. A client that cannot set "
            "headers offers the subprotocol `hearth-bridge.token.<control token>` instead."
        )
        self.scheme_name = "controlToken"

    async def __call__(self, request: Request) -> str | None:
        return connection.control_token_of(request)[0]


_HANDSHAKE = {
    name: {"description": text, "schema": {"type": "string"}}
    for name, text in (
        ("Upgrade", "`websocket`"),
        ("Connection", "`Upgrade`"),
        ("Sec-WebSocket-Accept", "RFC 6455, from the request's Sec-WebSocket-Key"),
        ("Sec-WebSocket-Protocol", "`hearth-bridge.v1` when the client offered it"),
    )
}


@router.get(
    PATH,
    status_code=101,
    response_class=Response,
    operation_id="runtimes_bridge_connect",
    summary="The bridge's WebSocket: upgrade with the control token; a plain GET gets 426",
    description="A WebSocket upgrade (RFC 6455: `Connection: Upgrade`, `Upgrade: websocket`, "
    "`Sec-WebSocket-Key`, `Sec-WebSocket-Version: 13`, optionally `Sec-WebSocket-Protocol: "
    "hearth-bridge.v1`). Refusals come before the upgrade, in the error shape: 401 without a "
    "token or with one that is not the runtime's current one, 404 for no such (or a deleted) "
    "runtime, 403 when it is not bridged. Without the upgrade, a request that passes those "
    "checks is answered 426. After the upgrade the frames are those of `x-websocket` "
    "(docs/bridge.md).",
    responses={
        101: {"description": "Switching Protocols: the WebSocket is open.", "headers": _HANDSHAKE},
        **errors(401, 403, 404, 426),
    },
    openapi_extra={"x-websocket": frames.EXTENSION},
)
async def bridge_without_upgrade(
    runtime_id: str,
    hearth: HearthDep,
    token: Annotated[str | None, Depends(ControlToken())],
) -> Response:
    await hearth.db.snapshot(store.admit, runtime_id, token)
    raise ApiError(
        426,
        "upgrade_required",
        "This path is the bridge's WebSocket: connect with a WebSocket upgrade.",
        docs="/v1/openapi.json",
        headers={"Upgrade": "websocket"},
    )


@router.websocket(PATH)
async def bridge(websocket: WebSocket, runtime_id: str) -> None:
    hearth: Hearth = websocket.app.state.hearth
    token, subprotocol = connection.control_token_of(websocket)
    try:
        runtime = await hearth.db.snapshot(store.admit, runtime_id, token)
    except ApiError as refusal:
        # Not an HTTP scope, so the middleware that counts refusals never sees this one.
        hearth.metrics.refusals.labels(refusal.error).inc()
        response = response_of(refusal)
        # The service middleware decorates HTTP responses only; a denial is one too.
        response.headers["X-Welcomed"] = "5"
        await websocket.send_denial_response(response)
        return
    assert token is not None
    await connection.serve(
        websocket,
        hub_for(websocket.app),
        runtime,
        token=token,
        subprotocol=subprotocol,
        db=hearth.db,
        events=hearth.events,
        metrics=hearth.metrics,
        master_key=hearth.settings.kms_master_key,
    )
