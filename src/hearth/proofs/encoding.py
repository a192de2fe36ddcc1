"""Wire encodings of the service: standard base64 (padded, canonical) and RFC 3339 UTC times."""

from __future__ import annotations

import base64
import binascii
import re
from datetime import UTC, datetime

FRESHNESS_MS = 300_000


class EncodingError(ValueError):
    """A value that is not in the one accepted spelling."""


def b64_encode(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def b64_decode(text: str, *, length: int | None = None, what: str = "value") -> bytes:
    """Strict standard base64: padded, no whitespace, and the one canonical spelling.

    The stdlib accepts non-zero pad bits, so two texts could name one key; re-encoding and
    comparing refuses every spelling but the canonical one.
    """
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        raise EncodingError(f"{what} is not standard base64") from None
    if base64.b64encode(raw).decode("ascii") != text:
        raise EncodingError(f"{what} is not canonical standard base64")
    if length is not None and len(raw) != length:
        raise EncodingError(f"{what} must decode to {length} bytes, not {len(raw)}")
    return raw


_B64_CHAR = "[A-Za-z0-9+/]"
# The last character before the padding carries unused low bits, which must be zero.
_B64_TAIL = {1: f"{_B64_CHAR}[AQgw]==", 2: f"{_B64_CHAR}{{2}}[AEIMQUYcgkosw048]="}


def b64_pattern(length: int | None = None) -> str:
    """A regex (anchored, in the syntax JSON Schema uses) matching exactly the texts
    ``b64_decode`` accepts: of ``length`` bytes, or of any length when it is None."""
    if length is None:
        return f"^(?:{_B64_CHAR}{{4}})*(?:{_B64_TAIL[1]}|{_B64_TAIL[2]})?$"
    groups = f"{_B64_CHAR}{{{4 * (length // 3)}}}" if length >= 3 else ""
    return f"^{groups}{_B64_TAIL.get(length % 3, '')}$"


# RFC 3339 date-time: a zone is required (Z or an offset); fractions of a second are optional.
_RFC3339 = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$"
)


def parse_timestamp(text: str) -> datetime:
    """Parse an RFC 3339 timestamp with a zone; naive or loose spellings are refused."""
    match = _RFC3339.match(text)
    if match is None:
        raise EncodingError("timestamp must be RFC 3339 with a zone, e.g. 2026-11-20T12:00:00Z")
    fraction = match.group(7) or ""
    zone = match.group(8)
    micro = (fraction[1:] + "000000")[:6] if fraction else "000000"
    normal = (
        f"{match.group(1)}-{match.group(2)}-{match.group(3)}T{match.group(4)}:{match.group(5)}:"
        f"{match.group(6)}.{micro}{'+00:00' if zone in ('Z', 'z') else zone}"
    )
    try:
        return datetime.fromisoformat(normal).astimezone(UTC)
    except ValueError:
        raise EncodingError("timestamp is not a valid date and time") from None


def format_timestamp(moment: datetime) -> str:
    """The service's own spelling: UTC, milliseconds, ``Z``."""
    moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def is_fresh(moment: datetime, now: datetime, window_ms: int = FRESHNESS_MS) -> bool:
    """Within the window of the server's clock, in either direction (clocks drift both ways)."""
    return abs((now - moment).total_seconds() * 1000) <= window_ms


_B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_ED25519_PUB = b"\xed\x01"  # multicodec ed25519-pub, as its varint


def did_key_for_ed25519(public_key: bytes) -> str:
    """``did:key:z...`` of a 32-byte Ed25519 public key: multibase base58btc of the multicodec
    ``ed25519-pub`` prefix and the key."""
    if len(public_key) != 32:
        raise EncodingError("an Ed25519 public key is 32 bytes")
    raw = _ED25519_PUB + public_key
    value = int.from_bytes(raw, "big")
    digits = ""
    while value:
        value, digit = divmod(value, 58)
        digits = _B58[digit] + digits
    zeros = len(raw) - len(raw.lstrip(b"\x00"))
    return "did:key:z" + "1" * zeros + digits


def ed25519_from_did_key(did: str) -> bytes | None:
    """The Ed25519 public key a ``did:key`` names (a fragment is ignored), or None when it
    names none (another key type, another multibase, or a malformed identifier)."""
    if not did.startswith("did:key:z"):
        return None
    encoded = did.removeprefix("did:key:z").split("#", 1)[0]
    if not encoded or len(encoded) > 60:
        return None
    value = 0
    for char in encoded:
        digit = _B58.find(char)
        if digit < 0:
            return None
        value = value * 58 + digit
    zeros = len(encoded) - len(encoded.lstrip("1"))
    raw = b"\x00" * zeros + value.to_bytes((value.bit_length() + 7) // 8, "big")
    if len(raw) != 34 or not raw.startswith(_ED25519_PUB):
        return None
    return raw[2:]
