"""Wallets: integer minor units of GBP, an append-only ledger, never below zero.

One credit is one minor unit (a penny): the fork's "10 credits" are 10 minor units. A balance
only moves by one statement each way: ``credit`` adds, ``debit`` takes only if the balance covers
the amount (one conditional UPDATE, so of many concurrent debits exactly those that fit win, on
SQLite and PostgreSQL alike), and each move writes its ledger entry in the same transaction. The
table's CHECK (balance >= 0) stands behind both. A refused payment is 402 ``insufficient_credits``
and nothing else: no top-up, no retry, no other wallet tried (wall 2, ``no_auto_retry_payout``).
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from sqlalchemy import Connection, RowMapping, bindparam, select, update
from sqlalchemy.dialects import postgresql, sqlite

from ..db import direct
from ..db.engine import utcnow
from ..db.ids import new_id
from ..db.rows import LedgerRow, WalletRow
from ..db.tables import ledger, wallet_transfers, wallets
from ..errors import DOCS, ApiError, not_found
from ..json_types import JsonObject
from .cursors import newest_first_equal
from .times import iso

CURRENCY = "GBP"
MINOR_UNITS_PER_CREDIT = 1
FORK_COST = 10 * MINOR_UNITS_PER_CREDIT
# The largest amount one fund request moves: 10,000.00 GBP.
MAX_FUND_MINOR = 1_000_000
RECENT_ENTRIES = 10


def open_wallet(
    conn: Connection,
    project_id: str,
    identity_id: str | None,
    name: str,
    *,
    opening: int = 0,
    reason: str = "opening",
) -> WalletRow:
    """A new wallet; with ``opening`` > 0 it starts with that balance and its ledger entry
    (two statements rather than an insert, an entry and an update)."""
    if opening < 0:
        raise ValueError("an opening balance is not negative")
    wallet_id = new_id()
    row = {
        "id": wallet_id,
        "project_id": project_id,
        "identity_id": identity_id,
        "name": name,
        "currency": CURRENCY,
        "balance": opening,
        "created_at": utcnow(),
    }
    direct.run(conn, _OPEN, row)
    if opening > 0:
        _entry(conn, wallet_id, opening, reason)
    return WalletRow.of(row)


def credit(conn: Connection, wallet_id: str, amount: int, reason: str) -> None:
    """Ledger entry and balance in one transaction (the caller's)."""
    if amount <= 0:
        raise ValueError("a credit is positive")
    _entry(conn, wallet_id, amount, reason)
    conn.execute(_ADD, {"wallet": wallet_id, "amount": amount})


def _entry(conn: Connection, wallet_id: str, amount: int, reason: str) -> None:
    direct.run(
        conn,
        _ENTRY,
        {
            "id": new_id(),
            "wallet_id": wallet_id,
            "amount": amount,
            "reason": reason,
            "created_at": utcnow(),
        },
    )


# Built once: a statement built per call costs more than executing it.
_OPEN = wallets.insert()
_ENTRY = ledger.insert()
_ADD = (
    update(wallets)
    .where(wallets.c.id == bindparam("wallet"))
    .values(balance=wallets.c.balance + bindparam("amount"))
)


def wallet_view(row: WalletRow) -> JsonObject:
    return {
        "id": row.id,
        "name": row.name,
        "balance": row.balance,
        "currency": row.currency,
    }


def wallet_record(row: WalletRow) -> JsonObject:
    """A wallet as the wallet routes answer it."""
    return {
        "id": row.id,
        "name": row.name,
        "balance": row.balance,
        "currency": row.currency,
        "identity_id": row.identity_id,
        "created_at": iso(row.created_at),
    }


def entry_view(row: LedgerRow) -> JsonObject:
    return {
        "id": row.id,
        "amount": row.amount,
        "reason": row.reason,
        "created_at": iso(row.created_at),
    }


# --- spending -----------------------------------------------------------------------------------


def debit(conn: Connection, wallet_id: str, amount: int, reason: str) -> bool:
    """Take ``amount`` if the balance covers it: one conditional UPDATE, then the (negative)
    ledger entry only when it won. False, with nothing written, when it did not."""
    if amount <= 0:
        raise ValueError("a debit is positive")
    if conn.execute(_TAKE, {"wallet": wallet_id, "amount": amount}).rowcount != 1:
        return False
    _entry(conn, wallet_id, -amount, reason)
    return True


def paying_wallet(
    conn: Connection, project_id: str, identity_id: str | None = None
) -> WalletRow | None:
    """The identity's wallet when it has one in the project, else the project's first (oldest)."""
    if identity_id is not None:
        row = conn.execute(_IDENTITY_WALLET, {"project": project_id, "identity": identity_id})
        found = row.first()
        if found is not None:
            return WalletRow.of(found._mapping)
    first = conn.execute(_FIRST_WALLET, {"project": project_id}).first()
    return WalletRow.of(first._mapping) if first is not None else None


def charge(
    conn: Connection,
    project_id: str,
    amount: int,
    reason: str,
    *,
    identity_id: str | None = None,
) -> WalletRow:
    """Pay ``amount`` minor units from one wallet (``paying_wallet``) inside the caller's
    transaction; the wallet after paying. 402 ``insufficient_credits`` when it cannot pay:
    nothing is taken, and no other wallet is tried."""
    wallet = paying_wallet(conn, project_id, identity_id)
    if wallet is None:
        raise insufficient_credits(None, 0, amount)
    if not debit(conn, wallet.id, amount, reason):
        raise insufficient_credits(wallet.id, _balance(conn, wallet.id), amount)
    return replace(wallet, balance=_balance(conn, wallet.id))


def insufficient_credits(wallet_id: str | None, balance: int, required: int) -> ApiError:
    return ApiError(
        402,
        "insufficient_credits",
        f"This needs {required} minor units of {CURRENCY}; the wallet holds {balance}.",
        details={
            "wallet_id": wallet_id,
            "balance": balance,
            "required": required,
            "currency": CURRENCY,
        },
        hint="Nothing was charged. A 402 buys nothing and is not retried for you: move credits "
        "into the wallet (POST /v1/wallets/{wallet_id}/fund) and send the request again.",
        docs=DOCS,
    )


def _balance(conn: Connection, wallet_id: str) -> int:
    return int(conn.execute(_BALANCE, {"wallet": wallet_id}).scalar_one())


# --- reading ------------------------------------------------------------------------------------


def find(conn: Connection, project_id: str, wallet_id: str) -> WalletRow:
    """The wallet in this project, or 404: another project's wallet does not exist here."""
    try:
        canonical = str(uuid.UUID(wallet_id))
    except ValueError:
        raise not_found("Wallet") from None
    row = conn.execute(_FIND, {"wallet": canonical, "project": project_id}).first()
    if row is None:
        raise not_found("Wallet")
    return WalletRow.of(row._mapping)


def project_wallets(conn: Connection, project_id: str) -> list[JsonObject]:
    return [
        wallet_record(WalletRow.of(r._mapping))
        for r in conn.execute(_LIST, {"project": project_id})
    ]


def detail(conn: Connection, project_id: str, wallet_id: str) -> JsonObject:
    wallet = find(conn, project_id, wallet_id)
    entries, next_cursor = _entries(conn, wallet.id, None, RECENT_ENTRIES)
    return {
        **wallet_record(wallet),
        "recent_entries": entries,
        "ledger": f"/v1/wallets/{wallet.id}/ledger"
        + (f"?cursor={next_cursor}" if next_cursor else ""),
    }


def ledger_page(
    conn: Connection, project_id: str, wallet_id: str, cursor: str | None, limit: int
) -> JsonObject:
    """The wallet's ledger, newest first, ``limit`` entries after ``cursor``."""
    wallet = find(conn, project_id, wallet_id)
    entries, next_cursor = _entries(conn, wallet.id, cursor, limit)
    return {"wallet_id": wallet.id, "items": entries, "next_cursor": next_cursor}


def _entries(
    conn: Connection, wallet_id: str, cursor: str | None, limit: int
) -> tuple[list[JsonObject], str | None]:
    rows, next_cursor = newest_first_equal(
        conn, ledger, {"wallet_id": wallet_id}, cursor, limit, build=LedgerRow.of
    )
    return [entry_view(row) for row in rows], next_cursor


# --- funding ------------------------------------------------------------------------------------


def fund(
    conn: Connection,
    project_id: str,
    target_id: str,
    *,
    source_id: str,
    amount: int,
    idempotency_key: str,
) -> tuple[JsonObject, JsonObject, bool]:
    """Move ``amount`` from one of the project's wallets to another: (transfer, target wallet
    after, replayed). The idempotency key is claimed first, in the same transaction: a repeat
    with the same key and request finds the transfer already made (``replayed``); the same key
    with another request is 409. A source that cannot pay is 402 and claims nothing."""
    if not 0 < amount <= MAX_FUND_MINOR:
        raise ValueError("amount out of range")
    target = find(conn, project_id, target_id)
    source = find(conn, project_id, source_id)
    if source.id == target.id:
        raise ApiError(
            422, "same_wallet", "A wallet cannot fund itself: name another source_wallet_id."
        )
    transfer = {
        "id": new_id(),
        "project_id": project_id,
        "idempotency_digest": _digest(idempotency_key),
        "request_digest": _digest(f"{source.id}\x00{target.id}\x00{amount}"),
        "source_wallet_id": source.id,
        "target_wallet_id": target.id,
        "amount": amount,
        "created_at": utcnow(),
    }
    if conn.execute(_CLAIM_TRANSFER[conn.dialect.name], transfer).rowcount != 1:
        found = conn.execute(
            _FIND_TRANSFER,
            {"project": project_id, "digest": transfer["idempotency_digest"]},
        ).one()
        if found.request_digest != transfer["request_digest"]:
            raise ApiError(
                409,
                "idempotency_key_reused",
                "This Idempotency-Key was already used for a different fund request.",
                details={"transfer_id": found.id},
                hint="Use a new Idempotency-Key for a new transfer; repeat a key only to "
                "repeat the identical request.",
            )
        return transfer_view(found._mapping), wallet_record(find(conn, project_id, target_id)), True
    # Both rows are updated in id order, so that two opposite transfers cannot deadlock.
    for wallet_id in sorted((source.id, target.id)):
        if wallet_id == target.id:
            credit(conn, wallet_id, amount, "transfer_in")
        elif not debit(conn, wallet_id, amount, "transfer_out"):
            raise insufficient_credits(wallet_id, _balance(conn, wallet_id), amount)
    target = replace(target, balance=_balance(conn, target.id))
    return transfer_view(transfer), wallet_record(target), False


def transfer_view(row: RowMapping | Mapping[str, Any]) -> JsonObject:
    """A transfer's answer, from its row (or the values just inserted)."""
    return {
        "id": row["id"],
        "source_wallet_id": row["source_wallet_id"],
        "target_wallet_id": row["target_wallet_id"],
        "amount": row["amount"],
        "currency": CURRENCY,
        "created_at": iso(row["created_at"]),
    }


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# Built once: a statement built per call costs more than executing it.
_TAKE = (
    update(wallets)
    .where(wallets.c.id == bindparam("wallet"), wallets.c.balance >= bindparam("amount"))
    .values(balance=wallets.c.balance - bindparam("amount"))
)
_BALANCE = select(wallets.c.balance).where(wallets.c.id == bindparam("wallet"))
_ORDER = (wallets.c.created_at, wallets.c.id)
_IDENTITY_WALLET = (
    select(wallets)
    .where(
        wallets.c.project_id == bindparam("project"),
        wallets.c.identity_id == bindparam("identity"),
    )
    .order_by(*_ORDER)
    .limit(1)
)
_FIRST_WALLET = (
    select(wallets).where(wallets.c.project_id == bindparam("project")).order_by(*_ORDER).limit(1)
)
_FIND = select(wallets).where(
    wallets.c.id == bindparam("wallet"), wallets.c.project_id == bindparam("project")
)
_LIST = select(wallets).where(wallets.c.project_id == bindparam("project")).order_by(*_ORDER)
_CLAIM_TRANSFER = {
    "postgresql": postgresql.insert(wallet_transfers).on_conflict_do_nothing(
        index_elements=["project_id", "idempotency_digest"]
    ),
    "sqlite": sqlite.insert(wallet_transfers).on_conflict_do_nothing(
        index_elements=["project_id", "idempotency_digest"]
    ),
}
_FIND_TRANSFER = select(wallet_transfers).where(
    wallet_transfers.c.project_id == bindparam("project"),
    wallet_transfers.c.idempotency_digest == bindparam("digest"),
)
