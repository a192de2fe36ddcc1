"""Wallets: balances and ledgers of the project's wallets, and funding one from another.

The rules are in ``services/wallets.py``; docs/service.md, "Wallets and vault", has the decisions.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Header, Path, Query, Response

from ..auth import CallerDep, HearthDep
from ..json_types import JsonObject
from ..models import FundRequest, FundResult, LedgerPage, WalletDetail, WalletList
from ..services import cursors, wallets
from .common import cursor_query, errors

router = APIRouter(tags=["wallets"])

# Parameter annotations are written out in each route, never shared (see routes/adds.py).
_WALLET_TEXT = "a wallet of this project (another project's wallets do not exist here)"


@router.get(
    "/v1/wallets",
    response_model=WalletList,
    summary="The project's wallets (one per identity), oldest first",
    responses=errors(401),
)
async def list_wallets(caller: CallerDep, hearth: HearthDep) -> JsonObject:
    return {"wallets": await hearth.db.snapshot(wallets.project_wallets, caller.project_id)}


@router.get(
    "/v1/wallets/{wallet_id}",
    response_model=WalletDetail,
    summary="One wallet, with its newest ledger entries",
    responses=errors(401, 404),
)
async def get_wallet(
    wallet_id: Annotated[str, Path(description=_WALLET_TEXT)],
    caller: CallerDep,
    hearth: HearthDep,
) -> JsonObject:
    return await hearth.db.snapshot(wallets.detail, caller.project_id, wallet_id)


@router.get(
    "/v1/wallets/{wallet_id}/ledger",
    response_model=LedgerPage,
    summary="A wallet's ledger, newest first",
    responses=errors(401, 404, 422),
)
async def get_ledger(
    wallet_id: Annotated[str, Path(description=_WALLET_TEXT)],
    caller: CallerDep,
    hearth: HearthDep,
    cursor: Annotated[str | None, cursor_query(cursors.PATTERN)] = None,
    limit: Annotated[int, Query(ge=1, le=1000, description="entries per page")] = 100,
) -> JsonObject:
    return await hearth.db.snapshot(
        wallets.ledger_page, caller.project_id, wallet_id, cursor, limit
    )


@router.post(
    "/v1/wallets/{wallet_id}/fund",
    status_code=201,
    response_model=FundResult,
    summary="Fund a wallet from another wallet of the project (idempotent)",
    description="Moves `amount` minor units of GBP from `source_wallet_id` into this wallet, "
    "both in the caller's project, in one transaction. Credits are never bought here: a 402 "
    "means the source cannot pay, and nothing moved. `Idempotency-Key` is required: repeating a "
    "request with the same key answers 200 with the transfer already made (`replayed`); the "
    "same key with a different request is 409 `idempotency_key_reused`.",
    responses={
        **errors(401, 402, 404, 409, 422),
        200: {"model": FundResult, "description": "A replay: the transfer this key made."},
    },
)
async def fund_wallet(
    *,
    wallet_id: Annotated[str, Path(description=_WALLET_TEXT)],
    body: FundRequest,
    idempotency_key: Annotated[
        str,
        Header(
            alias="Idempotency-Key",
            min_length=1,
            max_length=255,
            pattern=r"^[!-~]+$",
            description="caller-chosen, unique per transfer; printable ASCII",
        ),
    ],
    caller: CallerDep,
    hearth: HearthDep,
    response: Response,
) -> JsonObject:
    transfer, wallet, replayed = await hearth.db.transaction(
        wallets.fund,
        caller.project_id,
        wallet_id,
        source_id=body.source_wallet_id,
        amount=body.amount,
        idempotency_key=idempotency_key,
    )
    if replayed:
        response.status_code = 200
    return {"transfer": transfer, "wallet": wallet, "replayed": replayed}
