"""Hypothesis strategies for ADDS 0.1: I-JSON values and valid builder arguments for every kind.

The argument strategies follow the specification (/work/shared/spec) and the profile of DESIGN.md
section 3: chunk arithmetic, unique CID arrays, ``read`` exactly once, ``{cid}`` endpoint templates
(the whole RFC 6570 grammar: operators, pct-encoded names, prefixes up to 9999, ``cid`` used more
than once), ordered times, extension names with a namespace prefix, and metadata and extensions
holding any I-JSON value the profile admits (docs/adds.md: no double from 2**53 up to 1e21).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

from hearth.adds import (
    Chunk,
    Commitment,
    Encryption,
    Endpoint,
    InventoryItem,
    KeyWrap,
    Right,
    Role,
    SignedDocument,
    b64url_encode,
    build_grant,
    build_head,
    build_manifest,
    build_provider_record,
    build_receipt,
    cid_for_bytes,
)
from hearth.adds.ed25519 import private_key_from_raw
from hearth.adds.ijson import MAX_SAFE_INTEGER

# ---------------------------------------------------------------------------------------------
# Text and I-JSON values
# ---------------------------------------------------------------------------------------------

# RFC 7493 section 2.1: no Unicode noncharacters (the profile's parser refuses them).
NONCHARACTERS = frozenset(
    [chr(c) for c in range(0xFDD0, 0xFDF0)]
    + [chr(plane * 0x10000 + low) for plane in range(17) for low in (0xFFFE, 0xFFFF)]
)
# Characters with special treatment somewhere in JSON, JCS or UTF-8/UTF-16.
SPECIAL_CHARACTERS = (
    "\x00",
    "\x08",
    "\t",
    "\n",
    "\x0b",
    "\x0c",
    "\r",
    "\x1f",
    '"',
    "\\",
    "/",
    "\x7f",
    "\x80",
    "\xe9",
    "\u2028",
    "\u2029",
    "\ue000",
    "\ufeff",
    "\uffef",
    "\ufffd",
    "\U00010000",
    "\U0001f600",
    "\U0010fffd",
)

# codec="utf-8" leaves out the surrogates, which are not I-JSON.
ijson_characters = st.one_of(
    st.sampled_from(SPECIAL_CHARACTERS),
    st.characters(codec="utf-8", exclude_characters=NONCHARACTERS),
)
# Noncharacters are I-JSON-hostile but canonicalizable: used only where canonicalization alone
# is tested.
any_scalar_characters = st.one_of(
    ijson_characters, st.sampled_from(sorted(NONCHARACTERS)), st.characters(codec="utf-8")
)


def texts(min_size: int = 0, max_size: int = 12) -> st.SearchStrategy[str]:
    return st.text(alphabet=ijson_characters, min_size=min_size, max_size=max_size)


safe_integers = st.one_of(
    st.integers(-MAX_SAFE_INTEGER, MAX_SAFE_INTEGER),
    st.sampled_from([0, -1, 1, MAX_SAFE_INTEGER, -MAX_SAFE_INTEGER, 2**31, 2**32]),
)


# Every finite double.
finite_floats = st.floats(allow_nan=False, allow_infinity=False)
# The doubles the profile refuses: RFC 8785 writes them as integers beyond 2**53 - 1.
refused_floats = st.floats(min_value=2.0**53, max_value=1e21, exclude_max=True).flatmap(
    lambda f: st.sampled_from([f, -f])
)
# The doubles the profile admits: below 2**53 or from 1e21 up, in magnitude.
profile_floats = st.one_of(
    st.floats(min_value=-(2.0**53), max_value=2.0**53, exclude_min=True, exclude_max=True),
    st.floats(min_value=1e21, allow_infinity=False),
    st.floats(max_value=-1e21, allow_infinity=False),
)


def ijson_values(
    *,
    floats: st.SearchStrategy[float] = profile_floats,
    characters: st.SearchStrategy[str] = ijson_characters,
    ascii_names: bool = False,
    max_leaves: int = 12,
) -> st.SearchStrategy[Any]:
    """An I-JSON value (RFC 7493) as the profile admits it: null, booleans, safe integers,
    doubles, text without lone surrogates or noncharacters, arrays, objects with any names."""
    text = st.text(alphabet=characters, max_size=10)
    names = st.text(alphabet=st.characters(codec="ascii"), max_size=6) if ascii_names else text
    scalars = st.one_of(st.none(), st.booleans(), safe_integers, floats, text)
    return st.recursive(
        scalars,
        lambda children: st.one_of(
            st.lists(children, max_size=4),
            st.dictionaries(names, children, max_size=4),
        ),
        max_leaves=max_leaves,
    )


# Values the fast canonicalizer takes: no floats, ASCII member names.
simple_values = ijson_values(floats=st.nothing(), ascii_names=True)

# ---------------------------------------------------------------------------------------------
# Builder arguments
# ---------------------------------------------------------------------------------------------

MAX_CHUNK_SIZE = 16_777_216
epoch_seconds = st.one_of(st.integers(0, MAX_SAFE_INTEGER), st.integers(0, 4_000_000_000))
uint53 = st.integers(0, MAX_SAFE_INTEGER)
keys = st.binary(min_size=32, max_size=32).map(private_key_from_raw)
cids = st.binary(max_size=64).map(cid_for_bytes)
ids = texts(min_size=1)
extension_names = st.builds(
    str.__add__, st.from_regex(r"[A-Za-z][A-Za-z0-9+.-]{0,6}:", fullmatch=True), texts()
)


def bytes_of(size: int) -> st.SearchStrategy[bytes]:
    return st.binary(min_size=size, max_size=size)


def optional(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.none(), strategy)


def ordered_times() -> st.SearchStrategy[tuple[int, int]]:
    """(earlier, later) epoch seconds, sometimes equal."""
    return st.one_of(
        st.tuples(epoch_seconds, epoch_seconds).map(lambda pair: tuple(sorted(pair))),
        epoch_seconds.map(lambda t: (t, t)),
    )


_nested_values = ijson_values(max_leaves=8)
_metadata = st.dictionaries(texts(), _nested_values, max_size=4)
_extensions = st.dictionaries(extension_names, _nested_values, max_size=3)
small_values = ijson_values(max_leaves=6)


@st.composite
def chunk_lists(draw: st.DrawFn) -> tuple[int, list[Chunk], int]:
    """(chunk_size, chunks, plaintext_size) obeying the profile's chunk arithmetic."""
    chunk_size = draw(st.one_of(st.integers(1, 64), st.integers(1, MAX_CHUNK_SIZE)))
    full = draw(st.integers(0, 5))
    if full == 0 and draw(st.booleans()):
        sizes = [draw(st.sampled_from([0, chunk_size]) | st.integers(0, chunk_size))]
    else:
        sizes = [chunk_size] * full + [draw(st.integers(1, chunk_size))]
    chunks = [
        Chunk(index=i, cid=draw(cids), nonce=draw(bytes_of(12)), plaintext_size=size)
        for i, size in enumerate(sizes)
    ]
    return chunk_size, chunks, sum(sizes)


