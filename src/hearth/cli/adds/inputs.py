"""What the ``hearth adds`` commands read from their arguments: sizes, durations, rights, CIDs,
keys (PEM files, base64url public keys) and documents, each refused with a usage error or a
failure saying why."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hearth.adds import (
    AddsError,
    Right,
    cid_for_bytes,
    validate,
    wrap_content_key,
)
from hearth.adds.cid import cid_problem
from hearth.adds.keys import load_ed25519_private_key, load_x25519_private_key
from hearth.cli.key_text import decode_key

from .files import read
from .options import DEFAULT_EXPIRY
from .report import fail, problems_text, usage

if TYPE_CHECKING:
    from hearth.proofs.key_types import Ed25519PrivateKey, X25519PrivateKey

__all__ = [
    "current_time",
    "ed25519_key",
    "expiry_time",
    "is_cid",
    "is_url",
    "parse_document",
    "parse_duration",
    "parse_rights",
    "parse_size",
    "x25519_key",
    "x25519_public",
    "x25519_public_from_pem",
]


_SIZE = re.compile(r"(\d+)\s*(B|KiB|MiB|GiB)?")
_SIZE_UNITS = {None: 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
_DURATION = re.compile(r"(\d+)([smhdw]?)")
_DURATION_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800}


def parse_size(text: str) -> int:
    """Bytes from ``4096``, ``64KiB``, ``1MiB``, ``1GiB`` (binary units only: KB and MB would be
    ambiguous). ValueError otherwise."""
    match = _SIZE.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"{text!r} is not a size: give bytes, or a number with KiB, MiB or GiB")
    return int(match[1]) * _SIZE_UNITS[match[2]]


def parse_duration(text: str) -> int:
    """Seconds from ``90``, ``90s``, ``15m``, ``12h``, ``30d``, ``2w``; ValueError otherwise."""
    match = _DURATION.fullmatch(text.strip())
    if match is None or int(match[1]) == 0:
        raise ValueError(f"{text!r} is not a duration: a positive number with s, m, h, d or w")
    return int(match[1]) * _DURATION_UNITS[match[2]]


def parse_rights(text: str) -> list[Right]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    known = {str(right) for right in Right}
    unknown = [name for name in names if name not in known]
    if unknown or not names:
        usage(f"--rights is a comma-separated list of {', '.join(sorted(known))}: {text!r}")
    if "read" not in names:
        usage("--rights must include 'read' (ADDS requires it in every grant)")
    return [Right(name) for name in dict.fromkeys(names)]


def is_cid(text: str) -> bool:
    return cid_problem(text) is None


def is_url(text: str) -> bool:
    return text.startswith(("http://", "https://"))


def ed25519_key(path: Path) -> Ed25519PrivateKey:
    try:
        return load_ed25519_private_key(read(path, "key file"))
    except AddsError as exc:
        fail(f"{path}: {exc.problems[0].message}")


def x25519_key(path: Path) -> X25519PrivateKey:
    try:
        return load_x25519_private_key(read(path, "key file"))
    except AddsError as exc:
        fail(f"{path}: {exc.problems[0].message}")


def x25519_public(text: str, what: str) -> bytes:
    try:
        raw = decode_key(text, what=what)
    except ValueError as exc:
        usage(f"{exc} (a 32-byte X25519 public key)")
    try:  # a small-order key would only fail after the upload: refuse it now
        wrap_content_key(bytes(32), raw, cid_for_bytes(b""))
    except AddsError as exc:
        usage(f"{what} cannot receive a key: {exc.problems[0].message}")
    return raw


def x25519_public_from_pem(path: Path) -> bytes:
    # The PEM parsers (hearth.proofs), here only: no other command reads a public key file.
    from hearth.proofs.pem import x25519_public_from_pem as parse_pem  # noqa: PLC0415

    data = read(path, "key file")
    try:
        return parse_pem(data)
    except ValueError as exc:
        fail(f"{path} is {exc}")


def parse_document(data: bytes, kind: str, name: str) -> dict[str, Any]:
    """The parsed document when ``data`` is a valid ``kind``; a failure saying why otherwise."""
    result = validate(data)
    if not result.valid or not isinstance(result.document, dict):
        fail(f"{name} is not a valid {kind}: {problems_text(result.errors)}")
    if result.kind != kind:
        fail(f"{name} is a {result.kind}, not a {kind}")
    return result.document


def current_time(now: int | None) -> int:
    return int(time.time()) if now is None else now


def expiry_time(now: int, expires_in: str | None, expires_at: int | None) -> int:
    if expires_in is not None and expires_at is not None:
        usage("give --expires-in or --expires-at, not both")
    if expires_at is not None:
        return expires_at
    try:
        return now + parse_duration(expires_in or DEFAULT_EXPIRY)
    except ValueError as exc:
        usage(f"--expires-in: {exc}")
