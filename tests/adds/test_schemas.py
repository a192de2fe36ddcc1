"""The JSON Schemas shipped in ``hearth.adds.schemas`` agree with the validator.

The schemas (draft 2020-12) express every rule of the ADDS 0.1 specification that JSON Schema can
express; the validator (``hearth.adds.validate``) checks those and the rest. These tests hold the
two to one verdict:

- the schema files are well formed, reference each other by relative URI and close every object
  the specification closes;
- the base64url and CID patterns accept exactly what the codecs accept;
- every named valid document passes both, every invalid one fails the validator, and every case
  marked ``schema_level`` fails the schema too;
- mutating each member of each valid document (delete it, add a member beside it, change its type
  or its value) gets "reject" from the schema exactly when the validator reports a structural
  problem, one the schema can express.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Callable, Iterator
from functools import cache, partial
from importlib.resources import files
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from referencing import Registry
from referencing.jsonschema import DRAFT202012

from hearth.adds import b64url_encode, cid_for_bytes, validate
from hearth.adds.b64 import b64url_problem
from hearth.adds.cid import cid_problem
from hearth.adds.ijson import MAX_SAFE_INTEGER
from hearth.adds.kinds import KINDS, MAX_CHUNKS, RIGHTS
from hearth.adds.problems import Problem
from hearth.adds.rules import extensions as check_extensions
from tests.support.adds_cases import INVALID, VALID, Invalid, is_schema_code

BASE = "https://hearth.invalid/adds/0.1/"
KIND_NAMES = ("manifest", "grant", "provider_record", "head", "receipt")
SCHEMA_FILES = frozenset(
    {"common.schema.json", "document.schema.json"} | {f"{k}.schema.json" for k in KIND_NAMES}
)
COMMON_DEFS = frozenset(
    {
        "version",
        "cid",
        "uint53",
        "uint32",
        "epochSeconds",
        "base64url",
        "bytes32",
        "nonce12",
        "signature64",
        "principal",
        "signature",
        "extensions",
        "chunk",
        "inventoryItem",
        "endpoint",
    }
)
# Validator codes for problems JSON Schema can express: the data set's own rule (cases.py). A
# whole number written with a fraction (1.0) is the one exception: JSON Schema calls it an
# integer, the validator does not.
B64_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
B32_ALPHABET = "abcdefghijklmnopqrstuvwxyz234567"
# Characters outside the alphabet, including the ones a lenient decoder or a regex engine might
# let through (padding, standard base64, whitespace, a final newline before '$').
STRANGERS = "=+/.~ \t\n\u00e9\u0410"

_is_structural = is_schema_code


# --- loading -----------------------------------------------------------------------------------


def _schema_texts() -> dict[str, str]:
    directory = files("hearth.adds") / "schemas"
    return {
        entry.name: entry.read_text(encoding="utf-8")
        for entry in directory.iterdir()
        if entry.name.endswith(".json")
    }


SCHEMAS: dict[str, dict[str, Any]] = {
    name: json.loads(text) for name, text in _schema_texts().items()
}
REGISTRY: Registry[Any] = Registry().with_resources(
    (schema["$id"], DRAFT202012.create_resource(schema)) for schema in SCHEMAS.values()
)


@cache
def _validator(uri: str) -> Draft202012Validator:
    """A validator for the schema at ``uri`` (absolute, fragment allowed), formats off."""
    return Draft202012Validator({"$ref": uri}, registry=REGISTRY, format_checker=None)


def _document_schema() -> Draft202012Validator:
    return _validator(BASE + "document.schema.json")


def _kind_schema(kind: str) -> Draft202012Validator:
    return _validator(f"{BASE}{kind}.schema.json")


def _common(name: str) -> Draft202012Validator:
    return _validator(f"{BASE}common.schema.json#/$defs/{name}")


def _subschemas(schema: Any, pointer: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every schema object inside ``schema``, with its JSON pointer."""
    if isinstance(schema, dict):
        yield pointer, schema
        for key, value in schema.items():
            if key in {"const", "enum", "$comment"}:
                continue
            yield from _subschemas(value, f"{pointer}/{key}")
    elif isinstance(schema, list):
        for index, item in enumerate(schema):
            yield from _subschemas(item, f"{pointer}/{index}")


# --- the schema files --------------------------------------------------------------------------


def test_the_package_ships_exactly_the_schema_files() -> None:
    assert set(SCHEMAS) == SCHEMA_FILES


@pytest.mark.parametrize("name", sorted(SCHEMA_FILES))
def test_schema_file_is_valid_draft_2020_12(name: str) -> None:
    schema = SCHEMAS[name]
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"] == BASE + name
    assert ".invalid/" in schema["$id"]


