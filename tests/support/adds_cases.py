"""Named data sets: valid documents with every optional member, and invalid ones for every rule.

Each invalid case states exactly which problems the validator must report, as (pointer, code)
pairs. Mutations of a valid document are re-signed by the right key, so a case shows only the
problem it is about (unless it is about the signature). ``schema_level`` says whether JSON Schema
can express every problem in the case (tests/adds/test_schemas.py checks both agree).
"""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from hearth.adds import SIGNING_CONTEXT, b64url_encode, cid_for_bytes, signed_bytes
from hearth.adds.canonical import canonicalize
from hearth.adds.ed25519 import sign
from tests.vectors.generate import PROVIDER, PUBLISHER, documents, fixed_bytes, signing_key

__all__ = ["INVALID", "SCHEMA_CODES", "VALID", "Invalid", "is_schema_code"]

# Codes JSON Schema can express (spec.time.fractional only for a visible fraction such as 1.5).
SCHEMA_CODES = frozenset(
    {
        "spec.required",
        "spec.unknown_member",
        "spec.type",
        "spec.const",
        "spec.enum",
        "spec.min_length",
        "spec.length",
        "spec.range",
        "spec.pattern",
        "spec.unique",
        "spec.min_items",
        "spec.max_items",
        "spec.min_properties",
        "spec.base64url.alphabet",
        "spec.base64url.non_canonical",
        "spec.rights.read",
        "spec.extensions.name",
        "spec.time.fractional",
        "spec.kind",
    }
)


@dataclass(frozen=True)
class Invalid:
    name: str
    data: bytes
    expected: tuple[tuple[str, str], ...]
    schema_level: bool


_DOCS = documents()
VALID: dict[str, bytes] = {name: signed.canonical for name, signed in _DOCS.items()}
_SIGNERS = {"manifest": PUBLISHER, "grant": PUBLISHER, "head": PUBLISHER}
_SIGNER_MEMBER = {
    "manifest": "publisher",
    "grant": "issuer",
    "head": "issuer",
    "provider_record": "provider",
    "receipt": "provider",
}