key_ids = st.one_of(ids, bytes_of(32).map(lambda raw: "sha256:" + b64url_encode(raw)))


@st.composite
def manifest_args(draw: st.DrawFn) -> dict[str, Any]:
    chunk_size, chunks, plaintext_size = draw(chunk_lists())
    return {
        "key": draw(keys),
        "publisher_id": draw(ids),
        "object_id": draw(ids),
        "created_at": draw(epoch_seconds),
        "plaintext_size": plaintext_size,
        "encryption": Encryption(
            key_id=draw(key_ids), chunk_size=chunk_size, aad_context=draw(bytes_of(32))
        ),
        "chunks": chunks,
        "media_type": draw(optional(ids)),
        "schema": draw(optional(ids)),
        "provenance_parents": draw(optional(st.lists(cids, unique=True, max_size=4))),
        "transformation": draw(optional(ids)),
        "generated_by": draw(optional(ids)),
        "metadata": draw(optional(_metadata)),
        "extensions": draw(optional(_extensions)),
    }


rights_lists = st.sets(st.sampled_from([Right.DERIVE, Right.REPLICATE, Right.DELEGATE])).flatmap(
    lambda others: st.permutations([Right.READ, *sorted(others)])
)


@st.composite
def grant_args(draw: st.DrawFn) -> dict[str, Any]:
    issued_at, expires_at = draw(ordered_times())
    return {
        "key": draw(keys),
        "issuer_id": draw(ids),
        "grant_id": draw(ids),
        "manifest_cid": draw(cids),
        "audience": draw(ids),
        "audience_x25519_public_key": draw(bytes_of(32)),
        "rights": draw(rights_lists),
        "issued_at": issued_at,
        "expires_at": expires_at,
        "key_wrap": KeyWrap(
            ephemeral_public_key=draw(bytes_of(32)),
            nonce=draw(bytes_of(12)),
            ciphertext=draw(bytes_of(48)),
        ),
        "not_before": draw(optional(epoch_seconds)),
        "parent_grant": draw(optional(cids)),
        "task_id": draw(optional(ids)),
        "purpose": draw(optional(ids)),
        "extensions": draw(optional(_extensions)),
    }