@pytest.mark.parametrize("name", sorted(SCHEMA_FILES))
def test_every_reference_is_relative_and_resolves(name: str) -> None:
    schema = SCHEMAS[name]
    resolver = REGISTRY.resolver(base_uri=schema["$id"])
    refs = [sub["$ref"] for _, sub in _subschemas(schema) if "$ref" in sub]
    assert refs or name == "common.schema.json"
    for ref in refs:
        assert "://" not in ref
        assert not ref.startswith("/")
        resolved = resolver.lookup(ref).contents
        assert isinstance(resolved, dict)
        assert resolved


def test_common_defines_the_shared_types_and_objects() -> None:
    assert set(SCHEMAS["common.schema.json"]["$defs"]) == COMMON_DEFS


@pytest.mark.parametrize("name", sorted(SCHEMA_FILES - {"document.schema.json"}))
def test_every_object_the_specification_closes_is_closed(name: str) -> None:
    """Rule 1: no members other than those listed, except inside metadata and extensions."""
    open_objects = {"/properties/metadata", "/$defs/extensions"}
    for pointer, sub in _subschemas(SCHEMAS[name]):
        if sub.get("type") != "object":
            continue
        if pointer in open_objects:
            assert "properties" not in sub
            assert "additionalProperties" not in sub
        else:
            assert sub.get("properties"), pointer
            assert sub.get("additionalProperties") is False, pointer


def test_document_schema_selects_each_kind() -> None:
    document = SCHEMAS["document.schema.json"]
    assert tuple(document["properties"]["kind"]["enum"]) == KIND_NAMES
    assert set(KIND_NAMES) == set(KINDS)
    targets = [branch["then"]["$ref"] for branch in document["allOf"]]
    assert targets == [f"{kind}.schema.json" for kind in KIND_NAMES]
    for kind in KIND_NAMES:
        assert SCHEMAS[f"{kind}.schema.json"]["properties"]["kind"]["const"] == kind


def test_limits_match_the_validator() -> None:
    manifest = SCHEMAS["manifest.schema.json"]["properties"]
    assert manifest["chunks"]["minItems"] == 1
    assert manifest["chunks"]["maxItems"] == MAX_CHUNKS == 1_048_576
    rights = SCHEMAS["grant.schema.json"]["properties"]["rights"]
    assert tuple(rights["items"]["enum"]) == RIGHTS


@pytest.mark.parametrize(
    "document",
    [None, True, 1, "grant", [], {}, {"kind": "tail"}, {"kind": 5}, {"kind": None}],
    ids=repr,
)
def test_document_schema_refuses_what_is_no_kind_of_document(document: Any) -> None:
    assert not _document_schema().is_valid(document)
    assert not validate(json.dumps(document).encode()).valid


# --- base64url and CID patterns against the codecs ---------------------------------------------

FIXED_LENGTH_BASE64URL = [
    (BASE + "common.schema.json#/$defs/bytes32", 43),
    (BASE + "common.schema.json#/$defs/nonce12", 16),
    (BASE + "common.schema.json#/$defs/signature64", 86),
    (BASE + "grant.schema.json#/properties/key_wrap/properties/ciphertext", 64),
]


