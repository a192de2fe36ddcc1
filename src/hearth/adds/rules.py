"""Checks for the shared scalar types and objects of ADDS 0.1, as composable closures.

A check is ``check(value, pointer, problems)``: it appends a Problem for everything wrong with
``value`` and never raises. Checks are built once at import time (see kinds.py), so validating a
document is a walk over prebuilt closures, with no schema interpretation on the hot path.

Each builder returns a ``Rule``: the check, and ``all_ok(values)``, which says whether the check
would report nothing for every one of ``values``, without building a single pointer or Problem.
``all_ok`` works a column at a time (the ``index`` of all 1,000 chunks of a manifest, then their
``cid``...) with C-level passes: ``set(map(type, values))``, ``min``/``max``, one regex match over
the values joined by newlines. The validator asks ``all_ok`` first and walks the reporting checks
only when it says no, so a valid document costs a few passes per member instead of a closure
call and a pointer per value, and an invalid one gets exactly the problems it always got.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from .b64 import B64URL_ALPHABET, b64url_problem, canonical_b64url_last, canonical_b64url_pattern
from .cid import CANONICAL_CID_CLASSES, CANONICAL_CID_PATTERN, cid_problem
from .ijson import MAX_SAFE_INTEGER
from .problems import Problem

__all__ = [
    "EXTENSIONS_GROUP",
    "AllOk",
    "Canonical",
    "Check",
    "Field",
    "Ok",
    "Rule",
    "array",
    "b64url",
    "cid",
    "const",
    "enum",
    "extensions",
    "integer",
    "json_type",
    "obj",
    "string",
]

Problems = list[Problem]
Check = Callable[[Any, str, Problems], None]
# Whether a check reports nothing for one value, and for every one of several values.
Ok = Callable[[Any], bool]
AllOk = Callable[[Sequence[Any]], bool]

_EXTENSION_NAME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
_STR = frozenset({str})
_INT = frozenset({int})
_LIST = frozenset({list})
_DICT = frozenset({dict})


@dataclass(frozen=True, slots=True)
class Canonical:
    """A regex (source) that matches only the RFC 8785 text of values the check passes, written
    with no escapes and no whitespace, plus ``post``: what the regex cannot see (uniqueness,
    the order of free member names), checked on the parsed value; None when nothing is left.

    Sound, not complete: text it does not match may still be valid (a 16-digit integer, an
    escape, a nested extension value); the validator then takes the general path. The regex is
    only ever matched against text that the JSON scanner also accepts, so separators may be
    loose (``,?``): in valid JSON the commas are where they belong. Quantifiers are possessive
    (``++``, ``?+``): no text needs them to give back what they took (a value never ends in
    the character that begins the next), and the regex engine then keeps no backtrack state.
    """

    pattern: str
    post: Ok | None = None


class Rule:
    """A check (call the Rule as one) and its predicates (module docstring): ``ok(value)`` for
    one value, straight-line, and ``all_ok(values)`` for a column of them; ``canonical`` when
    the values it passes have a canonical text a regex can describe."""

    __slots__ = ("all_ok", "canonical", "check", "ok")

    def __init__(
        self, check: Check, ok: Ok, all_ok: AllOk, canonical: Canonical | None = None
    ) -> None:
        self.check = check
        self.ok = ok
        self.all_ok = all_ok
        self.canonical = canonical

    def __call__(self, value: Any, pointer: str, problems: Problems) -> None:
        self.check(value, pointer, problems)


def _passes(check: Check, value: Any) -> bool:
    scratch: Problems = []
    check(value, "", scratch)
    return not scratch


def _predicates(check: Check) -> tuple[Ok, AllOk]:
    """A Rule's predicates; for a plain check, running it into a scratch list (exact, slower)."""
    if isinstance(check, Rule):
        return check.ok, check.all_ok

    def ok(value: Any) -> bool:
        return _passes(check, value)

    def all_ok(values: Sequence[Any]) -> bool:
        return all(map(ok, values))

    return ok, all_ok


def _only(values: Sequence[Any], types: frozenset[type]) -> bool:
    """Every value is exactly of the one type in ``types`` (``values`` not empty)."""
    return set(map(type, values)) == types


