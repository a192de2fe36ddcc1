"""Wallets: integer minor units of GBP, an append-only ledger, never below zero."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import Connection, bindparam, update

from ..db.engine import utcnow
from ..db.tables import ledger, wallets

CURRENCY = "GBP"


def open_wallet(
    conn: Connection, project_id: str, identity_id: str | None, name: str
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
    conn.execute(_OPEN, row)
    return row


def credit(conn: Connection, wallet_id: str, amount: int, reason: str) -> None:
    """Ledger entry and balance in one transaction (the caller's)."""
    if amount <= 0:
        raise ValueError("a credit is positive")
    conn.execute(
        _ENTRY,
        {
            "id": str(uuid.uuid4()),
            "wallet_id": wallet_id,
            "amount": amount,
            "reason": reason,
            "created_at": utcnow(),
        },
    )
    conn.execute(_ADD, {"wallet": wallet_id, "amount": amount})


# Built once: a statement built per call costs more than executing it.
_OPEN = wallets.insert()
_ENTRY = ledger.insert()
_ADD = (
    update(wallets)
    .where(wallets.c.id == bindparam("wallet"))
    .values(balance=wallets.c.balance + bindparam("amount"))
)


def wallet_view(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": row["id"],
        "name": row["name"],
        "balance": row["balance"],
        "currency": row["currency"],
    }