# RFC 6570 pieces. Literal characters per section 2.1 (with Erratum 6937's "'").
_LITERAL_ASCII = "!#$&'()*+,-./0123456789:;=?@ABCXYZ[]_abcxyz~"
_literals = st.lists(
    st.one_of(
        st.sampled_from(_LITERAL_ASCII),
        st.sampled_from(["%2F", "%41", "%e9", "\xe9", "\u4e2d", "\U00010000", "\ue000"]),
    ),
    max_size=10,
).map("".join)
_OPERATORS = ["", "+", "#", ".", "/", ";", "?", "&"]
_plain_names = st.from_regex(r"[A-Za-z0-9_]{1,4}(\.[A-Za-z0-9_]{1,3})?", fullmatch=True)
# RFC 6570 section 2.3: a varchar may be pct-encoded, anywhere in the name.
_pct_names = st.from_regex(r"(%[0-9A-Fa-f]{2}|[A-Za-z0-9_]){1,3}", fullmatch=True)


# RFC 6570 section 2.4.1: a prefix is a positive integer below 10000.
_modifiers = st.one_of(st.just(""), st.just("*"), st.integers(1, 9999).map(lambda n: f":{n}"))
_other_names = st.one_of(_plain_names, _pct_names).filter(lambda name: name != "cid")
_varspecs = st.tuples(_other_names, _modifiers).map("".join)
# Further expressions, which may use cid again, with any modifier.
_extra_expressions = st.tuples(
    st.sampled_from(_OPERATORS), st.one_of(_other_names, st.just("cid")), _modifiers
).map(lambda parts: "{" + "".join(parts) + "}")


@st.composite
def uri_templates(draw: st.DrawFn) -> str:
    """An RFC 6570 template with at least one use of ``cid`` without a prefix modifier, among
    literals and other expressions in any order."""
    cid_spec = draw(st.sampled_from(["cid", "cid*"]))
    others = draw(st.lists(_varspecs, max_size=2))
    variables = draw(st.permutations([cid_spec, *others]))
    operator = draw(st.sampled_from(_OPERATORS))
    pieces = [draw(_literals), "{" + operator + ",".join(variables) + "}"]
    pieces += draw(st.lists(_extra_expressions, max_size=2))
    pieces.append(draw(_literals))
    head, *middle, tail = pieces
    return head + "".join(draw(st.permutations(middle))) + tail