class _FixedColumn:
    """Whether strings all have ``length`` characters, every one from ``alphabet`` and, at the
    positions listed, from a narrower set: the shape of fixed-length base64url and of a CID.

    One string per call costs a regex match; a column of them is joined and checked with
    ``bytes.translate`` (deleting the allowed bytes must leave nothing), the positions with a
    strided slice each. That is all C and about ten times faster than matching each value.
    """

    __slots__ = ("alphabet", "length", "positions")

    def __init__(self, length: int, alphabet: str, positions: Mapping[int, str]) -> None:
        self.length = length
        self.alphabet = alphabet.encode("ascii")
        self.positions = [(index, allowed.encode("ascii")) for index, allowed in positions.items()]

    def __call__(self, values: Sequence[str]) -> bool:
        length = self.length
        if set(map(len, values)) != {length}:
            return False
        joined = "".join(values)
        if not joined.isascii():
            return False
        data = joined.encode("ascii")
        if data.translate(None, self.alphabet):
            return False
        return not any(
            data[index::length].translate(None, allowed) for index, allowed in self.positions
        )


# A string of the canonical text with no escape: any character but a quote, a backslash or a
# control character (those JCS escapes).
_RAW_CHAR = r'[^"\\\x00-\x1f]'


def _quoted(text: str) -> str:
    """The regex for one fixed JSON string that needs no escape."""
    if re.search(_RAW_CHAR.replace("[^", "[", 1), text):
        raise ValueError(f"{text!r} would need escaping")
    return '"' + re.escape(text) + '"'


def _canonical_of(check: Check) -> Canonical | None:
    return check.canonical if isinstance(check, Rule) else None


def json_type(value: Any) -> str:
    """The JSON name of a parsed value's type, for messages."""
    if value is None:
        return "null"
    return {bool: "boolean", int: "integer", float: "number", str: "string", list: "array"}.get(
        type(value), "object" if isinstance(value, dict) else type(value).__name__
    )


def _escape(name: str) -> str:
    return name.replace("~", "~0").replace("/", "~1")


def _type_error(expected: str, value: Any, pointer: str, problems: Problems) -> None:
    problems.append(Problem(pointer, "spec.type", f"expected {expected}, got {json_type(value)}"))


def string(*, min_length: int = 1) -> Rule:
    """A string of at least ``min_length`` characters (code points)."""

    def check(value: Any, pointer: str, problems: Problems) -> None:
        if type(value) is not str:
            _type_error("a string", value, pointer, problems)
        elif len(value) < min_length:
            problems.append(
                Problem(pointer, "spec.min_length", f"must be at least {min_length} character")
            )

    def ok(value: Any) -> bool:
        return type(value) is str and len(value) >= min_length

    def all_ok(values: Sequence[Any]) -> bool:
        if not values:
            return True
        if not _only(values, _STR):
            return False
        if min_length == 1:
            return "" not in values
        return min_length <= 0 or min(map(len, values)) >= min_length

    # Without escapes every character of the text is one code point of the value (the fast
    # path takes ASCII input only, where that is plain).
    pattern = f'"{_RAW_CHAR}{{{max(min_length, 0)},}}+"'
    return Rule(check, ok, all_ok, Canonical(pattern))


def const(expected: str) -> Rule:
    def check(value: Any, pointer: str, problems: Problems) -> None:
        if value != expected or type(value) is not str:
            problems.append(Problem(pointer, "spec.const", f"must be {expected!r}"))

    def ok(value: Any) -> bool:
        return value == expected and type(value) is str

    def all_ok(values: Sequence[Any]) -> bool:
        # Only a str equals a str, so counting equal values also checks their type.
        return values.count(expected) == len(values)

    return Rule(check, ok, all_ok, Canonical(_quoted(expected)))


def enum(*allowed: str) -> Rule:
    options = frozenset(allowed)

    def check(value: Any, pointer: str, problems: Problems) -> None:
        if type(value) is not str:
            _type_error("a string", value, pointer, problems)
        elif value not in options:
            listed = ", ".join(repr(a) for a in allowed)
            problems.append(Problem(pointer, "spec.enum", f"must be one of {listed}"))

    def ok(value: Any) -> bool:
        return type(value) is str and value in options

    def all_ok(values: Sequence[Any]) -> bool:
        return not values or (_only(values, _STR) and options.issuperset(values))

    pattern = "(?:" + "|".join(_quoted(option) for option in allowed) + ")"
    return Rule(check, ok, all_ok, Canonical(pattern))