def _unsigned(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` with ``signature.value`` removed: what a signature covers."""
    signature = {k: v for k, v in document["signature"].items() if k != "value"}
    return {**document, "signature": signature}


def _resign(document: dict[str, Any], key: Ed25519PrivateKey | None = None) -> dict[str, Any]:
    """Sign ``document`` as it stands (whatever its signature object holds besides value), by
    ``key`` or else by the kind's signer."""
    unsigned = _unsigned(document)
    value = sign(key or _SIGNERS.get(document["kind"], PROVIDER), signed_bytes(unsigned))
    return {**unsigned, "signature": {**unsigned["signature"], "value": b64url_encode(value)}}


def _set(document: dict[str, Any], pointer: str, value: Any) -> None:
    """Set (or, with _DELETE, remove) the member at a JSON pointer."""
    *parents, last = (
        token.replace("~1", "/").replace("~0", "~") for token in pointer[1:].split("/")
    )
    target: Any = document
    for token in parents:
        target = target[int(token)] if isinstance(target, list) else target[token]
    if isinstance(target, list):
        if value is _DELETE:
            del target[int(last)]
        else:
            target[int(last)] = value
    elif value is _DELETE:
        del target[last]
    else:
        target[last] = value


_DELETE = object()
_INVALID: list[Invalid] = []


def is_schema_code(code: str) -> bool:
    """Whether JSON Schema can express the rule behind a validator code."""
    return code in SCHEMA_CODES or code.startswith("spec.cid.")


def _schema_level(expected: tuple[tuple[str, str], ...]) -> bool:
    return all(is_schema_code(code) for _, code in expected)


def case(
    name: str,
    base: str,
    changes: dict[str, Any] | Callable[[dict[str, Any]], None],
    *expected: tuple[str, str],
    resign: bool = True,
    signer: Ed25519PrivateKey | None = None,
    schema_level: bool | None = None,
    raw: Callable[[bytes], bytes] | None = None,
) -> None:
    document = copy.deepcopy(_DOCS[base].document)
    if callable(changes):
        changes(document)
    else:
        for pointer, value in changes.items():
            _set(document, pointer, value)
    if resign:
        document = _resign(document, signer)
    data = canonicalize(document)
    if raw is not None:
        data = raw(data)
    level = _schema_level(expected) if schema_level is None else schema_level
    _INVALID.append(Invalid(name, data, tuple(expected), level))


def bytes_case(name: str, data: bytes, *expected: tuple[str, str]) -> None:
    _INVALID.append(Invalid(name, data, tuple(expected), False))


def _cid_of(binary: bytes) -> str:
    return "b" + base64.b32encode(binary).decode().rstrip("=").lower()


_DIGEST = fixed_bytes("digest", 32)
_CIDS = {
    "codec": _cid_of(bytes([1, 0x71, 0x12, 0x20]) + _DIGEST),
    "hash": _cid_of(bytes([1, 0x55, 0x13, 0x20]) + _DIGEST),
    "version": _cid_of(bytes([2, 0x55, 0x12, 0x20]) + _DIGEST),
    "digest_length": _cid_of(bytes([1, 0x55, 0x12, 0x1F]) + _DIGEST[:31] + b"\x00"),
    "varint": _cid_of(bytes([1, 0xD5, 0x00, 0x12, 0x20]) + _DIGEST[:31]),
}
_GOOD_CID = cid_for_bytes(b"block")
_NON_CANONICAL_CID = _GOOD_CID[:-1] + "b"  # the last character's two unused bits set
_SMALL_ORDER_KEY = b64url_encode(bytes([1]) + bytes(31))  # the identity point
_NON_CANONICAL_KEY = b64url_encode((2**255 - 19 + 1).to_bytes(32, "little"))  # y = p + 1
_OTHER_KEY = signing_key("stranger")

# --- bytes that are not I-JSON, or not a document --------------------------------------------
bytes_case("not JSON", b'{"kind": "grant"', ("", "spec.ijson.syntax"))
bytes_case("trailing data", b"{} {}", ("", "spec.ijson.syntax"))
bytes_case("byte order mark", b"\xef\xbb\xbf{}", ("", "spec.ijson.bom"))
bytes_case("invalid UTF-8", b'{"a": "\xc3\x28"}', ("", "spec.ijson.utf8"))
bytes_case("overlong UTF-8", b'{"a": "\xc0\xaf"}', ("", "spec.ijson.utf8"))
bytes_case("UTF-16", '{"a": 1}'.encode("utf-16"), ("", "spec.ijson.utf8"))
bytes_case(
    "duplicate member", b'{"kind": "grant", "kind": "head"}', ("", "spec.ijson.duplicate_member")
)
bytes_case(
    "nested duplicate member",
    b'{"kind": "grant", "issuer": {"id": "a", "id": "b"}}',
    ("", "spec.ijson.duplicate_member"),
)
bytes_case(
    "escaped duplicate member", b'{"a": 1, "\\u0061": 2}', ("", "spec.ijson.duplicate_member")
)
bytes_case("lone surrogate", b'{"a": "\\udc00"}', ("", "spec.ijson.lone_surrogate"))
bytes_case("escaped noncharacter", b'{"a": "\\ufffe"}', ("", "spec.ijson.noncharacter"))
bytes_case("raw noncharacter", '{"a": "\ufdd0"}'.encode(), ("", "spec.ijson.noncharacter"))
bytes_case("NaN", b'{"a": NaN}', ("", "spec.ijson.syntax"))
bytes_case("Infinity", b'{"a": -Infinity}', ("", "spec.ijson.syntax"))
bytes_case("huge integer", b'{"a": 9007199254740992}', ("", "spec.ijson.integer_range"))
bytes_case("overflowing number", b'{"a": 1e400}', ("", "spec.ijson.number_range"))
bytes_case(
    "float canonicalized as a huge integer",
    b'{"a": 1e20}',
    ("", "profile.ijson.number_range"),
)
bytes_case("underflowing number", b'{"a": 1e-400}', ("", "spec.ijson.number_range"))
bytes_case("too deep", b'{"a": ' + b"[" * 64 + b"]" * 64 + b"}", ("", "profile.ijson.depth"))
bytes_case("an array", b"[]", ("", "spec.type"))
bytes_case("a string", b'"grant"', ("", "spec.type"))
bytes_case("no kind", b'{"adds_version": "0.1"}', ("/kind", "spec.required"))
case("unknown kind", "head-minimal", {"/kind": "tail"}, ("/kind", "spec.kind"))
case("kind not a string", "head-minimal", {"/kind": 5}, ("/kind", "spec.kind"))

# --- members shared by every kind ------------------------------------------------------------
case(
    "missing adds_version",
    "grant-minimal",
    {"/adds_version": _DELETE},
    ("/adds_version", "spec.required"),
)
case("adds_version 0.2", "grant-minimal", {"/adds_version": "0.2"}, ("/adds_version", "spec.const"))
case(
    "adds_version number", "grant-minimal", {"/adds_version": 0.1}, ("/adds_version", "spec.const")
)
case("unknown member", "grant-minimal", {"/comment": "hi"}, ("/comment", "spec.unknown_member"))
case(
    "unknown member with a slash",
    "head-minimal",
    {"/a~1b": 1},
    ("/a~1b", "spec.unknown_member"),
)
case(
    "missing signature",
    "head-minimal",
    {"/signature": _DELETE},
    ("/signature", "spec.required"),
    resign=False,
)
case(
    "signature algorithm",
    "grant-minimal",
    {"/signature/algorithm": "EdDSA"},
    ("/signature/algorithm", "spec.const"),
)
case(
    "signature extra member",
    "grant-minimal",
    {"/signature/kid": "k1"},
    ("/signature/kid", "spec.unknown_member"),
)
case(
    "signature value missing",
    "grant-minimal",
    {"/signature/value": _DELETE},
    ("/signature/value", "spec.required"),
    resign=False,
)
case(
    "signature value too short",
    "grant-minimal",
    lambda d: _set(d, "/signature/value", d["signature"]["value"][:-2]),
    ("/signature/value", "spec.length"),
    resign=False,
)
case(
    "signature value non-canonical",
    "grant-minimal",
    lambda d: _set(d, "/signature/value", d["signature"]["value"][:-1] + "B"),
    ("/signature/value", "spec.base64url.non_canonical"),
    resign=False,
)
case(
    "signature value padded",
    "grant-minimal",
    lambda d: _set(d, "/signature/value", d["signature"]["value"][:-2] + "=="),
    ("/signature/value", "spec.base64url.alphabet"),
    resign=False,
)
case(
    "signature does not verify",
    "grant-minimal",
    {"/audience": "did:example:mallory"},
    ("/signature/value", "profile.signature.invalid"),
    resign=False,
)
case(
    "signature by a stranger",
    "grant-minimal",
    {"/signature/public_key": b64url_encode(_OTHER_KEY.public_key().public_bytes_raw())},
    ("/signature/public_key", "profile.signature.signer_mismatch"),
    signer=_OTHER_KEY,
)
case(
    "signed without the context string",
    "head-minimal",
    lambda d: _set(
        d, "/signature/value", b64url_encode(sign(PUBLISHER, canonicalize(_unsigned(d))))
    ),
    ("/signature/value", "profile.signature.invalid"),
    resign=False,
)
case(
    "signed over non-canonical JSON",
    "head-minimal",
    lambda d: _set(
        d,
        "/signature/value",
        b64url_encode(sign(PUBLISHER, SIGNING_CONTEXT + json.dumps(_unsigned(d)).encode())),
    ),
    ("/signature/value", "profile.signature.invalid"),
    resign=False,
)
case(
    "small-order signing key",
    "head-minimal",
    {"/issuer/ed25519_public_key": _SMALL_ORDER_KEY, "/signature/public_key": _SMALL_ORDER_KEY},
    ("/signature/public_key", "profile.key.small_order"),
    resign=False,
)
case(
    "non-canonical signing key",
    "head-minimal",
    {"/issuer/ed25519_public_key": _NON_CANONICAL_KEY, "/signature/public_key": _NON_CANONICAL_KEY},
    ("/signature/public_key", "profile.key.non_canonical"),
    resign=False,
)
case(
    "principal without id",
    "grant-minimal",
    {"/issuer/id": _DELETE},
    ("/issuer/id", "spec.required"),
)
case(
    "principal with empty id",
    "grant-minimal",
    {"/issuer/id": ""},
    ("/issuer/id", "spec.min_length"),
)
case("principal id not a string", "grant-minimal", {"/issuer/id": 7}, ("/issuer/id", "spec.type"))
case(
    "principal extra member",
    "grant-minimal",
    {"/issuer/name": "Alice"},
    ("/issuer/name", "spec.unknown_member"),
)
case(
    "principal key too short",
    "grant-minimal",
    {"/issuer/ed25519_public_key": b64url_encode(bytes(31))},
    ("/issuer/ed25519_public_key", "spec.length"),
)
case(
    "principal key not base64url",
    "grant-minimal",
    lambda d: _set(d, "/issuer/ed25519_public_key", "+" + d["issuer"]["ed25519_public_key"][1:]),
    ("/issuer/ed25519_public_key", "spec.base64url.alphabet"),
)
case("extensions not an object", "head-full", {"/extensions": ["x"]}, ("/extensions", "spec.type"))
case(
    "extension name without namespace",
    "head-full",
    {"/extensions/note": 1},
    ("/extensions/note", "spec.extensions.name"),
)
case(
    "extension name starting with a digit",
    "head-full",
    {"/extensions/1x:note": 1},
    ("/extensions/1x:note", "spec.extensions.name"),
)

# --- grant -----------------------------------------------------------------------------------
case("rights without read", "grant-full", {"/rights": ["derive"]}, ("/rights", "spec.rights.read"))
case(
    "rights with read twice",
    "grant-full",
    {"/rights": ["read", "derive", "read"]},
    ("/rights/2", "spec.unique"),
    ("/rights", "spec.rights.read"),
)
case(
    "rights duplicate",
    "grant-full",
    {"/rights": ["read", "derive", "derive"]},
    ("/rights/2", "spec.unique"),
)
case(
    "rights empty",
    "grant-full",
    {"/rights": []},
    ("/rights", "spec.min_items"),
    ("/rights", "spec.rights.read"),
)
case("rights unknown", "grant-full", {"/rights": ["read", "write"]}, ("/rights/1", "spec.enum"))
case("rights not an array", "grant-full", {"/rights": "read"}, ("/rights", "spec.type"))
case(
    "audience key id of another key",
    "grant-full",
    {"/audience_x25519_key_id": "sha256:" + b64url_encode(_DIGEST)},
    ("/audience_x25519_key_id", "spec.key_id.mismatch"),
)
case(
    "audience key id without prefix",
    "grant-full",
    {"/audience_x25519_key_id": b64url_encode(_DIGEST)},
    ("/audience_x25519_key_id", "spec.pattern"),
)
case(
    "audience key id sha512",
    "grant-full",
    {"/audience_x25519_key_id": "sha512:" + b64url_encode(_DIGEST)},
    ("/audience_x25519_key_id", "spec.pattern"),
)
case("audience empty", "grant-full", {"/audience": ""}, ("/audience", "spec.min_length"))
case("grant_id missing", "grant-full", {"/grant_id": _DELETE}, ("/grant_id", "spec.required"))
case(
    "issued_at fractional",
    "grant-full",
    {"/issued_at": 1795000000.5},
    ("/issued_at", "spec.time.fractional"),
)
case(
    "issued_at written with .0",
    "grant-full",
    {},
    ("/issued_at", "spec.time.fractional"),
    raw=lambda data: data.replace(b'"issued_at":1795000000', b'"issued_at":1795000000.0'),
    resign=False,
    schema_level=False,
)
case(
    "expires_at negative",
    "grant-full",
    {"/expires_at": -1},
    ("/expires_at", "spec.range"),
    ("/expires_at", "profile.time.order"),
)
case("expires_at a string", "grant-full", {"/expires_at": "tomorrow"}, ("/expires_at", "spec.type"))
case(
    "not_before fractional",
    "grant-full",
    {"/not_before": 0.5},
    ("/not_before", "spec.time.fractional"),
)
case(
    "expires before issued",
    "grant-full",
    {"/expires_at": 1794999999},
    ("/expires_at", "profile.time.order"),
)
case("scope empty", "grant-full", {"/scope": {}}, ("/scope", "spec.min_properties"))
case("scope extra member", "grant-full", {"/scope/why": "x"}, ("/scope/why", "spec.unknown_member"))
case(
    "scope purpose empty",
    "grant-full",
    {"/scope/purpose": ""},
    ("/scope/purpose", "spec.min_length"),
)
case(
    "key_wrap algorithm",
    "grant-full",
    {"/key_wrap/algorithm": "RSA-OAEP"},
    ("/key_wrap/algorithm", "spec.const"),
)
case(
    "key_wrap ciphertext short",
    "grant-full",
    lambda d: _set(d, "/key_wrap/ciphertext", d["key_wrap"]["ciphertext"][:60]),
    ("/key_wrap/ciphertext", "spec.length"),
)
case(
    "key_wrap nonce long",
    "grant-full",
    {"/key_wrap/nonce": b64url_encode(bytes(15))},
    ("/key_wrap/nonce", "spec.length"),
)
case(
    "key_wrap missing nonce",
    "grant-full",
    {"/key_wrap/nonce": _DELETE},
    ("/key_wrap/nonce", "spec.required"),
)
case(
    "ephemeral key non-canonical base64url",
    "grant-full",
    lambda d: _set(
        d, "/key_wrap/ephemeral_public_key", d["key_wrap"]["ephemeral_public_key"][:-1] + "B"
    ),
    ("/key_wrap/ephemeral_public_key", "spec.base64url.non_canonical"),
)
case(
    "manifest_cid upper case",
    "grant-full",
    lambda d: _set(d, "/manifest_cid", d["manifest_cid"].upper()),
    ("/manifest_cid", "spec.cid.pattern"),
)
case(
    "manifest_cid base58",
    "grant-full",
    {"/manifest_cid": "zb2rhe5P4gXftAwvA4eXQ5HJwsER2owDyS9sKaQRRVQPn93bA"},
    ("/manifest_cid", "spec.cid.pattern"),
)
case(
    "manifest_cid dag-cbor",
    "grant-full",
    {"/manifest_cid": _CIDS["codec"]},
    ("/manifest_cid", "spec.cid.codec"),
)
case(
    "manifest_cid sha2-512 code",
    "grant-full",
    {"/manifest_cid": _CIDS["hash"]},
    ("/manifest_cid", "spec.cid.hash"),
)
case(
    "manifest_cid version 2",
    "grant-full",
    {"/manifest_cid": _CIDS["version"]},
    ("/manifest_cid", "spec.cid.version"),
)
case(
    "manifest_cid 31-byte digest",
    "grant-full",
    {"/manifest_cid": _CIDS["digest_length"]},
    ("/manifest_cid", "spec.cid.digest_length"),
)
case(
    "manifest_cid non-minimal varint",
    "grant-full",
    {"/manifest_cid": _CIDS["varint"]},
    ("/manifest_cid", "spec.cid.varint"),
)
case(
    "manifest_cid unused bits set",
    "grant-full",
    {"/manifest_cid": _NON_CANONICAL_CID},
    ("/manifest_cid", "spec.cid.non_canonical"),
)
case(
    "parent_grant not a CID",
    "grant-full",
    {"/parent_grant": "grant-1"},
    ("/parent_grant", "spec.cid.pattern"),
)

# --- manifest --------------------------------------------------------------------------------
case("chunks empty", "manifest-full", {"/chunks": []}, ("/chunks", "spec.min_items"))
case("chunks not an array", "manifest-full", {"/chunks": {}}, ("/chunks", "spec.type"))
case(
    "chunk missing nonce",
    "manifest-full",
    {"/chunks/1/nonce": _DELETE},
    ("/chunks/1/nonce", "spec.required"),
)
case(
    "chunk extra member",
    "manifest-full",
    {"/chunks/1/tag": "x"},
    ("/chunks/1/tag", "spec.unknown_member"),
)
case(
    "chunk cid of another codec",
    "manifest-full",
    {"/chunks/2/cid": _CIDS["codec"]},
    ("/chunks/2/cid", "spec.cid.codec"),
)
case(
    "chunk index beyond uint32",
    "manifest-full",
    {"/chunks/0/index": 4294967296},
    ("/chunks/0/index", "spec.range"),
    ("/chunks/0/index", "profile.chunks.index"),
)
case(
    "chunk indices out of order",
    "manifest-full",
    {"/chunks/0/index": 1, "/chunks/1/index": 0},
    ("/chunks/0/index", "profile.chunks.index"),
    ("/chunks/1/index", "profile.chunks.index"),
)
case(
    "chunk ciphertext below the tag size",
    "manifest-minimal",
    {"/chunks/0/ciphertext_size": 15},
    ("/chunks/0/ciphertext_size", "spec.range"),
    ("/chunks/0/ciphertext_size", "profile.chunks.ciphertext_size"),
)
case(
    "chunk ciphertext size off by one",
    "manifest-full",
    {"/chunks/2/ciphertext_size": 117},
    ("/chunks/2/ciphertext_size", "profile.chunks.ciphertext_size"),
)
case(
    "short chunk before the last",
    "manifest-full",
    {"/chunks/0/plaintext_size": 1000, "/chunks/0/ciphertext_size": 1016, "/plaintext/size": 2124},
    ("/chunks/0/plaintext_size", "profile.chunks.plaintext_size"),
)
case(
    "last chunk larger than chunk_size",
    "manifest-full",
    {"/chunks/2/plaintext_size": 1025, "/chunks/2/ciphertext_size": 1041, "/plaintext/size": 3073},
    ("/chunks/2/plaintext_size", "profile.chunks.plaintext_size"),
)
case(
    "empty last chunk after full ones",
    "manifest-full",
    {"/chunks/2/plaintext_size": 0, "/chunks/2/ciphertext_size": 16, "/plaintext/size": 2048},
    ("/chunks/2/plaintext_size", "profile.chunks.plaintext_size"),
)
case(
    "plaintext size not the sum",
    "manifest-full",
    {"/plaintext/size": 2149},
    ("/plaintext/size", "profile.chunks.total"),
)
case(
    "plaintext extra member",
    "manifest-full",
    {"/plaintext/sha256": "x"},
    ("/plaintext/sha256", "spec.unknown_member"),
)
case(
    "plaintext size missing",
    "manifest-full",
    {"/plaintext": {}},
    ("/plaintext/size", "spec.required"),
)
case(
    "encryption algorithm",
    "manifest-full",
    {"/encryption/algorithm": "AES-128-GCM"},
    ("/encryption/algorithm", "spec.const"),
)
case(
    "encryption block_aad",
    "manifest-full",
    {"/encryption/block_aad": "adds-block/v2"},
    ("/encryption/block_aad", "spec.const"),
)
case(
    "encryption key_id missing",
    "manifest-full",
    {"/encryption/key_id": _DELETE},
    ("/encryption/key_id", "spec.required"),
)
case(
    "encryption chunk_size zero",
    "manifest-full",
    {"/encryption/chunk_size": 0},
    ("/encryption/chunk_size", "spec.range"),
)
case(
    "encryption chunk_size above 16 MiB",
    "manifest-full",
    {"/encryption/chunk_size": 16777217},
    ("/encryption/chunk_size", "spec.range"),
)
case(
    "encryption aad_context short",
    "manifest-full",
    {"/encryption/aad_context": b64url_encode(bytes(31))},
    ("/encryption/aad_context", "spec.length"),
)
case(
    "encryption extra member",
    "manifest-full",
    {"/encryption/mode": "x"},
    ("/encryption/mode", "spec.unknown_member"),
)
case("media_type empty", "manifest-full", {"/media_type": ""}, ("/media_type", "spec.min_length"))
case("schema not a string", "manifest-full", {"/schema": {}}, ("/schema", "spec.type"))
case("metadata not an object", "manifest-full", {"/metadata": "notes"}, ("/metadata", "spec.type"))
case(
    "provenance parents duplicate",
    "manifest-full",
    lambda d: _set(d, "/provenance/parents", [d["provenance"]["parents"][0]] * 2),
    ("/provenance/parents/1", "spec.unique"),
)
case(
    "provenance extra member",
    "manifest-full",
    {"/provenance/author": "x"},
    ("/provenance/author", "spec.unknown_member"),
)
case(
    "provenance transformation empty",
    "manifest-full",
    {"/provenance/transformation": ""},
    ("/provenance/transformation", "spec.min_length"),
)
case(
    "created_at fractional",
    "manifest-full",
    {"/created_at": 1.25},
    ("/created_at", "spec.time.fractional"),
)
case(
    "object_id and publisher missing",
    "manifest-full",
    {"/object_id": _DELETE, "/publisher": _DELETE},
    ("/object_id", "spec.required"),
    ("/publisher", "spec.required"),
)

# --- provider_record -------------------------------------------------------------------------
case(
    "endpoint without {cid}",
    "provider_record-full",
    {"/endpoints/0/uri_template": "https://provider.example/blocks/{id}"},
    ("/endpoints/0/uri_template", "spec.endpoint.missing_cid"),
)
case(
    "endpoint not a URI template",
    "provider_record-full",
    {"/endpoints/1/uri_template": "https://provider.example/blocks/{cid"},
    ("/endpoints/1/uri_template", "spec.endpoint.template"),
)
case(
    "endpoint with a space",
    "provider_record-full",
    {"/endpoints/0/uri_template": "https://provider.example/my blocks/{cid}"},
    ("/endpoints/0/uri_template", "spec.endpoint.template"),
)
case(
    "endpoint truncating the CID",
    "provider_record-full",
    {"/endpoints/0/uri_template": "https://provider.example/{cid:8}"},
    ("/endpoints/0/uri_template", "profile.endpoint.cid_prefix"),
)
case(
    "endpoint priority too high",
    "provider_record-full",
    {"/endpoints/0/priority": 65536},
    ("/endpoints/0/priority", "spec.range"),
)
case(
    "endpoint transport missing",
    "provider_record-full",
    {"/endpoints/0/transport": _DELETE},
    ("/endpoints/0/transport", "spec.required"),
)
case(
    "endpoint template empty",
    "provider_record-full",
    {"/endpoints/0/uri_template": ""},
    ("/endpoints/0/uri_template", "spec.min_length"),
)
case(
    "endpoints empty", "provider_record-full", {"/endpoints": []}, ("/endpoints", "spec.min_items")
)
case(
    "inventory empty", "provider_record-full", {"/inventory": []}, ("/inventory", "spec.min_items")
)
case(
    "inventory role unknown",
    "provider_record-full",
    {"/inventory/0/role": "index"},
    ("/inventory/0/role", "spec.enum"),
)
case(
    "inventory size negative",
    "provider_record-full",
    {"/inventory/1/size": -5},
    ("/inventory/1/size", "spec.range"),
)
case(
    "inventory item extra member",
    "provider_record-full",
    {"/inventory/1/note": "x"},
    ("/inventory/1/note", "spec.unknown_member"),
)
case("sequence fractional", "provider_record-full", {"/sequence": 1.5}, ("/sequence", "spec.type"))
case(
    "sequence beyond uint53", "provider_record-full", {"/sequence": -1}, ("/sequence", "spec.range")
)
case(
    "supersedes not a CID",
    "provider_record-full",
    {"/supersedes": "inventory@0"},
    ("/supersedes", "spec.cid.pattern"),
)
case(
    "record expires before issued",
    "provider_record-full",
    {"/expires_at": 1795000000},
    ("/expires_at", "profile.time.order"),
)
case(
    "provider missing",
    "provider_record-full",
    {"/provider": _DELETE},
    ("/provider", "spec.required"),
)

# --- head --------------------------------------------------------------------------------------
case(
    "head parents duplicate",
    "head-full",
    lambda d: _set(d, "/parents", d["parents"] * 2),
    ("/parents/1", "spec.unique"),
)
case("head parents missing", "head-minimal", {"/parents": _DELETE}, ("/parents", "spec.required"))
case("head parent not a CID", "head-full", {"/parents/0": "v1"}, ("/parents/0", "spec.cid.pattern"))
case("head sequence a string", "head-full", {"/sequence": "1"}, ("/sequence", "spec.type"))
case("head updated_at boolean", "head-full", {"/updated_at": True}, ("/updated_at", "spec.type"))
case("head_id empty", "head-full", {"/head_id": ""}, ("/head_id", "spec.min_length"))
case(
    "head manifest_cid missing",
    "head-full",
    {"/manifest_cid": _DELETE},
    ("/manifest_cid", "spec.required"),
)

# --- receipt -------------------------------------------------------------------------------------
case("commitment unknown", "receipt-full", {"/commitment": "serve"}, ("/commitment", "spec.enum"))
case("items empty", "receipt-full", {"/items": []}, ("/items", "spec.min_items"))
case(
    "items item missing role",
    "receipt-full",
    {"/items/0/role": _DELETE},
    ("/items/0/role", "spec.required"),
)
case(
    "terms regions duplicate",
    "receipt-full",
    {"/terms/regions": ["lhr", "lhr"]},
    ("/terms/regions/1", "spec.unique"),
)
case(
    "terms region empty",
    "receipt-full",
    {"/terms/regions": ["lhr", ""]},
    ("/terms/regions/1", "spec.min_length"),
)
case(
    "terms extra member",
    "receipt-full",
    {"/terms/price": 1},
    ("/terms/price", "spec.unknown_member"),
)
case("terms not an object", "receipt-full", {"/terms": []}, ("/terms", "spec.type"))
case(
    "provider_record not a CID",
    "receipt-full",
    {"/provider_record": ""},
    ("/provider_record", "spec.cid.pattern"),
)
case(
    "retention ends before issued",
    "receipt-full",
    {"/retention_until": 1794999999},
    ("/retention_until", "profile.time.order"),
)
case(
    "several problems at once",
    "receipt-full",
    {"/commitment": "keep", "/items": [], "/receipt_id": _DELETE, "/x": 1},
    ("/receipt_id", "spec.required"),
    ("/commitment", "spec.enum"),
    ("/items", "spec.min_items"),
    ("/x", "spec.unknown_member"),
)

INVALID: list[Invalid] = _INVALID
