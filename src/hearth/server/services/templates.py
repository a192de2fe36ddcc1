"""Templates: voices an agent can be born with, a small built-in catalogue, purchases, and
POST /v1/identities/from-template.

The rules are written down in docs/forks-templates.md. In short:

- A template is an expression (register, walls, subagents, wake_text) with a name, a
  description and a price in minor units of GBP (0 is free). Listed templates are one catalogue
  for every project: the built-in voices (data/templates.json) and those projects publish.
- The built-in catalogue is seeded idempotently (fixed ids, insert-if-absent), on the first
  template request of each process (``ensure_catalogue``); ``seed_catalogue`` is the plain
  function a lifespan or a deployment step can call instead.
- A purchase charges the caller's paying wallet and credits the publisher's wallet (built-in
  templates have none) in one transaction; a 402 records nothing. A purchase makes exactly one
  identity: from-template consumes it with one conditional UPDATE in the birth's transaction.
- The new agent carries the template's expression only (not strands or covenants).
"""

from __future__ import annotations

import json
import uuid
import weakref
from dataclasses import asdict
from datetime import datetime
from importlib import resources
from typing import Any

from sqlalchemy import Connection, bindparam, select, update
from sqlalchemy.dialects import postgresql, sqlite

from ..db.engine import Database, utcnow
from ..db.ids import new_id
from ..db.rows import TemplateRow, WalletRow
from ..db.tables import template_purchases, templates
from ..errors import ApiError, not_found
from ..json_types import JsonObject
from ..models_forks import FromTemplateRequest, TemplatePublish
from . import chronicle, cursors, identities, memories, wallets
from .birth import ServerKeys, arrival_view
from .forks import arrive
from .times import iso

LISTED = "listed"
PREVIEW_CHARS = 280


# --- the built-in catalogue ---------------------------------------------------------------------


def catalogue() -> list[TemplateRow]:
    """The built-in templates as rows, read from the package data (shipped in the wheel)."""
    text = resources.files("hearth.server").joinpath("data/templates.json").read_text("utf-8")
    return [
        TemplateRow.of(
            {
                "id": entry["id"],
                "name": entry["name"],
                "description": entry["description"],
                "expression": entry["expression"],
                "price": entry["price"],
                "publisher_project_id": None,
                "publisher_wallet_id": None,
                "status": LISTED,
                "created_at": datetime.fromisoformat(entry["created_at"]),
            }
        )
        for entry in json.loads(text)["templates"]
    ]


def seed_catalogue(conn: Connection) -> int:
    """Insert the built-in templates that are absent; returns how many were inserted. A
    template already there (seeded earlier, by this or another process) is left as it is."""
    statement = _SEED[conn.dialect.name]
    return sum(max(conn.execute(statement, asdict(row)).rowcount, 0) for row in catalogue())


_seeded: weakref.WeakSet[Database] = weakref.WeakSet()


async def ensure_catalogue(db: Database) -> None:
    """Seed once per process and database, before the first template request answers. Two
    first requests at once may both seed: insert-if-absent makes that harmless."""
    if db in _seeded:
        return
    await db.transaction(seed_catalogue)
    _seeded.add(db)


# --- reading ------------------------------------------------------------------------------------


def find(conn: Connection, template_id: str) -> TemplateRow:
    """A listed template, or 404. Templates are one catalogue: any project reads any."""
    try:
        canonical = str(uuid.UUID(template_id))
    except ValueError:
        raise not_found("Template") from None
    row = conn.execute(_FIND, {"id": canonical, "status": LISTED}).first()
    if row is None:
        raise not_found("Template")
    return TemplateRow.of(row._mapping)


def summary(row: TemplateRow, project_id: str) -> JsonObject:
    expression = identities.expression_view(row.expression)
    return {
        "id": row.id,
        "name": row.name,
        "description": row.description,
        "price": row.price,
        "currency": wallets.CURRENCY,
        "built_in": row.publisher_project_id is None,
        "mine": row.publisher_project_id == project_id,
        "created_at": iso(row.created_at),
        "expression_preview": {
            "register_excerpt": expression["register"][:PREVIEW_CHARS],
            "walls": expression["walls"],
            "subagents": [s.get("name", "") for s in expression["subagents"]],
        },
    }


def detail(conn: Connection, project_id: str, template_id: str) -> JsonObject:
    row = find(conn, template_id)
    return {**summary(row, project_id), "expression": identities.expression_view(row.expression)}