def integer(minimum: int = 0, maximum: int = MAX_SAFE_INTEGER, *, epoch: bool = False) -> Rule:
    """An integer in [minimum, maximum]. A number with a fraction is never an integer; for epoch
    seconds that is rule 6 of the specification and gets its own code."""

    def check(value: Any, pointer: str, problems: Problems) -> None:
        if type(value) is not int:
            if epoch and type(value) is float:
                problems.append(
                    Problem(pointer, "spec.time.fractional", "times are whole epoch seconds")
                )
            else:
                _type_error("an integer", value, pointer, problems)
        elif not minimum <= value <= maximum:
            problems.append(Problem(pointer, "spec.range", f"must be from {minimum} to {maximum}"))

    def ok(value: Any) -> bool:
        # type() is exact: a bool is not an int here, as in check.
        return type(value) is int and minimum <= value <= maximum

    def all_ok(values: Sequence[Any]) -> bool:
        return not values or (
            _only(values, _INT) and minimum <= min(values) and max(values) <= maximum
        )

    return Rule(check, ok, all_ok, _integer_canonical(minimum, maximum))


def _integer_canonical(minimum: int, maximum: int) -> Canonical | None:
    """Canonical integers of at most ``digits`` digits, where every such number is in range:
    sound for minimum 0 or 1 (a larger minimum has no such regex here)."""
    digits = min(len(str(maximum + 1)) - 1, 15)
    if minimum not in {0, 1} or digits < 1:
        return None
    positive = f"[1-9][0-9]{{0,{digits - 1}}}+"
    return Canonical(f"(?:0|{positive})" if minimum == 0 else positive)


def b64url(length: int | None = None) -> Rule:
    """Canonical unpadded base64url, optionally of an exact length in characters."""

    canonical = canonical_b64url_pattern(length) if length is not None else None
    column = (
        _FixedColumn(length, B64URL_ALPHABET, {length - 1: canonical_b64url_last(length)})
        if length is not None
        else None
    )

    def check(value: Any, pointer: str, problems: Problems) -> None:
        if type(value) is not str:
            _type_error("a base64url string", value, pointer, problems)
            return
        if canonical is not None and canonical.fullmatch(value):
            return
        reason = b64url_problem(value)
        if reason == "alphabet":
            problems.append(
                Problem(pointer, "spec.base64url.alphabet", "not unpadded base64url text")
            )
            return
        if length is not None and len(value) != length:
            problems.append(Problem(pointer, "spec.length", f"must be exactly {length} characters"))
        if reason is not None:
            problems.append(
                Problem(
                    pointer,
                    "spec.base64url.non_canonical",
                    "base64url that does not survive decode and re-encode",
                )
            )

    # With a length, check reports nothing exactly when the canonical pattern matches.
    def ok(value: Any) -> bool:
        if type(value) is not str:
            return False
        if canonical is not None:
            return canonical.fullmatch(value) is not None
        return b64url_problem(value) is None

    def all_ok(values: Sequence[Any]) -> bool:
        if not values:
            return True
        if not _only(values, _STR):
            return False
        if column is not None:
            return column(values)
        return all(b64url_problem(value) is None for value in values)

    text = Canonical(f'"{canonical.pattern}"') if canonical is not None else None
    return Rule(check, ok, all_ok, text)


_CID_COLUMN = _FixedColumn(*CANONICAL_CID_CLASSES)


def cid() -> Rule:
    def check(value: Any, pointer: str, problems: Problems) -> None:
        if type(value) is not str:
            _type_error("a CID string", value, pointer, problems)
            return
        problem = cid_problem(value)
        if problem is not None:
            problems.append(Problem(pointer, f"spec.cid.{problem[0]}", problem[1]))

    # cid_problem is None exactly when the canonical pattern matches.
    def ok(value: Any) -> bool:
        return type(value) is str and CANONICAL_CID_PATTERN.fullmatch(value) is not None

    def all_ok(values: Sequence[Any]) -> bool:
        return not values or (_only(values, _STR) and _CID_COLUMN(values))

    return Rule(check, ok, all_ok, Canonical(f'"{CANONICAL_CID_PATTERN.pattern}"'))