@pytest.mark.parametrize(("uri", "length"), FIXED_LENGTH_BASE64URL)
def test_fixed_length_base64url_accepts_exactly_what_the_codec_accepts(
    uri: str, length: int
) -> None:
    schema = _validator(uri)
    rng = random.Random(length)
    accepted_last = set()
    for last in B64_ALPHABET + STRANGERS:
        body = "".join(rng.choice(B64_ALPHABET) for _ in range(length - 1))
        for text in (body + last, body[1:] + last, body + last + "A", body + last + "\n"):
            expected = len(text) == length and b64url_problem(text) is None
            assert schema.is_valid(text) == expected, repr(text)
        if schema.is_valid(body + last):
            accepted_last.add(last)
    unused_bits = {0: 0, 2: 4, 3: 2}[length % 4]
    assert len(accepted_last) == 64 >> unused_bits
    for _ in range(200):
        encoded = b64url_encode(rng.randbytes(length * 3 // 4))
        assert len(encoded) == length
        assert schema.is_valid(encoded)
    assert not schema.is_valid(encoded[:-4])
    assert not schema.is_valid(encoded + "====")
    if length % 4:
        assert not schema.is_valid(encoded + "=" * (-length % 4))


def test_base64url_pattern_is_the_canonical_form() -> None:
    """Every length and every last character; a final newline is left to the exact lengths that
    every use pins (Python's '$' matches before it)."""
    schema = _common("base64url")
    rng = random.Random(0)
    for length in range(14):
        body = "".join(rng.choice(B64_ALPHABET) for _ in range(max(length - 1, 0)))
        for last in B64_ALPHABET + STRANGERS.replace("\n", ""):
            text = (body + last)[:length]
            assert schema.is_valid(text) == (b64url_problem(text) is None), repr(text)


def test_cid_pattern_accepts_exactly_the_canonical_cids() -> None:
    schema = _common("cid")
    rng = random.Random(59)
    accepted = 0
    for eighth in B32_ALPHABET:
        for last in B32_ALPHABET:
            middle = "".join(rng.choice(B32_ALPHABET) for _ in range(50))
            text = "bafkrei" + eighth + middle + last
            verdict = schema.is_valid(text)
            assert verdict == (cid_problem(text) is None), text
            accepted += verdict
    assert accepted == 8 * 8
    good = cid_for_bytes(b"block")
    others = [
        good.upper(),
        "B" + good[1:],
        good[:-1],
        good + "a",
        good + "\n",
        "bafyrei" + good[7:],  # dag-cbor codec
        "z" + good[1:],
        "QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG",
        "",
    ]
    for text in others:
        assert schema.is_valid(text) == (cid_problem(text) is None), text
        assert not schema.is_valid(text)
    for _ in range(200):
        assert schema.is_valid(cid_for_bytes(rng.randbytes(40)))


@pytest.mark.parametrize(
    "name",
    ["example:", "a:", "A1+.-:x", "urn:x-hearth:n", "x:\n", "1x:note", ":x", "note", "a b:", "é:"],
)
def test_extension_names_agree(name: str) -> None:
    problems: list[Problem] = []
    check_extensions({name: 1}, "", problems)
    assert _common("extensions").is_valid({name: 1}) == (not problems)


def test_key_id_pattern_refuses_a_final_newline() -> None:
    schema = _validator(BASE + "grant.schema.json#/properties/audience_x25519_key_id")
    key_id = "sha256:" + b64url_encode(bytes(32))
    assert schema.is_valid(key_id)
    assert not schema.is_valid(key_id + "\n")
    assert not schema.is_valid(key_id[:-1])


# --- the named data sets -----------------------------------------------------------------------


def _kind_of(document: Any) -> str | None:
    kind = document.get("kind") if isinstance(document, dict) else None
    return kind if isinstance(kind, str) and kind in KIND_NAMES else None


def _schema_accepts(document: Any) -> bool:
    """The document schema's verdict, checked against the kind's own schema."""
    verdict = _document_schema().is_valid(document)
    kind = _kind_of(document)
    if kind is not None:
        assert _kind_schema(kind).is_valid(document) == verdict
    return bool(verdict)


_MISSING = object()


def _at(document: Any, pointer: str) -> Any:
    target = document
    for raw in pointer.split("/")[1:]:
        token = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(target, dict) and token in target:
            target = target[token]
        elif isinstance(target, list) and token.isdigit() and int(token) < len(target):
            target = target[int(token)]
        else:
            return _MISSING
    return target


def _disagreement(data: bytes) -> str | None:
    """Why the schema and the validator disagree on ``data``, or None when they agree.

    The schema must reject when the validator reports a structural problem (one not about a whole
    number written as 1.0), and must accept when the validator reports none at all; a document
    whose only structural problems are such numbers is left alone.
    """
    result = validate(data)
    assert result.document is not None, "only for bytes that are strict I-JSON"
    structural = [p for p in result.errors if _is_structural(p.code)]
    expressible = [
        p
        for p in structural
        if not (isinstance(v := _at(result.document, p.pointer), float) and v.is_integer())
    ]
    accepted = _schema_accepts(json.loads(data))
    if expressible and accepted:
        return f"schema accepts, validator reports {[(p.pointer, p.code) for p in expressible]}"
    if not structural and not accepted:
        errors = list(_document_schema().iter_errors(json.loads(data)))
        codes = [(p.pointer, p.code) for p in result.errors]
        return f"schema rejects ({errors[0].message}), validator reports only {codes}"
    return None


@pytest.mark.parametrize("name", sorted(VALID))
def test_valid_document_passes_schema_and_validator(name: str) -> None:
    document = json.loads(VALID[name])
    assert _document_schema().is_valid(document)
    assert _kind_schema(document["kind"]).is_valid(document)
    assert validate(VALID[name]).valid


@pytest.mark.parametrize("case", INVALID, ids=[c.name for c in INVALID])
def test_invalid_case_fails_the_validator_and_schema_level_ones_the_schema(case: Invalid) -> None:
    assert not validate(case.data).valid
    if case.schema_level:
        assert all(_is_structural(code) for _, code in case.expected)
        assert not _schema_accepts(json.loads(case.data))


@pytest.mark.parametrize(
    "case",
    [c for c in INVALID if validate(c.data).document is not None],
    ids=lambda c: c.name,
)
def test_invalid_case_gets_the_same_structural_verdict(case: Invalid) -> None:
    assert _disagreement(case.data) is None


def test_a_whole_number_written_with_a_fraction_is_not_schema_level() -> None:
    """JSON Schema counts 1.0 as an integer; the strict parser keeps it a number with a fraction,
    which the validator refuses (rule 6 for times, a type error elsewhere)."""
    text = VALID["head-minimal"].decode()
    document = json.loads(text)
    for member, code in (("updated_at", "spec.time.fractional"), ("sequence", "spec.type")):
        written = f'"{member}":{document[member]}'
        assert written in text
        data = text.replace(written, f'"{member}":{document[member]}.0').encode()
        result = validate(data)
        assert [(p.pointer, p.code) for p in result.errors] == [(f"/{member}", code)]
        assert _schema_accepts(json.loads(data))
        assert _disagreement(data) is None


# --- agreement under mutation ------------------------------------------------------------------

Path = tuple[str | int, ...]

OTHER_TYPES: tuple[Any, ...] = (None, True, 7, 1.5, "x", [], {})
INTEGERS = (
    -1,
    0,
    1,
    15,
    16,
    65535,
    65536,
    4294967295,
    4294967296,
    16777216,
    16777217,
    MAX_SAFE_INTEGER,
    -MAX_SAFE_INTEGER,
)


def _strings(value: str) -> list[str]:
    """Values near a string: empty, one character shorter or longer, the last character changed,
    a final newline, upper case."""
    variants = ["", value[:-1], value + "A", value + "\n", value.upper()]
    if value:
        last = value[-1]
        for shift in (1, 2, 4, 16):
            if last in B64_ALPHABET:
                swapped = B64_ALPHABET[(B64_ALPHABET.index(last) + shift) % 64]
                variants.append(value[:-1] + swapped)
        variants.append("=" + value[1:])
    return variants


def _nodes(value: Any, path: Path = ()) -> Iterator[tuple[Path, Any]]:
    yield path, value
    if isinstance(value, dict):
        for name, member in value.items():
            yield from _nodes(member, (*path, name))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _nodes(item, (*path, index))


def _with(document: dict[str, Any], path: Path, make: Callable[[Any], Any]) -> dict[str, Any]:
    """A copy of ``document`` whose node at ``path`` is ``make(node)`` (removed for _MISSING)."""
    changed = copy.deepcopy(document)
    if not path:
        result: dict[str, Any] = make(changed)
        return result
    parent: Any = changed
    for token in path[:-1]:
        parent = parent[token]
    node = make(parent[path[-1]])
    if node is _MISSING:
        del parent[path[-1]]
    else:
        parent[path[-1]] = node
    return changed


def _add_member(node: dict[str, Any], name: str) -> dict[str, Any]:
    return {**node, name: 1}


def _replace(node: Any, value: Any) -> Any:
    return copy.deepcopy(value)


def _mutations(document: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(description, mutated copy) for every member and item of ``document``, the whole document
    included: members added to objects, items repeated in arrays, each member and item deleted,
    given a value of every other JSON type, and given values near its own."""
    for path, value in _nodes(document):
        where = "/" + "/".join(str(t) for t in path)
        if isinstance(value, dict):
            for name in ("zz_unknown", "example:zz"):
                yield (
                    f"{where}: add {name!r}",
                    _with(document, path, partial(_add_member, name=name)),
                )
        if isinstance(value, list) and value:
            yield f"{where}: repeat first", _with(document, path, lambda n: [*n, n[0]])
            yield f"{where}: repeat last", _with(document, path, lambda n: [*n, n[-1]])
        if not path:
            continue
        yield f"{where}: delete", _with(document, path, lambda _: _MISSING)
        replacements: list[Any] = [r for r in OTHER_TYPES if type(r) is not type(value)]
        if type(value) is str:
            replacements += _strings(value)
        if type(value) is int:
            replacements += [i for i in INTEGERS if i != value]
        if path == ("kind",):
            replacements += [k for k in KIND_NAMES if k != value]
        for new in replacements:
            yield f"{where}: set {new!r}", _with(document, path, partial(_replace, value=new))


@pytest.mark.parametrize("name", sorted(VALID))
def test_mutations_get_the_same_verdict_from_schema_and_validator(name: str) -> None:
    document = json.loads(VALID[name])
    disagreements = []
    verdicts = {True: 0, False: 0}
    for description, mutated in _mutations(document):
        data = json.dumps(mutated, ensure_ascii=False).encode()
        problem = _disagreement(data)
        if problem is not None:
            disagreements.append(f"{description}: {problem}")
        verdicts[_schema_accepts(mutated)] += 1
    assert not disagreements, "\n".join(disagreements)
    # Both verdicts occur: the comparison is not vacuous in either direction.
    assert verdicts[False] > 50
    assert verdicts[True] > 0
