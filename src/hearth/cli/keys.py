"""``hearth keys``: key material on this machine."""

from __future__ import annotations

from pathlib import Path

import typer

from hearth.adds.keys import generate_key_pair, private_key_pem

from .files import write_private

app = typer.Typer(help="Generate and manage keys.", no_args_is_help=True)


@app.command("generate")
def generate(
    out: Path = typer.Option(
        Path("hearth"),
        "--out",
        "-o",
        help="Path prefix: writes PREFIX.ed25519.pem and PREFIX.x25519.pem.",
    ),
    force: bool = typer.Option(False, "--force", help="Overwrite existing key files."),
) -> None:
    """Generate an Ed25519 signing key and an X25519 box key (PKCS#8 PEM files, mode 0600)."""
    pair = generate_key_pair()
    signing_path = out.with_name(out.name + ".ed25519.pem")
    box_path = out.with_name(out.name + ".x25519.pem")
    if not force:
        for path in (signing_path, box_path):
            if path.exists():
                typer.echo(f"error: {path} exists (use --force to replace it)", err=True)
                raise typer.Exit(1)
    try:
        write_private(signing_path, private_key_pem(pair.signing), overwrite=force)
        write_private(box_path, private_key_pem(pair.box), overwrite=force)
    except OSError as exc:
        typer.echo(f"error: cannot write key files: {exc}", err=True)
        raise typer.Exit(1) from None
    typer.echo(f"wrote {signing_path} and {box_path} (mode 0600)", err=True)
    for name, value in pair.describe().items():
        typer.echo(f"{name}: {value}")
