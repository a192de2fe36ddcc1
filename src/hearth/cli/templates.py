"""``hearth templates``: expressions offered at a price: list, show, publish, buy, and an
agent born from one.

An agent born from a template has a root key made by the service and answered once; ``use``
writes it to ``--save-key FILE`` (PKCS#8 PEM, mode 0600, never over a file) and nowhere
else, as ``hearth fork --save-key`` does. Its new bearer is neither printed nor kept (this
home's bearer already covers the project).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import typer
from rich.markup import escape
from rich.table import Table

from hearth.adds.keys import private_key_pem
from hearth.client import HearthError
from hearth.client.life import Template

from .client_config import (
    BASE_URL_OPTION,
    HOME_OPTION,
    JSON_OPTION,
    LIMIT_OPTION,
    ask,
    client_for,
    errors,
    failure,
    gather,
    home_dir,
    http_failure,
    identity_or_home,
    output,
    print_json,
    print_table,
    usage_error,
)
from .files import write_private

app = typer.Typer(
    help="List, show, publish and buy templates; bring an agent to life from one.",
    no_args_is_help=True,
)


def _line(template: Template) -> str:
    price = "free" if template.price == 0 else f"{template.price} {template.currency}"
    origin = "built-in" if template.built_in else ("this project's" if template.mine else "listed")
    return f"template {template.id} {template.name!r} ({price}, {origin})"


@app.command("list")
def list_templates(
    limit: int = LIMIT_OPTION,
    as_json: bool = JSON_OPTION,
    home: Path | None = HOME_OPTION,
    base_url: str | None = BASE_URL_OPTION,
) -> None:
    """List the templates on offer (built-in and published), newest first."""
    found, _profile = ask(
        home,
        base_url,
        lambda client: gather(
            lambda cursor, size: client.templates(cursor=cursor, limit=size), limit
        ),
    )
    if as_json:
        print_json(found)
        return
    table = Table(title="Templates")
    for column in ("id", "name", "price", "origin", "description"):
        table.add_column(column, overflow="fold")
    for template in found:
        origin = "built-in" if template.built_in else ("mine" if template.mine else "listed")
        table.add_row(
            escape(template.id),
            escape(template.name),
            f"{template.price} {template.currency}",
            origin,
            escape(template.description),
        )
    print_table(table)


@app.command("show")
def show(
    template_id: str = typer.Argument(..., help="The template's id."),
    as_json: bool = JSON_OPTION,
    home: Path | None = HOME_OPTION,
    base_url: str | None = BASE_URL_OPTION,
) -> None:
    """A template with its whole expression."""
    template, _profile = ask(home, base_url, lambda client: client.template(template_id))
    if as_json:
        print_json(template)
        return
    output.print(_line(template), markup=False)
    output.print(template.description, markup=False)


@app.command("publish")
def publish(  # noqa: PLR0917 - typer reads options from the signature
    name: str = typer.Option(..., "--name", help="The template's name."),
    description: str = typer.Option(..., "--description", help="What it offers."),
    price: int = typer.Option(0, "--price", min=0, help="Minor units per purchase (0: free)."),
    identity: str | None = typer.Option(
        None,
        "--identity",
        help="Publish this identity's expression (default: this home's identity's).",
        show_default=False,
    ),
    expression: Path | None = typer.Option(
        None,
        "--expression",
        help="Publish this expression JSON file instead of an identity's.",
        show_default=False,
    ),
    wallet: str | None = typer.Option(
        None, "--wallet", help="The wallet purchases pay.", show_default=False
    ),
    as_json: bool = JSON_OPTION,
    home: Path | None = HOME_OPTION,
    base_url: str | None = BASE_URL_OPTION,
) -> None:
    """Publish an identity's expression (or an expression file) as a template."""
    given: dict[str, Any] | None = None
    if expression is not None:
        if identity is not None:
            usage_error("give --identity or --expression, not both")
        try:
            given = json.loads(expression.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            usage_error(f"cannot read {expression}: {exc}")
        if not isinstance(given, dict):
            usage_error(f"{expression} holds no JSON object")
    client, profile = client_for(home_dir(home), base_url)
    source = None if given is not None else identity_or_home(identity, profile)
    with client:
        try:
            template = client.template_publish(
                name, description, price, identity_id=source, expression=given, wallet_id=wallet
            )
        except (HearthError, httpx2.HTTPError) as exc:
            http_failure(exc)
    if as_json:
        print_json(template)
        return
    output.print(f"published {_line(template)}", markup=False)


@app.command("buy")
def buy(
    template_id: str = typer.Argument(..., help="The template's id."),
    as_json: bool = JSON_OPTION,
    home: Path | None = HOME_OPTION,
    base_url: str | None = BASE_URL_OPTION,
) -> None:
    """Buy a priced template once (sent once: a purchase is never repeated by itself)."""
    purchase, _profile = ask(home, base_url, lambda client: client.template_purchase(template_id))
    if as_json:
        print_json(purchase)
        return
    output.print(
        f"bought {purchase.template_id} for {purchase.price} {purchase.currency}: purchase "
        f"{purchase.purchase_id} (for `hearth templates use --purchase`)",
        markup=False,
    )


@app.command("use")
def use(  # noqa: PLR0917 - typer reads options from the signature
    template_id: str = typer.Argument(..., help="The template's id."),
    name: str = typer.Option(..., "--name", help="The new agent's name."),
    save_key: Path = typer.Option(
        ..., "--save-key", help="Write the new agent's private key to this new file (mode 0600)."
    ),
    purchase: str | None = typer.Option(
        None, "--purchase", help="A priced template's purchase id.", show_default=False
    ),
    as_json: bool = JSON_OPTION,
    home: Path | None = HOME_OPTION,
    base_url: str | None = BASE_URL_OPTION,
) -> None:
    """Bring a new agent to life with a template's expression."""
    if save_key.exists():
        # Checked before anything is made: the key must have somewhere to go.
        usage_error(f"{save_key} exists; a key is never written over a file")
    born, _profile = ask(
        home, base_url, lambda client: client.from_template(template_id, name, purchase_id=purchase)
    )
    pem = private_key_pem(born.signing_key())
    try:
        write_private(save_key, pem)
    except OSError as exc:
        # The key exists only in this answer: print it rather than lose it.
        errors.print(f"error: cannot write {save_key}: {exc.strerror}", markup=False)
        errors.print("The new agent's private key (PKCS#8 PEM), shown once:", markup=False)
        typer.echo(pem.decode("ascii"), nl=False)
        failure(f"agent {born.agent_id} was made; its key is above and nowhere else")
    errors.print(f"private key written to {save_key} (mode 0600)", markup=False)
    summary = {
        "agent_id": born.agent_id,
        "did": born.did,
        "name": born.name,
        "template_id": born.template_id,
        "purchase_id": born.purchase_id,
        "public_key": born.public_key,
        "kid": born.kid,
    }
    if as_json:
        print_json(summary)
        return
    output.print(f"born {born.name}: {born.agent_id} ({born.did})", markup=False)