def listing(conn: Connection, project_id: str, cursor: str | None, limit: int) -> cursors.Page:
    """Listed templates, newest first (the built-in voices, seeded with early dates, last)."""
    items, next_cursor = cursors.newest_first(
        conn, templates, [templates.c.status == LISTED], cursor, limit, build=TemplateRow.of
    )
    return cursors.Page([summary(row, project_id) for row in items], next_cursor)


# --- publishing ---------------------------------------------------------------------------------


def publish(conn: Connection, project_id: str, body: TemplatePublish) -> JsonObject:
    """List a new template: an identity's effective expression (the voice it has now, with its
    elevated memories' patches; never the memories themselves) or a given expression."""
    identity = None
    if body.identity_id is not None:
        identity = identities.find(conn, project_id, body.identity_id)
        expression = memories.effective_expression(conn, identity)
    else:
        assert body.expression is not None
        expression = body.expression.model_dump(by_alias=True)
    if body.wallet_id is not None:
        wallet: WalletRow | None = wallets.find(conn, project_id, body.wallet_id)
    elif body.price > 0:
        wallet = wallets.paying_wallet(conn, project_id, identity.id if identity else None)
        if wallet is None:
            raise ApiError(
                422,
                "payout_wallet_required",
                "A priced template pays its purchases into a wallet of the publishing project, "
                "and this project has none.",
                hint="Publish it free (price 0), or from a project that has a wallet.",
            )
    else:
        wallet = None
    row = {
        "id": new_id(),
        "name": body.name,
        "description": body.description,
        "expression": expression,
        "price": body.price,
        "publisher_project_id": project_id,
        "publisher_wallet_id": wallet.id if wallet else None,
        "status": LISTED,
        "created_at": utcnow(),
    }
    conn.execute(_INSERT, row)
    chronicle.record(
        conn,
        project_id,
        identity.id if identity else None,
        "note",
        f"The template {row['name']} was published at {row['price']} minor units of "
        f"{wallets.CURRENCY}.",
        details={
            "event": "template_published",
            "template_id": row["id"],
            "price": row["price"],
            "wallet_id": row["publisher_wallet_id"],
        },
    )
    return {
        **summary(TemplateRow.of(row), project_id),
        "expression": identities.expression_view(expression),
    }


# --- purchases ----------------------------------------------------------------------------------


def purchase(conn: Connection, project_id: str, template_id: str) -> JsonObject:
    """Pay a priced template's price from the caller's paying wallet, credit the publisher's
    wallet, record the purchase: one transaction. 402 when the wallet cannot pay (nothing is
    recorded, nothing is retried)."""
    template = find(conn, template_id)
    if template.price == 0:
        raise ApiError(
            409,
            "nothing_to_buy",
            "This template is free: there is nothing to buy.",
            hint="POST /v1/identities/from-template with its template_id and no purchase_id.",
        )
    if template.publisher_project_id == project_id:
        raise ApiError(
            409,
            "own_template",
            "This project published this template: it uses it without buying it.",
            hint="POST /v1/identities/from-template with its template_id and no purchase_id.",
        )
    price = template.price
    paid = wallets.charge(conn, project_id, price, "template_purchase")
    row: dict[str, Any] = {
        "id": new_id(),
        "template_id": template.id,
        "project_id": project_id,
        "wallet_id": paid.id,
        "price": price,
        "created_at": utcnow(),
        "used_at": None,
        "used_by_identity_id": None,
    }
    conn.execute(_INSERT_PURCHASE, row)
    publisher_wallet = template.publisher_wallet_id
    publisher = template.publisher_project_id  # a publisher's wallet is its project's
    if publisher_wallet is not None and publisher is not None:
        wallets.credit(conn, publisher_wallet, price, "template_sale")
        chronicle.record(
            conn,
            publisher,
            None,
            "note",
            f"The template {template.name} was bought for {price} minor units of "
            f"{wallets.CURRENCY}.",
            details={
                "event": "template_sold",
                "template_id": template.id,
                "price": price,
                "wallet_id": publisher_wallet,
            },
        )
    chronicle.record(
        conn,
        project_id,
        None,
        "note",
        f"The template {template.name} was bought for {price} minor units of {wallets.CURRENCY}.",
        details={
            "event": "template_purchased",
            "template_id": template.id,
            "purchase_id": row["id"],
            "price": price,
            "wallet_id": paid.id,
        },
    )
    return {
        "purchase_id": row["id"],
        "template_id": template.id,
        "price": price,
        "currency": wallets.CURRENCY,
        "created_at": iso(row["created_at"]),
        "charged": {
            "wallet_id": paid.id,
            "amount": price,
            "currency": wallets.CURRENCY,
            "balance": paid.balance,
        },
    }