def inventory_items() -> st.SearchStrategy[InventoryItem]:
    return st.builds(InventoryItem, cid=cids, size=uint53, role=st.sampled_from(Role))


@st.composite
def provider_record_args(draw: st.DrawFn) -> dict[str, Any]:
    issued_at, expires_at = draw(ordered_times())
    endpoints = st.builds(
        Endpoint,
        transport=ids,
        uri_template=uri_templates(),
        priority=optional(st.integers(0, 65535)),
    )
    return {
        "key": draw(keys),
        "provider_id": draw(ids),
        "record_id": draw(ids),
        "sequence": draw(uint53),
        "issued_at": issued_at,
        "expires_at": expires_at,
        "inventory": draw(st.lists(inventory_items(), min_size=1, max_size=4)),
        "endpoints": draw(st.lists(endpoints, min_size=1, max_size=3)),
        "supersedes": draw(optional(cids)),
        "extensions": draw(optional(_extensions)),
    }


@st.composite
def head_args(draw: st.DrawFn) -> dict[str, Any]:
    return {
        "key": draw(keys),
        "issuer_id": draw(ids),
        "head_id": draw(ids),
        "sequence": draw(uint53),
        "manifest_cid": draw(cids),
        "parents": draw(st.lists(cids, unique=True, max_size=4)),
        "updated_at": draw(epoch_seconds),
        "extensions": draw(optional(_extensions)),
    }


@st.composite
def receipt_args(draw: st.DrawFn) -> dict[str, Any]:
    issued_at, retention_until = draw(ordered_times())
    return {
        "key": draw(keys),
        "provider_id": draw(ids),
        "receipt_id": draw(ids),
        "issued_at": issued_at,
        "retention_until": retention_until,
        "commitment": draw(st.sampled_from(Commitment)),
        "items": draw(st.lists(inventory_items(), min_size=1, max_size=4)),
        "provider_record": draw(optional(cids)),
        "availability_target": draw(optional(ids)),
        "storage_class": draw(optional(ids)),
        "regions": draw(optional(st.lists(ids, unique=True, max_size=3))),
        "extensions": draw(optional(_extensions)),
    }


Builder = Callable[..., SignedDocument]
ArgsStrategy = Callable[..., st.SearchStrategy[dict[str, Any]]]

BUILDERS: dict[str, tuple[Builder, ArgsStrategy]] = {
    "manifest": (build_manifest, manifest_args),
    "grant": (build_grant, grant_args),
    "provider_record": (build_provider_record, provider_record_args),
    "head": (build_head, head_args),
    "receipt": (build_receipt, receipt_args),
}

# Top-level members per kind, from the specification's tables: (required, optional).
MEMBERS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "manifest": (
        frozenset(
            [
                "adds_version",
                "kind",
                "object_id",
                "publisher",
                "created_at",
                "plaintext",
                "encryption",
                "chunks",
                "signature",
            ]
        ),
        frozenset(["media_type", "schema", "provenance", "metadata", "extensions"]),
    ),
    "grant": (
        frozenset(
            [
                "adds_version",
                "kind",
                "grant_id",
                "manifest_cid",
                "issuer",
                "audience",
                "audience_x25519_public_key",
                "audience_x25519_key_id",
                "rights",
                "issued_at",
                "expires_at",
                "key_wrap",
                "signature",
            ]
        ),
        frozenset(["not_before", "parent_grant", "scope", "extensions"]),
    ),
    "provider_record": (
        frozenset(
            [
                "adds_version",
                "kind",
                "record_id",
                "provider",
                "sequence",
                "issued_at",
                "expires_at",
                "inventory",
                "endpoints",
                "signature",
            ]
        ),
        frozenset(["supersedes", "extensions"]),
    ),
    "head": (
        frozenset(
            [
                "adds_version",
                "kind",
                "head_id",
                "issuer",
                "sequence",
                "manifest_cid",
                "parents",
                "updated_at",
                "signature",
            ]
        ),
        frozenset(["extensions"]),
    ),
    "receipt": (
        frozenset(
            [
                "adds_version",
                "kind",
                "receipt_id",
                "provider",
                "issued_at",
                "retention_until",
                "commitment",
                "items",
                "signature",
            ]
        ),
        frozenset(["provider_record", "terms", "extensions"]),
    ),
}


