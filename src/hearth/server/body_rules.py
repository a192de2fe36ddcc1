"""Cross-field rules of request bodies, written as JSON Schema for the OpenAPI document.

A model validator that checks several fields together (exactly one of two, at least one of
several, two fields that must agree) is invisible in the schema pydantic generates, so a client
generating bodies from the document would send ones the service refuses. Each such model passes
the schema of its rule here as ``json_schema_extra``; the validator stays what the service
applies, and ``tests/server/test_openapi_document.py`` checks the two agree on examples.

"Given" means present and not null: the models read an absent field and a null one alike.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

Schema = dict[str, Any]


def given(name: str, schema: Schema | None = None) -> Schema:
    """``name`` is present, not null, and (when ``schema`` is given) matches it."""
    return {"required": [name], "properties": {name: schema or {"not": {"type": "null"}}}}


def filled(name: str, kind: str) -> Schema:
    """``name`` is given and not empty: a string (``kind`` "string") or an array ("array")."""
    size = "minLength" if kind == "string" else "minItems"
    return given(name, {"type": kind, size: 1})


def exactly_one(*names: str) -> Schema:
    return {"oneOf": [given(name) for name in names]}


def at_least_one(*names: str) -> Schema:
    return {"anyOf": [given(name) for name in names]}


def needs(name: str, other: str) -> Schema:
    """When ``name`` is given, ``other`` must be given too."""
    return {"if": given(name), "then": given(other)}


def agree(first: str, second: str, values: Iterable[str]) -> Schema:
    """Either field may be left out (or null); when both are given they are equal."""
    return {
        "anyOf": [
            {"properties": {first: {"type": "null"}}},
            {"properties": {second: {"type": "null"}}},
            *({"properties": {first: {"const": v}, second: {"const": v}}} for v in values),
        ]
    }


def all_of(*rules: Schema) -> Schema:
    return {"allOf": list(rules)}


__all__ = ["agree", "all_of", "at_least_one", "exactly_one", "filled", "given", "needs"]
