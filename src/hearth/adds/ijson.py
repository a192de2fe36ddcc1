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

Two paths give the same verdicts. The usual one parses with a prebuilt decoder and no per-object
hook (a hook makes the C scanner build a list of pairs per object, and ``json.loads`` with hooks
builds a new decoder per call) and then proves the value is exact: the members it holds, counted
a level at a time, are as many as the colons outside strings, so no name was repeated. The
same walk and the same string-free skeleton of the bytes tell whether the bytes are already the
document's RFC 8785 form, which spares the validator an encoding to find the signed bytes.
Anything that path does not settle (an error of any kind, a float, a 16-digit run, a repeated
name) goes to the hooked parse, which raises exactly the error it always raised.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from itertools import chain
from typing import Any, NamedTuple

__all__ = ["MAX_DEPTH", "MAX_SAFE_INTEGER", "IJsonError", "Parsed", "parse", "scan_plain"]

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
# Mapping digits to "0" and every other byte to a space makes the scan for a run one substring
# search (about 15 times faster than a regex on a 160 kB manifest).
_DIGITS_TO_ZERO = bytes(0x30 if 0x30 <= c <= 0x39 else 0x20 for c in range(256))
_SIXTEEN_DIGITS = b"0" * 16
_SCAN_THRESHOLD = 8192
_ESCAPED_PAIR = re.compile(rb'\\[\\"]')
_NOT_STRUCTURE = bytes(c for c in range(256) if c not in b'[]{}"')
# Kept for the skeleton of the fast path: brackets, quotes, colons (one per member) and the
# whitespace a canonical form has none of outside strings.
_WHITESPACE = b" \t\n\r"
_NOT_SKELETON = bytes(c for c in range(256) if c not in b'[]{}":' + _WHITESPACE)
# A number "-0" (canonically "0"); it follows one of these in bytes with no whitespace.
_MINUS_ZERO = (b":-0", b",-0", b"[-0")
_STRING = re.compile(rb'"[^"]*"')
_INNERMOST = re.compile(rb"\[\]|\{\}")
_NONZERO_DIGIT = re.compile("[1-9]")
_EXPONENT = re.compile("[eE]")


class IJsonError(ValueError):
    """Bytes that are not strict I-JSON. ``code`` is stable; see docs/adds.md."""

    def __init__(self, code: str, message: str) -> None:
        self.code = code
        super().__init__(message)


class Parsed(NamedTuple):
    """A parsed value, and whether it holds anything the fast canonicalizer must not touch.

    ``simple`` is true when every number is an integer and every member name is ASCII: then the
    RFC 8785 form equals what the C JSON encoder writes with sorted keys (see canonical.py).
    A named tuple: built once per document, it costs a fifth of a frozen dataclass.
    """

    value: Any
    simple: bool
    # True only when the bytes are known to be exactly the RFC 8785 form of ``value``; False
    # when they are not or when the parser did not find out.
    canonical: bool = False


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

    Quotes alternate open and close once escapes are gone, so removing ``""`` (an emptied
    string, or the close and open of two neighbours, which merges them) keeps every bracket
    that was inside a string inside one; the regex runs only for what is left, a string that
    held a bracket or a quote.
    """
    if data.count(b"[") + data.count(b"{") <= limit:
        return False
    return _peel(_outside_strings(data, _NOT_STRUCTURE), limit)


def _outside_strings(data: bytes, drop: bytes) -> bytes:
    """The bytes outside strings of valid JSON, less those in ``drop`` (see _deeper_than)."""
    if b"\\" in data:
        data = _ESCAPED_PAIR.sub(b"", data)
    skeleton = data.translate(None, drop).replace(b'""', b"")
    if b'"' in skeleton:
        skeleton = _STRING.sub(b"", skeleton)
    return skeleton


def _peel(skeleton: bytes, limit: int) -> bool:
    """Whether a bracket skeleton nests deeper than ``limit``."""
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


class _Settle(Exception):
    """Raised by the fast path's hooks: leave this document to the hooked parse."""


def _settle(text: str) -> float:
    raise _Settle


def _refuse_constant(name: str) -> float:
    raise _Settle


# No object hook and no integer hook: the C scanner builds dicts itself. A float or a NaN
# goes to the hooked parse.
_SCAN: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder(
    parse_float=_settle, parse_constant=_refuse_constant
).scan_once  # type: ignore[attr-defined]  # set by JSONDecoder.__init__, not in typeshed
_CONTAINERS = frozenset({dict, list})


def scan_plain(text: str) -> tuple[bool, Any]:
    """(True, value) when ``text`` is one JSON value with no surrounding whitespace, no float
    and no NaN, as the plain scanner reads it; (False, None) otherwise. No strictness check at
    all (a repeated name is silently merged): for callers that prove the rest themselves, as
    the validator's canonical fast path does with its regex."""
    try:
        value, end = _SCAN(text, 0)
    except (_Settle, StopIteration, ValueError, RecursionError):
        return False, None
    return end == len(text), value


