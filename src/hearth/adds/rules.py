"""Checks for the shared scalar types and objects of ADDS 0.1, as composable closures.

A check is ``check(value, pointer, problems)``: it appends a Problem for everything wrong with
``value`` and never raises. Checks are built once at import time (see kinds.py), so validating a
document is a walk over prebuilt closures, with no schema interpretation on the hot path.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .b64 import b64url_problem, canonical_b64url_pattern
from .cid import cid_problem
from .ijson import MAX_SAFE_INTEGER
from .problems import Problem

__all__ = [
    "Check",
    "Field",
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

_EXTENSION_NAME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")


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


def string(*, min_length: int = 1) -> Check:
    """A string of at least ``min_length`` characters (code points)."""

    def check(value: Any, pointer: str, problems: Problems) -> None:
        if type(value) is not str:
            _type_error("a string", value, pointer, problems)
        elif len(value) < min_length:
            problems.append(
                Problem(pointer, "spec.min_length", f"must be at least {min_length} character")
            )

    return check


def const(expected: str) -> Check:
    def check(value: Any, pointer: str, problems: Problems) -> None:
        if value != expected or type(value) is not str:
            problems.append(Problem(pointer, "spec.const", f"must be {expected!r}"))

    return check


def enum(*allowed: str) -> Check:
    options = frozenset(allowed)

    def check(value: Any, pointer: str, problems: Problems) -> None:
        if type(value) is not str:
            _type_error("a string", value, pointer, problems)
        elif value not in options:
            listed = ", ".join(repr(a) for a in allowed)
            problems.append(Problem(pointer, "spec.enum", f"must be one of {listed}"))

    return check


def integer(minimum: int = 0, maximum: int = MAX_SAFE_INTEGER, *, epoch: bool = False) -> Check:
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

    return check


def b64url(length: int | None = None) -> Check:
    """Canonical unpadded base64url, optionally of an exact length in characters."""

    canonical = canonical_b64url_pattern(length) if length is not None else None

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

    return check


def cid() -> Check:
    def check(value: Any, pointer: str, problems: Problems) -> None:
        if type(value) is not str:
            _type_error("a CID string", value, pointer, problems)
            return
        problem = cid_problem(value)
        if problem is not None:
            problems.append(Problem(pointer, f"spec.cid.{problem[0]}", problem[1]))

    return check


def array(
    item: Check, *, min_items: int = 0, max_items: int | None = None, unique: bool = False
) -> Check:
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
                key = member if isinstance(member, str | int) else repr(member)
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

    return check


@dataclass(frozen=True, slots=True)
class Field:
    check: Check
    required: bool = True


def obj(
    fields: Mapping[str, Field | Check],
    *,
    closed: bool = True,
    min_properties: int = 0,
) -> Check:
    """An object with the listed members; ``closed`` refuses any other member.

    A bare Check in ``fields`` means a required member.
    """
    table = [
        (name, "/" + _escape(name), f if isinstance(f, Field) else Field(f))
        for name, f in fields.items()
    ]
    known = frozenset(fields)

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

    return check


def any_object(value: Any, pointer: str, problems: Problems) -> None:
    if type(value) is not dict:
        _type_error("an object", value, pointer, problems)


def extensions(value: Any, pointer: str, problems: Problems) -> None:
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
