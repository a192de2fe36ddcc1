"""The OpenAPI document at /v1/openapi.json: FastAPI's, completed where a generator and a fuzzer
need more than the routes say one by one (docs/service.md, "The OpenAPI document").

FastAPI writes each operation from its route: parameters, body, the responses the route
declares, and the security schemes its dependencies name (``auth.BearerDep``,
``routes.bridge.ControlToken``). This module then, once per app:

- names every operation by one rule, ``<resource>_<verb>`` (``memories_list``, not
  ``list_memories_v1_memories_get``), unless its route names it with ``operation_id``;
- adds the answers any request can get: 413 (body too large), 431 (head too large), 500; 400
  where a JSON body is read; 422 wherever there is input (validation, or text that cannot be
  stored, ``edge_text``);
- writes each optional parameter as what it is when sent (FastAPI writes ``X | null``, but a
  parameter is absent, never null), and the three root-proof headers as optional strings;
- excludes NUL from every string and member name a request carries, free-form members
  included (``StorableJson``), as ``edge_text`` does;
- adds the bridge's WebSocket frames to ``components.schemas``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from typing import Any

from fastapi import FastAPI
from fastapi.routing import APIRoute, iter_route_contexts

from hearth.proofs import AUTHORITY_HEADERS

from .bridge import frames
from .json_types import JsonObject
from .routes.common import errors

Document = JsonObject
METHODS = ("get", "head", "post", "put", "patch", "delete", "options", "trace")

# Any text the service reads must be storable: NUL is refused (``edge_text``, 422). A lone
# surrogate is refused too, but it is not a Unicode scalar value, so no JSON Schema string
# holds one and nothing needs saying.
NO_NUL = "^[^\\u0000]*$"

_PROOF_TEXT = {
    "X-Service-Authority-Sequence": "the identity's next_sequence, in decimal",
    "X-Service-Authority-Timestamp": "RFC 3339 with a zone, within the freshness window",
    "X-Service-Authority-Signature": "Ed25519 by the root key, standard base64 (64 bytes)",
}


def install(app: FastAPI) -> None:
    """Serve the completed document from ``app.openapi()`` (built once, on first use)."""
    generate = app.openapi

    def openapi() -> Document:
        if app.openapi_schema is None:
            # FastAPI's document shares dicts with the routes' openapi_extra: completed on a copy.
            document = copy.deepcopy(generate())
            complete(document, explicit_ids(app))
            app.openapi_schema = document
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def explicit_ids(app: FastAPI) -> set[tuple[str, str]]:
    """(method, path) of the operations whose route sets ``operation_id`` itself."""
    named = set()
    for context in iter_route_contexts(app.routes):
        route, path = context.original_route, context.path_format
        if isinstance(route, APIRoute) and route.operation_id and path and context.methods:
            named |= {(method.lower(), path) for method in context.methods}
    return named


def complete(document: Document, explicit: set[tuple[str, str]]) -> None:
    paths: dict[str, JsonObject] = document["paths"]
    ids = operation_ids(paths, explicit)
    for path, method, operation in operations(paths):
        operation["operationId"] = ids[(method, path)]
        for parameter in operation.get("parameters", []):
            _not_null(parameter)
        _proof_headers(operation)
        _common_responses(operation)
    _exclude_nul(document)
    document.setdefault("components", {}).setdefault("schemas", {}).update(frames.SCHEMAS)


def operations(paths: dict[str, JsonObject]) -> Iterator[tuple[str, str, JsonObject]]:
    for path, item in paths.items():
        for method in METHODS:
            if method in item:
                yield path, method, item[method]


# --- operation ids --------------------------------------------------------------------------------

_VERBS = {"head": "head", "put": "put", "patch": "update", "delete": "delete"}
# Path segments that say nothing about the resource.
_SILENT = {"v1", ".well-known"}


def operation_ids(
    paths: dict[str, JsonObject], explicit: set[tuple[str, str]]
) -> dict[tuple[str, str], str]:
    """``<resource>_<verb>`` for every operation, unique; explicit ids are kept.

    The resource is the path's literal segments (``/v1/identities/{id}/keys`` is
    ``identities_keys``). A path that ends in a literal is a collection when an item path lies
    below it, when it takes both GET and POST, or when its GET pages (a ``limit`` parameter).
    The verb: GET of a collection ``list``, other GETs ``get``; POST to a collection
    ``create``; any other POST is an action named by its last segment
    (``/v1/memories/{id}/elevate`` is ``memories_elevate``); ``put``, ``update`` (PATCH),
    ``delete``, ``head``.
    """
    ids: dict[tuple[str, str], str] = {}
    for path, method, operation in operations(paths):
        if (method, path) in explicit:
            ids[(method, path)] = operation["operationId"]
            continue
        resource = [_word(s) for s in path.split("/") if s and s[0] != "{" and s not in _SILENT]
        collection = _is_collection(path, paths)
        if method == "get":
            verb = "list" if collection else "get"
        elif method == "post":
            verb = "create" if collection else ""
        else:
            verb = _VERBS[method]
        ids[(method, path)] = "_".join([*resource, verb] if verb else resource)
    taken: dict[str, tuple[str, str]] = {}
    for key, name in ids.items():
        if name in taken:
            raise RuntimeError(f"operation id {name!r} names both {taken[name]} and {key}")
        taken[name] = key
    return ids


def _word(segment: str) -> str:
    return segment.removesuffix(".json").replace("-", "_").replace(".", "_")


def _is_collection(path: str, paths: dict[str, JsonObject]) -> bool:
    if path.endswith("}"):
        return False
    if any(other.startswith(path + "/{") for other in paths):
        return True
    item = paths[path]
    if "get" in item and "post" in item:
        return True
    parameters = item.get("get", {}).get("parameters", [])
    return any(p["in"] == "query" and p["name"] == "limit" for p in parameters)


# --- parameters and responses ---------------------------------------------------------------------


def _not_null(parameter: JsonObject) -> None:
    """An optional parameter is absent, never null: FastAPI's ``anyOf [X, null]`` for a
    ``X | None`` parameter becomes ``X`` (with the keywords written beside the ``anyOf``)."""
    schema = parameter["schema"]
    branches = schema.get("anyOf")
    if not isinstance(branches, list):
        return
    kept = [branch for branch in branches if branch != {"type": "null"}]
    if len(kept) == 1 and len(kept) < len(branches):
        rest = {key: value for key, value in schema.items() if key != "anyOf"}
        parameter["schema"] = {**kept[0], **rest}


def _proof_headers(operation: JsonObject) -> None:
    for parameter in operation.get("parameters", []):
        if parameter["in"] == "header" and parameter["name"] in AUTHORITY_HEADERS:
            parameter["required"] = False
            parameter["schema"] = {"type": "string"}
            parameter["description"] = (
                f"Exact-request root proof (identity-authority/v1): "
                f"{_PROOF_TEXT[parameter['name']]}. Without the three, a mutation that needs the "
                "proof is answered 428 with next_sequence and the recipe."
            )


def _common_responses(operation: JsonObject) -> None:
    statuses = [413, 431, 500]
    if _json_body(operation):
        statuses.append(400)
    if operation.get("requestBody") or any(
        p["in"] in ("path", "query") for p in operation.get("parameters", [])
    ):
        statuses.append(422)
    responses: JsonObject = operation["responses"]
    for status, response in errors(*statuses).items():
        if str(status) not in responses:
            responses[str(status)] = {
                "description": response["description"],
                "content": {"application/json": {"schema": _ref("ErrorBody")}},
            }
    operation["responses"] = dict(sorted(responses.items()))


def _json_body(operation: JsonObject) -> bool:
    content = operation.get("requestBody", {}).get("content", {})
    return any(media.endswith("json") for media in content)


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


# --- storable text --------------------------------------------------------------------------------


def _exclude_nul(document: Document) -> None:
    """Every string of a request's path, query or JSON body, and every member name of its
    objects, is declared free of NUL: the values ``edge_text`` refuses are outside the schema."""
    schemas: JsonObject = document.setdefault("components", {}).setdefault("schemas", {})
    schemas[STORABLE_JSON] = _STORABLE_JSON
    seen = {STORABLE_JSON}

    def visit(schema: Any) -> None:
        _walk(schema, schemas, seen, _storable)

    for _path, _method, operation in operations(document["paths"]):
        for parameter in operation.get("parameters", []):
            if parameter["in"] in ("path", "query"):
                visit(parameter["schema"])
        for media, content in operation.get("requestBody", {}).get("content", {}).items():
            if media.endswith("json"):
                visit(content.get("schema"))


# Any JSON value whose strings and member names can be stored: what a free-form member (a
# runtime's metadata, an attestation's evidence) may hold, at any depth.
STORABLE_JSON = "StorableJson"
_STORABLE_JSON = {
    "description": "Any JSON value without a NUL character in a string or a member name.",
    "anyOf": [
        {"type": ["null", "boolean", "number"]},
        {"type": "string", "pattern": NO_NUL},
        {"type": "array", "items": {"$ref": f"#/components/schemas/{STORABLE_JSON}"}},
        {
            "type": "object",
            "propertyNames": {"pattern": NO_NUL},
            "additionalProperties": {"$ref": f"#/components/schemas/{STORABLE_JSON}"},
        },
    ],
}


def _storable(schema: JsonObject) -> None:
    if not schema:  # any value at all (an `Any` field): any storable one
        schema.update(_ref(STORABLE_JSON))
    if schema.get("type") == "string" and not {"pattern", "format", "enum", "const"} & set(schema):
        schema["pattern"] = NO_NUL
    if schema.get("type") == "object" and schema.get("additionalProperties") is not False:
        schema.setdefault("propertyNames", {"pattern": NO_NUL})
        if schema.get("additionalProperties", True) is True:
            schema["additionalProperties"] = _ref(STORABLE_JSON)
    if schema.get("type") == "array" and schema.get("items", True) is True:
        schema["items"] = _ref(STORABLE_JSON)


def _walk(
    schema: Any,
    components: JsonObject,
    seen: set[str],
    apply: Callable[[JsonObject], None],
) -> None:
    """Apply ``apply`` to ``schema`` and every schema inside it, following references to
    components once each."""
    if not isinstance(schema, dict):
        return
    reference = schema.get("$ref")
    if isinstance(reference, str):
        name = reference.rsplit("/", 1)[-1]
        if name not in seen and name in components:
            seen.add(name)
            _walk(components[name], components, seen, apply)
        return
    apply(schema)
    for key in ("items", "additionalProperties", "not", "contains"):
        _walk(schema.get(key), components, seen, apply)
    for key in ("properties", "patternProperties"):
        for child in schema.get(key, {}).values():
            _walk(child, components, seen, apply)
    for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
        for child in schema.get(key, []):
            _walk(child, components, seen, apply)


__all__ = ["NO_NUL", "complete", "install", "operation_ids"]