def signed_documents() -> st.SearchStrategy[SignedDocument]:
    """A signed, valid document of any kind."""
    return st.one_of(
        [args().map(lambda a, b=builder: b(**a)) for builder, args in BUILDERS.values()]
    )


# ---------------------------------------------------------------------------------------------
# Hostile input
# ---------------------------------------------------------------------------------------------

_TOKENS = [
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    '"',
    "\\",
    "\\u",
    "\\ud800",
    "\\udfff",
    "\\ud83d\\ude00",
    "\\ufdd0",
    "\\uFFFF",
    "\\/",
    "true",
    "false",
    "null",
    "NaN",
    "Infinity",
    "-Infinity",
    "-",
    "0",
    "-0",
    "1.0",
    "1e400",
    "1e-400",
    "0e-400",
    ".5",
    "01",
    "9007199254740991",
    "9007199254740992",
    "-9007199254740993",
    "1" * 40,
    " ",
    "\n",
    "\ufeff",
    "\ufdd0",
    "\U0001fffe",
    '"kind"',
    '"manifest"',
    '"grant"',
    '"provider_record"',
    '"head"',
    '"receipt"',
    '"signature"',
    '"chunks"',
    '"endpoints"',
    '"{cid}"',
]

json_ish_bytes = st.one_of(
    st.lists(st.one_of(st.sampled_from(_TOKENS), st.text(max_size=3)), max_size=40).map(
        lambda parts: "".join(parts).encode("utf-8", "surrogatepass")
    ),
    st.builds(
        lambda prefix, body: prefix + body,
        st.sampled_from([b"", b"\xef\xbb\xbf", b"\xff\xfe", b" "]),
        st.text(max_size=40).map(lambda t: t.encode("utf-8", "surrogatepass")),
    ),
)


@st.composite
def deep_nesting(draw: st.DrawFn) -> bytes:
    depth = draw(st.one_of(st.integers(0, 80), st.integers(0, 20_000)))
    opener, closer = draw(st.sampled_from([("[", "]"), ('{"a":', "}"), ('[{"k":', "}]")]))
    middle = draw(st.sampled_from(["1", '"x"', "", "[]", "{}"]))
    closers = draw(st.integers(0, depth)) if draw(st.booleans()) else depth
    return (opener * depth + middle + closer * closers).encode()


def dumps(value: Any, *, ensure_ascii: bool, sort_keys: bool, spaced: bool) -> bytes:
    separators = (", ", ": ") if spaced else (",", ":")
    text = json.dumps(
        value,
        ensure_ascii=ensure_ascii,
        sort_keys=sort_keys,
        separators=separators,
        allow_nan=False,
    )
    return text.encode("utf-8")


dumped_values = st.builds(
    dumps,
    ijson_values(floats=finite_floats, characters=any_scalar_characters),
    ensure_ascii=st.booleans(),
    sort_keys=st.booleans(),
    spaced=st.booleans(),
)


@st.composite
def document_shaped(draw: st.DrawFn) -> bytes:
    """An object with a real ``kind`` and some of that kind's member names, holding anything."""
    kind = draw(st.sampled_from(sorted(MEMBERS)))
    required, optional_members = MEMBERS[kind]
    names = draw(st.lists(st.sampled_from(sorted(required | optional_members)), max_size=14))
    value: dict[str, Any] = {name: draw(small_values) for name in names}
    value["kind"] = kind
    return dumps(value, ensure_ascii=draw(st.booleans()), sort_keys=False, spaced=False)
