"""``hearth wallet``: the project's wallets (one per identity), their ledgers, and transfers.

Amounts are minor units of the wallet's currency (1 credit = 1). ``fund`` sends an
idempotency key: a new one per run unless ``--idempotency-key`` repeats an earlier one, which
is how a transfer whose answer was lost is repeated without moving the money twice.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import httpx2
import typer
from rich.markup import escape
from rich.table import Table

from hearth.client import HearthClient, HearthError
from hearth.client.life import LedgerEntry

from .client_config import (
    BASE_URL_OPTION,
    HOME_OPTION,
    JSON_OPTION,
    LIMIT_OPTION,
    Profile,
    ask,
    client_for,
    errors,
    failure,
    gather,
    home_dir,
    http_failure,
    output,
    print_json,
    print_table,
    require_profile,
)

app = typer.Typer(
    help="List wallets, show a wallet and its ledger, move credits between wallets.",
    no_args_is_help=True,
)

WALLET_ARGUMENT = typer.Argument(
    None, help="The wallet's id (default: this home's identity's wallet).", show_default=False
)


def _wallet_id(client: HearthClient, profile: Profile, wallet_id: str | None) -> str:
    """The wallet named, else the one of this home's identity."""
    if wallet_id:
        return wallet_id
    own = next((w.id for w in client.wallets() if w.identity_id == profile.identity_id), None)
    if own is None:
        failure(f"identity {profile.identity_id} has no wallet in this project; name one")
    return own


def _ledger_table(title: str, entries: list[LedgerEntry]) -> Table:
    table = Table(title=title)
    for column in ("created_at", "amount", "reason", "id"):
        table.add_column(column, overflow="fold")
    for entry in entries:
        table.add_row(entry.created_at, f"{entry.amount:+d}", escape(entry.reason), entry.id)
    return table


@app.command("list")
def list_wallets(
    as_json: bool = JSON_OPTION,
    home: Path | None = HOME_OPTION,
    base_url: str | None = BASE_URL_OPTION,
) -> None:
    """List the project's wallets, oldest first, with their balances."""
    wallets, profile = ask(home, base_url, lambda client: client.wallets())
    if as_json:
        print_json(wallets)
        return
    table = Table(title=f"Wallets of project {profile.project_id}")
    for column in ("id", "name", "identity", "balance", "currency"):
        table.add_column(column, overflow="fold")
    for wallet in wallets:
        mine = " (this home)" if wallet.identity_id == profile.identity_id else ""
        table.add_row(
            escape(wallet.id),
            escape(wallet.name),
            escape((wallet.identity_id or "") + mine),
            str(wallet.balance),
            wallet.currency,
        )
    print_table(table)


@app.command("show")
def show(
    wallet_id: str | None = WALLET_ARGUMENT,
    as_json: bool = JSON_OPTION,
    home: Path | None = HOME_OPTION,
    base_url: str | None = BASE_URL_OPTION,
) -> None:
    """A wallet's balance and its newest ledger entries."""
    profile = require_profile(home_dir(home))
    wallet, _ = ask(
        home, base_url, lambda client: client.wallet(_wallet_id(client, profile, wallet_id))
    )
    if as_json:
        print_json(wallet)
        return
    output.print(
        f"wallet {wallet.id} ({wallet.name}): {wallet.balance} {wallet.currency}", markup=False
    )
    print_table(_ledger_table("Newest entries", list(wallet.recent_entries)))


@app.command("ledger")
def ledger(
    wallet_id: str | None = WALLET_ARGUMENT,
    limit: int = LIMIT_OPTION,
    as_json: bool = JSON_OPTION,
    home: Path | None = HOME_OPTION,
    base_url: str | None = BASE_URL_OPTION,
) -> None:
    """A wallet's ledger, newest first."""
    client, profile = client_for(home_dir(home), base_url)
    with client:
        try:
            target = _wallet_id(client, profile, wallet_id)
            entries = gather(
                lambda cursor, size: client.wallet_ledger(target, cursor=cursor, limit=size), limit
            )
        except (HearthError, httpx2.HTTPError) as exc:
            http_failure(exc)
    if as_json:
        print_json(entries)
        return
    print_table(_ledger_table(f"Ledger of wallet {target}", entries))


@app.command("fund")
def fund(  # noqa: PLR0917 - typer reads options from the signature
    wallet_id: str = typer.Argument(..., help="The wallet to fund."),
    amount: int = typer.Argument(..., min=1, help="Minor units to move."),
    source: str | None = typer.Option(
        None,
        "--from",
        metavar="WALLET_ID",
        help="The wallet paying (default: this home's identity's wallet).",
        show_default=False,
    ),
    idempotency_key: str | None = typer.Option(
        None,
        "--idempotency-key",
        help="Repeat an earlier transfer's key to repeat it safely (default: a new one).",
        show_default=False,
    ),
    as_json: bool = JSON_OPTION,
    home: Path | None = HOME_OPTION,
    base_url: str | None = BASE_URL_OPTION,
) -> None:
    """Move credits from one wallet of the project to another (never buys credits)."""
    key = idempotency_key or str(uuid.uuid4())
    client, profile = client_for(home_dir(home), base_url)
    with client:
        try:
            paying = _wallet_id(client, profile, source)
            result = client.wallet_fund(
                wallet_id, amount, source_wallet_id=paying, idempotency_key=key
            )
        except (HearthError, httpx2.HTTPError) as exc:
            # The key is what makes a retry safe after a lost answer: say it before failing.
            errors.print(f"idempotency key: {key}", markup=False)
            http_failure(exc)
    if as_json:
        print_json(result)
        return
    transfer = result.transfer
    again = " (replayed: nothing moved this time)" if result.replayed else ""
    output.print(
        f"moved {transfer.amount} {transfer.currency} from {transfer.source_wallet_id} to "
        f"{transfer.target_wallet_id}{again}; balance {result.wallet.balance}",
        markup=False,
    )
