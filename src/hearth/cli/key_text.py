"""Public keys typed or pasted on the command line, in either base64 alphabet.

``hearth keys generate`` and ``hearth adds keygen`` print base64url (ADDS's encoding), while
the service's routes and ``hearth runtime show`` use standard base64; a newcomer pastes
whichever they have. So every option that reads a key accepts both, padded or not, and each
caller re-encodes the bytes in the form its destination wants. Only the stdlib is used: the
``hearth adds`` commands that read keys must not pull in the client stack (see
tests/cli/test_cli_start.py).
"""

from __future__ import annotations

import base64
import binascii
import re

_TEXT = re.compile(r"[A-Za-z0-9+/_-]+={0,2}")


def decode_key(text: str, *, what: str, length: int = 32) -> bytes:
    """The ``length`` bytes that ``text`` spells in standard base64 or base64url; ValueError
    naming ``what`` otherwise. Mixed alphabets and non-canonical spellings (non-zero unused
    bits, so that two texts could name one key) are refused."""
    stripped = text.strip()
    standard, url = any(c in stripped for c in "+/"), any(c in stripped for c in "-_")
    if not _TEXT.fullmatch(stripped) or (standard and url):
        raise ValueError(f"{what} is neither base64 nor base64url")
    bare = stripped.rstrip("=").translate(str.maketrans("-_", "+/"))
    try:
        raw = base64.b64decode(bare + "=" * (-len(bare) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(f"{what} is neither base64 nor base64url") from None
    if base64.b64encode(raw).decode("ascii").rstrip("=") != bare:
        raise ValueError(f"{what} is not a canonical base64 spelling")
    if len(raw) != length:
        raise ValueError(f"{what} decodes to {len(raw)} bytes, not {length}")
    return raw


def standard_b64(raw: bytes) -> str:
    """The service's spelling of a key: standard base64, padded."""
    return base64.b64encode(raw).decode("ascii")
