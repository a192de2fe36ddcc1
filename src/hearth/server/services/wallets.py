"""Wallets: integer minor units of GBP, an append-only ledger, never below zero."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncConnection

from ..db.engine import utcnow
from ..db.tables import ledger, wallets

CURRENCY = "GBP"


async def open_wallet(
    conn: AsyncConnection, project_id: str, identity_id: str | None, name: str
) -> dict[str, Any]:
    row = {
        "id": str(uuid.uuid4()),
        "project_id": project_id,
        "identity_id": identity_id,
        "name": name,
        "currency": CURRENCY,
        "balance": 0,
        "created_at": utcnow(),
    }
    await conn.execute(wallets.insert().values(**row))
    return row


async def credit(conn: AsyncConnection, wallet_id: str, amount: int, reason: str) -> None:
    """Ledger entry and balance in one transaction (the caller's)."""
    if amount <= 0:
        raise ValueError("a credit is positive")
    await conn.execute(
        ledger.insert().values(
            id=str(uuid.uuid4()),
            wallet_id=wallet_id,
            amount=amount,
            reason=reason,
            created_at=utcnow(),
        )
    )
    await conn.execute(
        update(wallets).where(wallets.c.id == wallet_id).values(balance=wallets.c.balance + amount)
    )


def wallet_view(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": row["id"],
        "name": row["name"],
        "balance": row["balance"],
        "currency": row["currency"],
    }
