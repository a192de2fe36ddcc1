"""The bridge WebSocket of bridged runtimes (docs/bridge.md).

``GET /v1/runtimes/{id}/bridge`` upgrades only for the runtime's current control token, on a
bridged runtime that is not deleted; every other attempt is refused before the upgrade with an
ordinary HTTP answer in the service's error shape (401, 403, 404), so a client sees a status
and a JSON body rather than a WebSocket that opens and closes. After the upgrade the
handshake and the reply loop are ``bridge.connection.serve``.

WebSocket routes are not part of the OpenAPI document (it describes HTTP operations only); the
protocol is written down in docs/bridge.md.
"""

from __future__ import annotations

from fastapi import APIRouter, WebSocket

from ..bridge import connection, hub_for, store
from ..context import Hearth
from ..errors import ApiError

router = APIRouter(tags=["bridge"])


@router.websocket("/v1/runtimes/{runtime_id}/bridge")
async def bridge(websocket: WebSocket, runtime_id: str) -> None:
    hearth: Hearth = websocket.app.state.hearth
    token, subprotocol = connection.control_token_of(websocket)
    try:
        runtime = await hearth.db.snapshot(store.admit, runtime_id, token)
    except ApiError as refusal:
        response = refusal.response()
        # The service middleware decorates HTTP responses only; a denial is one too.
        response.headers["X-Welcomed"] = "5"
        await websocket.send_denial_response(response)
        return
    assert token is not None
    await connection.serve(
        websocket, hearth, hub_for(websocket.app), runtime, token=token, subprotocol=subprotocol
    )