def _unique_key(member: Any) -> Any:
    return member if isinstance(member, str | int) else repr(member)


def array(
    item: Check, *, min_items: int = 0, max_items: int | None = None, unique: bool = False
) -> Rule:
    def check(value: Any, pointer: str, problems: Problems) -> None:
        if type(value) is not list:
            _type_error("an array", value, pointer, problems)
            return
        if len(value) < min_items:
            problems.append(
                Problem(pointer, "spec.min_items", f"must have at least {min_items} item(s)")
            )
        if max_items is not None and len(value) > max_items:
            problems.append(
                Problem(pointer, "spec.max_items", f"must have at most {max_items} items")
            )
        for index, member in enumerate(value):
            item(member, f"{pointer}/{index}", problems)
        if unique:
            seen: dict[Any, int] = {}
            for index, member in enumerate(value):
                key = _unique_key(member)
                if key in seen:
                    problems.append(
                        Problem(
                            f"{pointer}/{index}",
                            "spec.unique",
                            f"duplicates item {seen[key]}",
                        )
                    )
                else:
                    seen[key] = index

    _, items_ok = _predicates(item)

    def distinct(value: list[Any]) -> bool:
        return len(set(map(_unique_key, value))) == len(value)

    def ok(value: Any) -> bool:
        if type(value) is not list:
            return False
        size = len(value)
        if size < min_items or (max_items is not None and size > max_items):
            return False
        return (not unique or distinct(value)) and items_ok(value)

    def all_ok(values: Sequence[Any]) -> bool:
        if not values:
            return True
        if len(values) == 1:
            return ok(values[0])
        if not _only(values, _LIST):
            return False
        lengths = list(map(len, values))
        if min(lengths) < min_items or (max_items is not None and max(lengths) > max_items):
            return False
        if unique and not all(map(distinct, values)):
            return False
        return items_ok(list(itertools.chain.from_iterable(values)))

    return Rule(check, ok, all_ok, _array_canonical(item, min_items, max_items, unique))


def _array_canonical(
    item: Check, min_items: int, max_items: int | None, unique: bool
) -> Canonical | None:
    inner = _canonical_of(item)
    if inner is None or max_items is not None or min_items > 1:
        return None
    items = f"{inner.pattern}(?:,{inner.pattern})*"
    pattern = f"\\[{items}\\]" if min_items == 1 else f"\\[(?:{items})?\\]"
    item_post = inner.post
    if item_post is None and not unique:
        return Canonical(pattern)

    def post(value: list[Any]) -> bool:
        # The items matched a regex of strings or integers, which a set tells apart exactly as
        # _unique_key does.
        if unique and len(set(value)) != len(value):
            return False
        return item_post is None or all(map(item_post, value))

    return Canonical(pattern, post)


@dataclass(frozen=True, slots=True)
class Field:
    check: Check
    required: bool = True


def obj(
    fields: Mapping[str, Field | Check],
    *,
    closed: bool = True,
    min_properties: int = 0,
) -> Rule:
    """An object with the listed members; ``closed`` refuses any other member.

    A bare Check in ``fields`` means a required member.
    """
    table = [
        (name, "/" + _escape(name), f if isinstance(f, Field) else Field(f))
        for name, f in fields.items()
    ]
    known = frozenset(fields)
    required = [name for name, _, f in table if f.required]
    predicates = [(name, f.required, *_predicates(f.check)) for name, _, f in table]
    # Every member required: one itemgetter fetches a whole row (KeyError when one is missing).
    all_required = len(required) == len(table) > 1
    row = itemgetter(*required) if all_required else None
    column_oks = [all_ok for _, _, _, all_ok in predicates]

    def check(value: Any, pointer: str, problems: Problems) -> None:
        if type(value) is not dict:
            _type_error("an object", value, pointer, problems)
            return
        for name, suffix, field in table:
            if name in value:
                field.check(value[name], pointer + suffix, problems)
            elif field.required:
                problems.append(
                    Problem(pointer + suffix, "spec.required", f"missing required member {name!r}")
                )
        if closed and not known.issuperset(value):
            for name in value:
                if name not in known:
                    problems.append(
                        Problem(
                            f"{pointer}/{_escape(name)}",
                            "spec.unknown_member",
                            f"member {name!r} is not allowed here",
                        )
                    )
        if len(value) < min_properties:
            problems.append(
                Problem(
                    pointer, "spec.min_properties", f"must have at least {min_properties} member(s)"
                )
            )

    def ok(value: Any) -> bool:
        if type(value) is not dict:
            return False
        if (closed and not known.issuperset(value)) or len(value) < min_properties:
            return False
        for name, needed, member_ok, _ in predicates:
            if name in value:
                if not member_ok(value[name]):
                    return False
            elif needed:
                return False
        return True

    def all_ok(values: Sequence[Any]) -> bool:
        if not values:
            return True
        if len(values) == 1:
            return ok(values[0])
        if row is None or not _only(values, _DICT):
            return all(map(ok, values))
        # A column at a time: every object has every member (the rows) and no other (the
        # lengths), then each member's values are checked together.
        try:
            rows = list(map(row, values))
        except KeyError:
            return False
        if set(map(len, values)) != {len(table)} or len(table) < min_properties:
            return False
        return all(
            column_ok(column)
            for column_ok, column in zip(column_oks, zip(*rows, strict=True), strict=True)
        )

    return Rule(check, ok, all_ok, _obj_canonical(table, closed, min_properties))


