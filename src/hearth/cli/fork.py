"""``hearth fork``: fork an identity of this home's project into a new agent (10 credits).

The new agent's private key exists once, in the service's answer. It is written to
``--save-key FILE`` (PKCS#8 PEM, mode 0600, never over an existing file: the format of
``hearth keys generate``, which ``hearth memory attest --key`` reads), or, without that option,
printed on standard output with a warning on standard error, as ``hearth keys create`` prints a
new bearer. Either way it is kept nowhere else. If the file cannot be written after the fork
succeeded, the key is printed instead, so that it is not lost.

The fork's new project bearer (a key named ``fork:<name>``) is neither printed nor kept: this
home's bearer already has authority over the whole project, and a second copy of a bearer is
one more secret to leak. ``hearth keys list`` shows it; ``hearth keys revoke`` removes it.

A 402 (the parent's wallet cannot pay) is reported with the balance and the price; nothing was
created, nothing was paid, and the request was not repeated.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import NoReturn

import httpx2
import typer

from hearth.adds.keys import private_key_pem
from hearth.client import Forked, HearthError, InsufficientCredits

from .client_config import (
    BASE_URL_OPTION,
    HOME_OPTION,
    client_for,
    errors,
    failure,
    home_dir,
    http_failure,
    identity_or_home,
    output,
    usage_error,
)
from .files import write_private

TIERS = ("episodic", "foundational", "constitutive")


def refused(exc: HearthError | httpx2.HTTPError) -> NoReturn:
    """The failure message; a 402 names the wallet, balance and price, and says that nothing
    was paid or retried (wall 2, no_auto_retry_payout)."""
    if isinstance(exc, InsufficientCredits):
        currency = exc.currency or "GBP"
        failure(
            f"insufficient_credits (HTTP 402): wallet {exc.wallet_id or '?'} holds {exc.balance} "
            f"and {exc.required} is required ({currency} minor units). Nothing was created or "
            "paid, and no payment was retried; fund the wallet (POST /v1/wallets/{id}/fund) and "
            "run the command again."
        )
    http_failure(exc)


def _summary(forked: Forked) -> dict[str, object]:
    """The fork's answer without its secrets."""
    charged = forked.charged
    return {
        "agent_id": forked.agent_id,
        "did": forked.did,
        "name": forked.name,
        "parent_identity_id": forked.parent_identity_id,
        "kid": forked.kid,
        "public_key": forked.public_key,
        "capabilities": list(forked.capabilities),
        "memories": [
            {"source_memory_id": m.source_memory_id, "memory_id": m.memory_id, "tier": m.tier}
            for m in forked.memories
        ],
        "charged": None
        if charged is None
        else {"wallet_id": charged.wallet_id, "amount": charged.amount, "balance": charged.balance},
        "wallet_id": forked.wallet.id if forked.wallet else None,
    }


def _print_key_once(pem: bytes) -> None:
    errors.print(
        "The new agent's private key (PKCS#8 PEM) follows, shown once: it is its root key, "
        "the service does not keep it, and it cannot be shown again. Store it now.",
        markup=False,
    )
    typer.echo(pem.decode("ascii"), nl=False)


def fork(  # noqa: PLR0917 - typer reads options from the signature
    parent: str | None = typer.Argument(
        None,
        help="The identity to fork (id or DID; default: this home's identity).",
        show_default=False,
    ),
    name: str = typer.Option(..., "--name", help="The new agent's name."),
    no_expression: bool = typer.Option(
        False, "--no-expression", help="Do not copy the parent's declared expression."
    ),
    no_capabilities: bool = typer.Option(
        False, "--no-capabilities", help="Do not copy the parent's capabilities."
    ),
    metadata: bool = typer.Option(False, "--metadata", help="Copy the parent's metadata."),
    tier: list[str] = typer.Option(
        [], "--tier", help="Copy the parent's memories of this tier (repeatable)."
    ),
    memory: list[str] = typer.Option(
        [], "--memory", help="Copy this memory of the parent (repeatable)."
    ),
    limit: int | None = typer.Option(
        None,
        "--limit",
        min=1,
        max=1000,
        help="At most this many of the --tier memories (100).",
        show_default=False,
    ),
    note: str | None = typer.Option(None, "--note", help="A fork note, kept in both chronicles."),
    save_key: Path | None = typer.Option(
        None,
        "--save-key",
        help="Write the new private key to this new file (PEM, mode 0600) instead of "
        "standard output.",
        show_default=False,
    ),
    as_json: bool = typer.Option(
        False, "--json", help="Print the result (without secrets) as JSON; needs --save-key."
    ),
    home: Path | None = HOME_OPTION,
    base_url: str | None = BASE_URL_OPTION,
) -> None:
    """Fork an identity into a new agent (10 credits from the parent's wallet)."""
    if any(t not in TIERS for t in tier):
        usage_error(f"--tier is one of {', '.join(TIERS)}")
    if limit is not None and not tier:
        usage_error("--limit caps what --tier selects; give --tier too")
    if as_json and save_key is None:
        usage_error("--json needs --save-key: without it standard output carries the key")
    if save_key is not None and save_key.exists():
        # Checked before paying: the key must have somewhere to go.
        usage_error(f"{save_key} exists; a key is never written over a file")
    client, profile = client_for(home_dir(home), base_url)
    with client:
        try:
            forked = client.fork(
                identity_or_home(parent, profile),
                name,
                inherit_expression=not no_expression,
                inherit_capabilities=not no_capabilities,
                inherit_metadata=metadata,
                tiers=tier or None,
                memory_ids=memory or None,
                limit=limit,
                note=note,
            )
        except (HearthError, httpx2.HTTPError) as exc:
            refused(exc)
    pem = private_key_pem(forked.signing_key())
    summary = _summary(forked)
    charged = forked.charged
    cost = f" for {charged.amount} (balance {charged.balance})" if charged else ""
    message = f"forked {forked.name}: {forked.agent_id} ({forked.did}){cost}"
    if save_key is None:
        errors.print(message, markup=False)
        _print_key_once(pem)
        return
    try:
        write_private(save_key, pem)
    except OSError as exc:
        errors.print(f"error: cannot write {save_key}: {exc.strerror}", markup=False)
        errors.print(message, markup=False)
        _print_key_once(pem)
        raise typer.Exit(1) from None
    errors.print(f"private key written to {save_key} (mode 0600)", markup=False)
    if as_json:
        typer.echo(json.dumps(summary, indent=2))
        return
    output.print(message, markup=False)
