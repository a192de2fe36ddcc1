"""POST /v1/identities/{id}/fork (docs/forks-templates.md, "Forks").

The route is thin: the keys are generated here (outside the transaction: generating them needs
no connection), and ``forks.fork`` does everything else in one transaction. A 402 is a refusal
under wall 2 (``no_auto_retry_payout``): the refused transaction has rolled back, and the refusal
is then recorded in the chronicle on the parent (wall 5), the one write a refused fork makes.
"""

from __future__ import annotations

from fastapi import APIRouter

from ..auth import CallerDep, HearthDep
from ..errors import ApiError
from ..json_types import JsonObject
from ..models_forks import ForkRequest, ForkResponse
from ..services import chronicle, forks, identities
from ..services.birth import ServerKeys
from .common import errors

router = APIRouter(tags=["forks"])


@router.post(
    "/v1/identities/{id}/fork",
    status_code=201,
    response_model=ForkResponse,
    responses=errors(401, 402, 404, 422),
    summary="Fork an identity of this project into a new agent (10 credits); the private key "
    "is answered once",
)
async def fork(id: str, body: ForkRequest, caller: CallerDep, hearth: HearthDep) -> JsonObject:
    server_keys = ServerKeys.generate()
    try:
        return await hearth.db.transaction(forks.fork, caller.project_id, id, body, server_keys)
    except ApiError as refused:
        if refused.status != 402:
            raise
        parent = await hearth.db.snapshot(identities.find, caller.project_id, id)
        raise await chronicle.record_refusal(
            hearth.db,
            refused,
            project_id=caller.project_id,
            identity_id=parent.id,
            text=f"Refused to fork {parent.name}",
            route="POST /v1/identities/{id}/fork",
            wall="no_auto_retry_payout",
        ) from None