def _obj_canonical(
    table: list[tuple[str, str, Field]], closed: bool, min_properties: int
) -> Canonical | None:
    """Members in sorted order (JCS order, for ASCII names), optional ones optional."""
    if not closed or min_properties > 1:
        return None
    parts = []
    posts: list[tuple[str, Ok]] = []
    for name, _, field in sorted(table):
        inner = _canonical_of(field.check)
        if inner is None or not name.isascii():
            return None
        part = f"{_quoted(name)}:{inner.pattern}"
        parts.append(part if field.required else f"(?:{part})?")
        if inner.post is not None:
            posts.append((name, inner.post))
    opening = "\\{(?!\\})" if min_properties == 1 else "\\{"
    pattern = opening + ",?+".join(parts) + "\\}"
    if not posts:
        return Canonical(pattern)

    def post(value: dict[str, Any]) -> bool:
        # A loop, not all() over a generator (slower): this runs once per small document.
        for name, check in posts:  # noqa: SIM110
            if name in value and not check(value[name]):
                return False
        return True

    return Canonical(pattern, post)


# A member of an extensions object on the fast path: a prefixed ASCII name without a quote or
# backslash, and a scalar in canonical form. Nested values take the general path.
_EXTENSION_MEMBER = (
    '"[A-Za-z][A-Za-z0-9+.-]*:[ !#-\\[\\]-~]*":'
    f'(?:"{_RAW_CHAR}*+"|0|-?[1-9][0-9]{{0,14}}+|true|false|null)'
)
# The members of an extensions object, for the fast path. The names are free, so the regex
# cannot see their order or a repeated one: the group lets the validator count the members in
# the text (each name, and nothing else, ends with '":' when no string holds a quote) and
# post checks their order.
EXTENSIONS_GROUP = "extensions_text"


def _extension_names_sorted(value: dict[str, Any]) -> bool:
    names = list(value)
    return names == sorted(names)


def any_object(value: Any, pointer: str, problems: Problems) -> None:
    if type(value) is not dict:
        _type_error("an object", value, pointer, problems)


def _extensions(value: Any, pointer: str, problems: Problems) -> None:
    """Member names carry a URI-scheme-like namespace prefix; values are any I-JSON."""
    if type(value) is not dict:
        _type_error("an object", value, pointer, problems)
        return
    for name in value:
        if not _EXTENSION_NAME.match(name):
            problems.append(
                Problem(
                    f"{pointer}/{_escape(name)}",
                    "spec.extensions.name",
                    "extension names start with a namespace prefix such as 'example:'",
                )
            )


def _extensions_ok(value: Any) -> bool:
    return type(value) is dict and all(map(_EXTENSION_NAME.match, value))


extensions = Rule(
    _extensions,
    _extensions_ok,
    lambda values: all(map(_extensions_ok, values)),
    Canonical(
        f"(?P<{EXTENSIONS_GROUP}>\\{{(?:{_EXTENSION_MEMBER}(?:,{_EXTENSION_MEMBER})*)?\\}})",
        _extension_names_sorted,
    ),
)
