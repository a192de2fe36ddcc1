"""Canonical bytes: RFC 8785 (JCS), one definition used for signing and for document CIDs.

``rfc8785`` is the reference implementation, but it canonicalizes only a few thousand documents a
second, below the Ed25519 verify rate. Most ADDS documents hold nothing but ASCII member names,
strings, integers, booleans and null; for those, the C JSON encoder with sorted keys and no
whitespace writes exactly the JCS bytes:
- member names sort the same by UTF-16 code unit (JCS) and by code point (Python) when they are
  ASCII;
- integers within +-(2**53 - 1) print the same digits in ECMAScript and in Python;
- both escape only '"', '\\' and control characters, with the same short forms and lower-case
  ``\\u00xx``, and write every other character as UTF-8 (``ensure_ascii=False``).
Anything else (a float, a non-ASCII member name, a big integer) goes to ``rfc8785``. The tests
differential-test the fast path against ``rfc8785`` with hypothesis.
"""

from __future__ import annotations

import json
from typing import Any

import rfc8785

from .ijson import MAX_SAFE_INTEGER

__all__ = ["CanonicalizationError", "canonicalize", "is_simple"]

_encode = json.JSONEncoder(
    ensure_ascii=False, allow_nan=False, sort_keys=True, separators=(",", ":"), check_circular=False
).encode


class CanonicalizationError(ValueError):
    """A value with no canonical JSON form (NaN, an unsupported type, a lone surrogate...)."""


def is_simple(value: Any) -> bool:
    """True when the fast encoder's output is the JCS form of ``value`` (see module docstring)."""
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is str or kind is bool or item is None:
            continue
        if kind is int:
            if not -MAX_SAFE_INTEGER <= item <= MAX_SAFE_INTEGER:
                return False
        elif kind is dict:
            for name in item:
                if type(name) is not str or not name.isascii():
                    return False
            stack.extend(item.values())
        elif kind is list:
            stack.extend(item)
        else:
            return False
    return True


def canonicalize(value: Any, *, simple: bool | None = None) -> bytes:
    """The RFC 8785 bytes of a JSON value.

    ``simple`` may be passed when the caller already knows (the I-JSON parser records it);
    otherwise the value is inspected.
    """
    if simple is None:
        simple = is_simple(value)
    try:
        if simple:
            return _encode(value).encode("utf-8")
        return bytes(rfc8785.dumps(value))
    except (UnicodeEncodeError, ValueError, TypeError, rfc8785.CanonicalizationError) as exc:
        raise CanonicalizationError(str(exc)) from None
