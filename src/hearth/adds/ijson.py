"""Strict I-JSON (RFC 7493) parsing of bytes.

``json.loads`` alone accepts duplicate member names (the last one wins), NaN and Infinity, lone
surrogates, noncharacters, integers of any size and floats that overflow or underflow. This module
wraps it with hooks and checks so that a parsed value is exactly what the bytes say and nothing a
second parser could read differently.

Policy (docs/adds.md):
- UTF-8 only, strictly decoded: no BOM, no invalid or overlong sequences, no encoded surrogates.
- No duplicate member names at any depth (compared after unescaping).
- No lone surrogates and no Unicode noncharacters, raw or escaped.
- Numbers: integers exact within +-(2**53 - 1); other numbers must be finite doubles, a
  non-zero literal must not underflow to zero, and a double from 2**53 up to 1e21 is refused
  because its RFC 8785 form is an integer beyond that range (canonical bytes must parse again).
  A number written with a fraction or exponent is a float even when its value is whole: ``1.0``
  is not an integer.
- Nesting deeper than ``MAX_DEPTH`` arrays and objects is refused.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["MAX_DEPTH", "MAX_SAFE_INTEGER", "IJsonError", "Parsed", "parse"]

MAX_SAFE_INTEGER = 2**53 - 1
MAX_DEPTH = 64
_TWO_53 = float(2**53)

_BOM = b"\xef\xbb\xbf"
# An escape that can produce a surrogate or a noncharacter: \uD800-\uDFFF, \uFDD0-\uFDEF,
# \uFFFE, \uFFFF. When none is present (the usual case) the decoded text alone decides.
_RISKY_ESCAPE = re.compile(rb"\\u(?:[dD][89a-fA-F]|[fF][dD][dDeE]|[fF]{3}[eEfF])")
# Raw noncharacters as UTF-8 bytes: U+FDD0..U+FDEF (EF B7 90..AF), U+FFFE/U+FFFF (EF BF BE/BF),
# and U+nFFFE/U+nFFFF in the supplementary planes (F0..F4, a second byte ending in 0xF, BF, BE/BF).
# Matching bytes is far cheaper than a str class with astral ranges.
_RAW_NONCHARACTER = re.compile(
    rb"\xef\xb7[\x90-\xaf]|\xef\xbf[\xbe\xbf]|[\xf0-\xf4][\x8f\x9f\xaf\xbf]\xbf[\xbe\xbf]"
)
# Code points that may not appear in a decoded string (checked only after a risky escape).
_SURROGATE_OR_NONCHARACTER = re.compile(
    "[\ud800-\udfff\ufdd0-\ufdef\ufffe\uffff"
    + "".join(f"{chr(p * 0x10000 + 0xFFFE)}{chr(p * 0x10000 + 0xFFFF)}" for p in range(1, 17))
    + "]"
)
# An integer beyond 2**53 - 1 has at least 16 digits; without such a run no integer needs a hook.
_LONG_DIGITS = re.compile(rb"[0-9]{16}")
_SCAN_THRESHOLD = 8192
_ESCAPED_PAIR = re.compile(rb'\\[\\"]')
_NOT_STRUCTURE = bytes(c for c in range(256) if c not in b'[]{}"')
_STRING = re.compile(rb'"[^"]*"')
_INNERMOST = re.compile(rb"\[\]|\{\}")
_NONZERO_DIGIT = re.compile("[1-9]")
_EXPONENT = re.compile("[eE]")


class IJsonError(ValueError):
    """Bytes that are not strict I-JSON. ``code`` is stable; see docs/adds.md."""

    def __init__(self, code: str, message: str) -> None:
        self.code = code
        super().__init__(message)


@dataclass(frozen=True, slots=True)
class Parsed:
    """A parsed value, and whether it holds anything the fast canonicalizer must not touch.

    ``simple`` is true when every number is an integer and every member name is ASCII: then the
    RFC 8785 form equals what the C JSON encoder writes with sorted keys (see canonical.py).
    """

    value: Any
    simple: bool


class _Hooks:
    """Parser hooks; one instance per parse so that the flags are not shared."""

    __slots__ = ("ascii_input", "simple")

    def __init__(self, *, ascii_input: bool) -> None:
        # With ASCII input every member name is ASCII, so only floats can spoil ``simple``.
        self.ascii_input = ascii_input
        self.simple = True

    def object_pairs(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        obj = dict(pairs)
        if len(obj) != len(pairs):
            seen: set[str] = set()
            for name, _ in pairs:
                if name in seen:
                    raise IJsonError(
                        "spec.ijson.duplicate_member", f"duplicate member name {name!r}"
                    )
                seen.add(name)
        if self.simple and not self.ascii_input and not all(name.isascii() for name in obj):
            self.simple = False
        return obj

    def integer(self, text: str) -> int:
        # Compare lengths first: int() refuses thousands of digits with a confusing message.
        value = int(text) if len(text) <= 17 else MAX_SAFE_INTEGER + 1
        if not -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
            raise IJsonError("spec.ijson.integer_range", f"integer {text} is beyond +-(2**53 - 1)")
        return value

    def number(self, text: str) -> float:
        value = float(text)
        if math.isinf(value):
            raise IJsonError("spec.ijson.number_range", f"number {text} overflows a double")
        if _TWO_53 <= abs(value) < 1e21:
            # RFC 8785 writes such a double as a plain integer beyond 2**53 - 1, which this
            # parser refuses: accepting it would make a document whose canonical bytes do not
            # parse again.
            raise IJsonError(
                "profile.ijson.number_range",
                f"number {text} would be canonicalized as an integer beyond 2**53 - 1",
            )
        if value == 0.0 and _NONZERO_DIGIT.search(_EXPONENT.split(text, maxsplit=1)[0]):
            raise IJsonError("spec.ijson.number_range", f"number {text} underflows a double")
        self.simple = False
        return value


def _constant(name: str) -> float:
    raise IJsonError("spec.ijson.syntax", f"{name} is not JSON")


def _deeper_than(data: bytes, limit: int) -> bool:
    """Whether syntactically valid JSON nests arrays and objects deeper than ``limit``.

    Escaped quotes and backslashes are dropped, then everything but brackets and quotes, then
    whole strings; what is left is the bracket skeleton, and each pass of removing innermost
    pairs peels one level. All of it runs in C, a pass per level.
    """
    if data.count(b"[") + data.count(b"{") <= limit:
        return False
    skeleton = _STRING.sub(b"", _ESCAPED_PAIR.sub(b"", data).translate(None, _NOT_STRUCTURE))
    for _ in range(limit):
        skeleton = _INNERMOST.sub(b"", skeleton)
        if not skeleton:
            return False
    return True


def _walk_strings(value: Any, check: Callable[[str], None]) -> None:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            check(item)
        elif isinstance(item, dict):
            for name, member in item.items():
                check(name)
                stack.append(member)
        elif isinstance(item, list):
            stack.extend(item)


def _check_escaped(text: str) -> None:
    match = _SURROGATE_OR_NONCHARACTER.search(text)
    if match is None:
        return
    char = match.group()
    if "\ud800" <= char <= "\udfff":
        raise IJsonError("spec.ijson.lone_surrogate", f"lone surrogate U+{ord(char):04X}")
    raise IJsonError("spec.ijson.noncharacter", f"noncharacter U+{ord(char):04X}")


def parse(data: bytes, *, max_depth: int = MAX_DEPTH) -> Parsed:
    """Parse bytes as strict I-JSON, or raise IJsonError with a stable code."""
    if data.startswith(_BOM):
        raise IJsonError("spec.ijson.bom", "a byte order mark is not allowed")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise IJsonError("spec.ijson.utf8", f"not UTF-8 at byte {exc.start}") from None
    ascii_input = data.isascii()
    if not ascii_input and _RAW_NONCHARACTER.search(data):
        raise IJsonError("spec.ijson.noncharacter", "a Unicode noncharacter is not allowed")
    escapes = b"\\u" in data
    # Member names are surely ASCII only when the bytes are and no \u escape can spell another.
    hooks = _Hooks(ascii_input=ascii_input and not escapes)
    # A hook call per integer is cheaper than a regex scan on small documents; on large ones
    # the scan for a 16-digit run decides whether any integer can be out of range.
    check_integers = len(data) < _SCAN_THRESHOLD or _LONG_DIGITS.search(data) is not None
    try:
        value = json.loads(
            text,
            object_pairs_hook=hooks.object_pairs,
            parse_int=hooks.integer if check_integers else None,
            parse_float=hooks.number,
            parse_constant=_constant,
        )
    except IJsonError:
        raise
    except json.JSONDecodeError as exc:
        raise IJsonError(
            "spec.ijson.syntax", f"{exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
    except RecursionError:
        raise IJsonError("profile.ijson.depth", f"nesting deeper than {max_depth} levels") from None
    except ValueError as exc:  # int() refusing thousands of digits
        raise IJsonError("spec.ijson.syntax", str(exc)) from None
    if _deeper_than(data, max_depth):
        raise IJsonError("profile.ijson.depth", f"nesting deeper than {max_depth} levels")
    if escapes and _RISKY_ESCAPE.search(data):
        _walk_strings(value, _check_escaped)
    return Parsed(value, hooks.simple)