def _census(value: Any, *, check_ascii: bool) -> tuple[int, bool, bool]:
    """(members, every name ASCII, every object's names in sorted order) of a parsed value,
    a level of nesting at a time so that most of the work is C-level passes."""
    members = 0
    ascii_names = ordered = True
    level = [value]
    while True:
        types = set(map(type, level))
        if _CONTAINERS.isdisjoint(types):
            return members, ascii_names, ordered
        deeper: list[Any] = []
        if dict in types:
            dicts = level if len(types) == 1 else [item for item in level if type(item) is dict]
            members += sum(map(len, dicts))
            # The distinct name lists: one for all the chunks of a manifest.
            orders = set(map(tuple, dicts))
            if check_ascii and ascii_names:
                ascii_names = "".join(chain.from_iterable(orders)).isascii()
            if ordered:
                ordered = all(list(names) == sorted(names) for names in orders)
            deeper.extend(chain.from_iterable(map(dict.values, dicts)))
        if list in types:
            deeper.extend(chain.from_iterable(item for item in level if type(item) is list))
        level = deeper


def _census_small(value: Any, *, check_ascii: bool) -> tuple[int, bool, bool]:
    """_census for a small document: one object at a time costs less than a level's passes
    when the levels hold a few values each (a grant: 6 objects, 40 values)."""
    members = 0
    ascii_names = ordered = True
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is dict:
            members += len(item)
            names = list(item)
            if ordered and names != sorted(names):
                ordered = False
            if check_ascii and ascii_names:
                ascii_names = "".join(names).isascii()
            stack.extend([member for member in item.values() if type(member) in _CONTAINERS])
        elif kind is list:
            stack.extend([member for member in item if type(member) in _CONTAINERS])
    return members, ascii_names, ordered


def _parse_plain(
    data: bytes, text: str, ascii_input: bool, escapes: bool
) -> tuple[Parsed, bytes] | None:
    """The fast path (module docstring): a Parsed and the bytes outside strings (all of them,
    or only brackets, colons and whitespace), or None to leave the document to the hooked
    parse."""
    try:
        # The scanner itself: no leading or trailing whitespace (never in a canonical form;
        # the hooked parse takes it), so that decode()'s two whitespace matches are spared.
        value, end = _SCAN(text, 0)
    except (_Settle, StopIteration, ValueError, RecursionError):
        return None
    if end != len(text):
        return None
    check_ascii = not ascii_input or escapes
    if len(data) < _SCAN_THRESHOLD and b"\\" not in data:
        # Without a backslash quotes alternate open and close, so every other piece between
        # them is outside strings; cheaper than the skeleton's passes on a small document.
        skeleton = b"".join(data.split(b'"')[::2])
        members, ascii_names, ordered = _census_small(value, check_ascii=check_ascii)
    else:
        skeleton = _outside_strings(data, _NOT_SKELETON)
        members, ascii_names, ordered = _census(value, check_ascii=check_ascii)
    if members != skeleton.count(b":"):
        return None  # a repeated name: the hooked parse names it
    # Every number is an integer of at most 15 digits, so simple depends on the names alone.
    canonical = (
        ascii_names
        and ordered
        # Raw strings are canonical: control characters cannot be raw in JSON, and JCS escapes
        # nothing else but quotes and backslashes.
        and b"\\" not in data
        and len(skeleton.translate(None, _WHITESPACE)) == len(skeleton)
        and not (b"-0" in data and any(pattern in data for pattern in _MINUS_ZERO))
    )
    return Parsed(value, ascii_names, canonical), skeleton


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
    # An integer beyond 2**53 - 1 needs 16 digits; without such a run no integer needs a hook.
    long_digits = _SIXTEEN_DIGITS in data.translate(_DIGITS_TO_ZERO)
    plain = None if long_digits else _parse_plain(data, text, ascii_input, escapes)
    if plain is None:
        parsed = _parse_hooked(
            data,
            text,
            ascii_input=ascii_input,
            escapes=escapes,
            long_digits=long_digits,
            max_depth=max_depth,
        )
        deeper = _deeper_than(data, max_depth)
    else:
        parsed, skeleton = plain
        deeper = skeleton.count(b"[") + skeleton.count(b"{") > max_depth and _peel(
            skeleton.translate(None, _NOT_STRUCTURE), max_depth
        )
    if deeper:
        raise IJsonError("profile.ijson.depth", f"nesting deeper than {max_depth} levels")
    if escapes and _RISKY_ESCAPE.search(data):
        _walk_strings(parsed.value, _check_escaped)
    return parsed


def _parse_hooked(
    data: bytes,
    text: str,
    *,
    ascii_input: bool,
    escapes: bool,
    long_digits: bool,
    max_depth: int,
) -> Parsed:
    """json.loads with a hook per object, integer and float: every refusal, in text order."""
    # Member names are surely ASCII only when the bytes are and no \u escape can spell another.
    hooks = _Hooks(ascii_input=ascii_input and not escapes)
    # A hook call per integer is cheaper than a regex scan on small documents; on large ones
    # the scan for a 16-digit run decides whether any integer can be out of range.
    check_integers = len(data) < _SCAN_THRESHOLD or long_digits
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
    return Parsed(value, hooks.simple)