def _claim_purchase(
    conn: Connection, project_id: str, template: TemplateRow, purchase_id: str
) -> str:
    """Check the purchase is this project's, for this template and unused, and consume it with
    one conditional UPDATE: of concurrent births on one purchase exactly one wins."""
    try:
        canonical = str(uuid.UUID(purchase_id))
    except ValueError:
        raise not_found("Purchase") from None
    found = conn.execute(_FIND_PURCHASE, {"id": canonical, "project": project_id}).first()
    if found is None:
        raise not_found("Purchase")
    if found.template_id != template.id:
        raise ApiError(
            422,
            "purchase_template_mismatch",
            "This purchase is for another template.",
            details={"purchase_template_id": found.template_id},
            hint="Send the template_id the purchase was made for, or buy this template.",
        )
    claimed = conn.execute(_USE_PURCHASE, {"purchase": canonical, "now": utcnow()})
    if found.used_at is not None or claimed.rowcount != 1:
        raise ApiError(
            409,
            "purchase_used",
            "This purchase has already made an identity: one purchase makes one.",
            hint="Buy the template again (POST /v1/templates/{template_id}/purchase) for "
            "another identity.",
        )
    return canonical


def from_template(
    conn: Connection,
    project_id: str,
    body: FromTemplateRequest,
    server_keys: ServerKeys,
) -> JsonObject:
    """A new agent with the template's expression only, in one transaction with the purchase's
    consumption: a refusal consumes nothing and creates nothing."""
    template = find(conn, body.template_id)
    priced = template.price > 0 and template.publisher_project_id != project_id
    purchase_id = None
    if body.purchase_id is not None:
        purchase_id = _claim_purchase(conn, project_id, template, body.purchase_id)
    elif priced:
        raise ApiError(
            422,
            "purchase_required",
            f"This template costs {template.price} minor units of {wallets.CURRENCY}: "
            "buy it first and send the purchase_id.",
            details={"price": template.price, "currency": wallets.CURRENCY},
            hint="POST /v1/templates/{template_id}/purchase answers a purchase_id.",
        )
    how = f"with the voice of the template {template.name}"
    new = identities.NewIdentity(
        project_id=project_id,
        name=body.new_name,
        origin="template",
        root_public_key=server_keys.public_b64,
        expression=identities.expression_view(template.expression),
    )
    arrived = arrive(conn, new, how=how)
    child = arrived.identity
    if purchase_id is not None:
        conn.execute(_PURCHASE_USED_BY, {"purchase": purchase_id, "identity": child.id})
    chronicle.record(
        conn,
        project_id,
        child.id,
        "naming",
        f"{child.name} ({child.did}) was born {how}.",
        details={
            "event": "born_from_template",
            "template_id": template.id,
            "purchase_id": purchase_id,
        },
    )
    return {
        **arrival_view(arrived, server_keys),
        "template_id": template.id,
        "purchase_id": purchase_id,
    }


# Built once: a statement built per call costs more than executing it.
_SEED = {
    "postgresql": postgresql.insert(templates).on_conflict_do_nothing(index_elements=["id"]),
    "sqlite": sqlite.insert(templates).on_conflict_do_nothing(index_elements=["id"]),
}
_INSERT = templates.insert()
_INSERT_PURCHASE = template_purchases.insert()
_FIND = select(templates).where(
    templates.c.id == bindparam("id"), templates.c.status == bindparam("status")
)
_FIND_PURCHASE = select(template_purchases).where(
    template_purchases.c.id == bindparam("id"),
    template_purchases.c.project_id == bindparam("project"),
)
_USE_PURCHASE = (
    update(template_purchases)
    .where(template_purchases.c.id == bindparam("purchase"), template_purchases.c.used_at.is_(None))
    .values(used_at=bindparam("now"))
)
_PURCHASE_USED_BY = (
    update(template_purchases)
    .where(template_purchases.c.id == bindparam("purchase"))
    .values(used_by_identity_id=bindparam("identity"))
)
