"""``hearth adds validate``, ``sign``, ``cid`` and ``schema``: ADDS documents as documents
(checked, signed, named, described), with no object or store involved."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape

from hearth.adds import AddsError, IJsonError, canonicalize, cid_for_bytes, parse, validate
from hearth.adds.documents import sign_document
from hearth.adds.keys import load_ed25519_private_key
from hearth.adds.kinds import KINDS

from ..files import read_input
from .report import errors

__all__ = ["cid_command", "schema_command", "sign_command", "validate_command"]

output = Console(highlight=False, soft_wrap=True)


def _unreadable(name: str, exc: OSError) -> dict[str, Any]:
    reason = exc.strerror or type(exc).__name__
    return {"pointer": "", "code": "file.unreadable", "message": f"cannot read {name}: {reason}"}


def validate_command(
    files: list[str] = typer.Argument(..., help="Document files ('-' for standard input)."),
    as_json: bool = typer.Option(False, "--json", help="One JSON object per file per line."),
    now: int | None = typer.Option(
        None, "--now", help="Epoch seconds: also warn about time windows at this moment."
    ),
    canonical: bool = typer.Option(
        False, "--canonical", help="Also require the bytes to be the canonical (RFC 8785) form."
    ),
) -> None:
    """Check that each file is a valid, correctly signed ADDS document.

    Exit status: 0 when every file is valid, 1 when any is not, 2 on a usage error.
    """
    all_valid = True
    for name in files:
        try:
            data = read_input(name)
        except OSError as exc:
            report: dict[str, Any] = {
                "file": name,
                "valid": False,
                "kind": None,
                "cid": None,
                "errors": [_unreadable(name, exc)],
                "warnings": [],
            }
        else:
            result = validate(data, now=now, require_canonical=canonical)
            report = {
                "file": name,
                "valid": result.valid,
                "kind": result.kind,
                "cid": result.cid,
                "errors": [p.as_dict() for p in result.errors],
                "warnings": [p.as_dict() for p in result.warnings],
            }
        all_valid &= report["valid"]
        if as_json:
            typer.echo(json.dumps(report, ensure_ascii=False))
        else:
            _print_human(report)
    raise typer.Exit(0 if all_valid else 1)


def _print_human(report: dict[str, Any]) -> None:
    name = escape(report["file"])
    if report["valid"]:
        output.print(f"[green]{name}: valid {report['kind']}[/] {report['cid']}")
    else:
        kind = f" {report['kind']}" if report["kind"] else ""
        count = len(report["errors"])
        output.print(f"[red]{name}: invalid{kind}[/] ({count} problem{'s' * (count != 1)})")
    for severity, problems in (("error", report["errors"]), ("warning", report["warnings"])):
        for problem in problems:
            pointer = escape(problem["pointer"] or "(document)")
            output.print(f"  {severity} {pointer}: {problem['code']}: {escape(problem['message'])}")


def sign_command(
    file: str = typer.Argument(..., help="The unsigned document ('-' for standard input)."),
    key: Path = typer.Option(..., "--key", "-k", help="Ed25519 private key, PKCS#8 PEM."),
    out: Path | None = typer.Option(None, "--out", "-o", help="Write here instead of stdout."),
    resign: bool = typer.Option(False, "--resign", help="Replace an existing signature."),
) -> None:
    """Fill in the signature of an unsigned document and print its canonical bytes.

    The signed document must validate; otherwise nothing is written and the problems are listed.
    """
    try:
        document = parse(read_input(file)).value
        private_key = load_ed25519_private_key(key.read_bytes())
    except (OSError, IJsonError, AddsError) as exc:
        errors.print(f"error: {escape(str(exc))}")
        raise typer.Exit(1) from None
    if not isinstance(document, dict):
        errors.print("error: a document is a JSON object")
        raise typer.Exit(1)
    signature = document.get("signature")
    if isinstance(signature, dict) and signature.get("value") and not resign:
        errors.print("error: the document is already signed (use --resign to replace it)")
        raise typer.Exit(1)
    try:
        signed = canonicalize(sign_document(document, private_key))
    except (AddsError, ValueError) as exc:
        errors.print(f"error: {escape(str(exc))}")
        raise typer.Exit(1) from None
    result = validate(signed)
    if not result.valid:
        errors.print("error: the signed document would not be valid:")
        for problem in result.errors:
            errors.print(
                f"  {escape(problem.pointer or '(document)')}: {problem.code}: "
                f"{escape(problem.message)}"
            )
        raise typer.Exit(1)
    if out is None:
        typer.echo(signed.decode("utf-8"))
    else:
        out.write_bytes(signed)
        errors.print(f"wrote {escape(str(out))} ({result.kind} {result.cid})")


def cid_command(
    files: list[str] = typer.Argument(..., help="Document files ('-' for standard input)."),
    as_json: bool = typer.Option(
        False, "--json", help="One JSON object of file name to CID (the ones that parsed)."
    ),
) -> None:
    """Print the CID of each document: sha2-256 of its canonical (RFC 8785) bytes."""
    failed = False
    cids: dict[str, str] = {}
    for name in files:
        try:
            parsed = parse(read_input(name))
            cid = cid_for_bytes(canonicalize(parsed.value, simple=parsed.simple))
        except (OSError, IJsonError) as exc:
            errors.print(f"error: {escape(name)}: {escape(str(exc))}")
            failed = True
            continue
        cids[name] = cid
        if not as_json:
            typer.echo(cid if len(files) == 1 else f"{cid}  {name}")
    if as_json:
        typer.echo(json.dumps(cids, indent=2, ensure_ascii=False))
    raise typer.Exit(1 if failed else 0)


def schema_command(
    kind: str = typer.Argument(
        "document", help="A kind (manifest, grant, ...), 'common' or 'document'."
    ),
) -> None:
    """Print the JSON Schema (draft 2020-12) of a document kind."""
    names = {*KINDS, "common", "document"}
    if kind not in names:
        errors.print(f"error: unknown schema {escape(kind)!r}; one of {', '.join(sorted(names))}")
        raise typer.Exit(2)
    # importlib.resources brings tempfile, shutil and the archive modules: only this command
    # reads a packaged file, so only it pays for them.
    from importlib import resources  # noqa: PLC0415

    schema = resources.files("hearth.adds") / "schemas" / f"{kind}.schema.json"
    typer.echo(schema.read_text(encoding="utf-8").rstrip("\n"))
