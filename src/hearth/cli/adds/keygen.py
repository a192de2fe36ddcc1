"""``hearth adds keygen``: an Ed25519 and an X25519 private key (PEM, 0600), public halves
printed (base64url)."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

import typer

from hearth.adds.keys import generate_key_pair, private_key_pem

from .report import fail, note

__all__ = ["keygen_command"]


def keygen_command(
    out: Path = typer.Option(
        ..., "--out", "-o", help="Path prefix: writes PREFIX.ed25519.pem and PREFIX.x25519.pem."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the public halves as JSON."),
) -> None:
    """Generate an Ed25519 signing key and an X25519 box key (PKCS#8 PEM, mode 0600).

    Never replaces an existing file. Prints the public halves (base64url): the X25519 one is what
    a publisher passes to `--grant-to` / `--audience-key`.
    """
    pair = generate_key_pair()
    signing_path = out.with_name(out.name + ".ed25519.pem")
    box_path = out.with_name(out.name + ".x25519.pem")
    for path in (signing_path, box_path):
        if path.exists() or path.is_symlink():
            fail(f"{path} exists: keygen never replaces a key file")
    written: list[Path] = []
    try:
        for path, key in ((signing_path, pair.signing), (box_path, pair.box)):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            written.append(path)
            try:
                os.fchmod(fd, 0o600)
                os.write(fd, private_key_pem(key))
                os.fsync(fd)
            finally:
                os.close(fd)
    except OSError as exc:
        for path in written:
            with contextlib.suppress(OSError):
                path.unlink()
        fail(f"cannot write key files: {exc.strerror or exc}")
    note(f"wrote {signing_path} and {box_path} (mode 0600)")
    if as_json:
        typer.echo(json.dumps(pair.describe(), indent=2))
        return
    for name, value in pair.describe().items():
        typer.echo(f"{name}: {value}")
