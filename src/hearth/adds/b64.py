"""Strict base64url (RFC 4648 section 5, no padding).

The standard library decodes leniently: it drops characters outside the alphabet and ignores the
unused bits of the last character, so two different strings can decode to the same bytes. ADDS
requires that decoding then re-encoding reproduces the input exactly; this module enforces that
without a round trip, by checking the alphabet, the length and the unused tail bits.
"""

from __future__ import annotations

import base64
import binascii
import re

__all__ = [
    "B64URL_ALPHABET",
    "b64url_decode",
    "b64url_encode",
    "b64url_problem",
    "canonical_b64url_last",
    "canonical_b64url_pattern",
]

_ALPHABET = re.compile(r"[A-Za-z0-9_-]+")
_SYMBOLS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
B64URL_ALPHABET = _SYMBOLS
_VALUE = {c: i for i, c in enumerate(_SYMBOLS)}


def b64url_encode(data: bytes) -> str:
    """Encode bytes as unpadded base64url."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64url_problem(text: str) -> str | None:
    """Why ``text`` is not canonical unpadded base64url, or None when it is.

    Returns a short reason: ``alphabet`` (empty, padding or a character outside the alphabet),
    ``length`` (a length no byte string encodes to) or ``non_canonical`` (unused bits set).
    """
    if not _ALPHABET.fullmatch(text):
        return "alphabet"
    remainder = len(text) % 4
    if remainder == 1:
        return "length"
    # The last character carries 2 (remainder 3) or 4 (remainder 2) unused low bits; canonical
    # encoders set them to zero.
    if remainder and _VALUE[text[-1]] & (0b1111 if remainder == 2 else 0b11):
        return "non_canonical"
    return None


def canonical_b64url_pattern(length: int) -> re.Pattern[str]:
    """A regex matching exactly the canonical base64url strings of ``length`` characters.

    The last character of a string whose length is 2 or 3 modulo 4 may only be one whose
    unused low bits are zero; one regex match replaces a scan and a table look-up.
    """
    last = canonical_b64url_last(length)
    if last == _SYMBOLS:
        return re.compile(f"[A-Za-z0-9_-]{{{length}}}")
    last_class = "[" + last.replace("-", "\\-") + "]"
    return re.compile(f"[A-Za-z0-9_-]{{{length - 1}}}{last_class}")


def canonical_b64url_last(length: int) -> str:
    """The characters that may end a canonical base64url string of ``length`` characters: those
    whose unused low bits are zero (every character when the length is a multiple of 4)."""
    if length < 1 or length % 4 == 1:
        raise ValueError(f"no byte string encodes to {length} base64url characters")
    unused_bits = {0: 0, 2: 4, 3: 2}[length % 4]
    return "".join(c for c in _SYMBOLS if not _VALUE[c] & ((1 << unused_bits) - 1))


def b64url_decode(text: str) -> bytes:
    """Decode canonical unpadded base64url; raise ValueError for anything else."""
    reason = b64url_problem(text)
    if reason is not None:
        raise ValueError(f"not canonical unpadded base64url ({reason})")
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except binascii.Error as exc:  # unreachable after the checks above; kept as a guard
        raise ValueError("not base64url") from exc
