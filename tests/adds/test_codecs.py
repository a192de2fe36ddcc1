"""Unit behaviour of the pieces under the validator: codecs, key policy, builders, signing."""

from __future__ import annotations

import copy
import hashlib
import json

import pytest

from hearth.adds import (
    AddsError,
    KeyWrap,
    Right,
    b64url_decode,
    b64url_encode,
    build_grant,
    canonicalize,
    cid_for_bytes,
    decode_cid,
    sign_document,
    validate,
)
from hearth.adds.b64 import b64url_problem
from hearth.adds.cid import cid_problem, decode_binary_cid
from hearth.adds.ed25519 import _SMALL_ORDER, encoding_problem, point_problem, private_key_from_raw
from hearth.adds.ijson import IJsonError, parse
from hearth.adds.keys import (
    generate_key_pair,
    load_ed25519_private_key,
    load_x25519_private_key,
    private_key_pem,
)
from hearth.adds.rules import array, string
from tests.vectors.generate import NOW, PUBLISHER, READER_BOX, documents

DIGEST = hashlib.sha256(b"block").digest()


@pytest.mark.parametrize(
    ("binary", "reason"),
    [
        (bytes([1, 0x55, 0x12, 0x20]) + DIGEST, ""),
        (bytes([1, 0x55, 0x12, 0x20]) + DIGEST[:31], "truncated"),
        (bytes([1, 0x55, 0x12, 0x20]) + DIGEST + b"\x00", "trailing"),
        (bytes([1, 0x55, 0x12]), "truncated"),
        (b"", "truncated"),
        (bytes([0x12, 0x20]) + DIGEST, "version"),
        (bytes([1, 0xD5, 0x00, 0x12, 0x20]) + DIGEST, "varint"),
        (bytes([1, 0x70, 0x12, 0x20]) + DIGEST, "codec"),
        (bytes([1, 0x55, 0x11, 0x14]) + DIGEST[:20], "hash"),
        (bytes([1, 0x55, 0x12, 0x10]) + DIGEST[:16], "digest_length"),
        (bytes([1, 0x55, 0x12]) + b"\xff" * 10, "truncated"),
    ],
)
def test_binary_cid_reasons(binary: bytes, reason: str) -> None:
    assert decode_binary_cid(binary)[0] == reason


def test_cid_round_trip_and_refusals() -> None:
    cid = cid_for_bytes(b"block")
    assert decode_cid(cid) == DIGEST
    assert cid_problem(cid) is None
    assert cid_problem(cid.upper()) is not None
    assert cid_problem("B" + cid[1:]) is not None
    assert cid_problem(cid[:-1]) == ("pattern", "a CID is 'b' and 58 lower-case base32 characters")
    with pytest.raises(ValueError, match="CID"):
        decode_cid("bafy")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("Zg", None),
        ("Zh", "non_canonical"),
        ("Zm8", None),
        ("Zm9", "non_canonical"),
        ("Z", "length"),
        ("Zg==", "alphabet"),
        ("", "alphabet"),
        ("Zm+v", "alphabet"),
    ],
)
def test_base64url_strictness(text: str, reason: str | None) -> None:
    assert b64url_problem(text) == reason
    if reason is None:
        assert b64url_encode(b64url_decode(text)) == text
    else:
        with pytest.raises(ValueError, match="base64url"):
            b64url_decode(text)


def _off_curve_key() -> bytes:
    for y in range(2, 1000):
        encoded = y.to_bytes(32, "little")
        if point_problem(encoded) == "not_on_curve":
            return encoded
    raise AssertionError("no off-curve encoding among small y")


def test_key_policy_reasons() -> None:
    assert point_problem(bytes([1]) + bytes(31)) == "small_order"  # the identity
    assert point_problem((2**255 - 19).to_bytes(32, "little")) == "non_canonical"  # y = p
    assert point_problem(b"\x00" * 31) == "length"
    assert point_problem(PUBLISHER.public_key().public_bytes_raw()) is None
    assert point_problem(_off_curve_key()) == "not_on_curve"


def test_cheap_encoding_check_agrees_with_point_arithmetic() -> None:
    """encoding_problem refuses exactly what the full decode calls non-canonical or small-order,
    for the blacklist and for ordinary keys."""
    for encoded in _SMALL_ORDER:
        assert point_problem.__wrapped__(encoded) == "small_order"
        assert encoding_problem(encoded) == "small_order"
        flipped = bytes([*encoded[:31], encoded[31] ^ 0x80])
        assert encoding_problem(flipped) is not None
    for seed in range(20):
        key = hashlib.sha256(bytes([seed])).digest()
        public = private_key_from_raw(key).public_key().public_bytes_raw()
        assert encoding_problem(public) is None
        assert point_problem(public) is None


def test_off_curve_signing_key_is_reported() -> None:
    document = copy.deepcopy(documents()["head-minimal"].document)
    key = b64url_encode(_off_curve_key())
    document["issuer"]["ed25519_public_key"] = key
    document["signature"]["public_key"] = key
    codes = {(p.pointer, p.code) for p in validate(canonicalize(document)).errors}
    assert codes == {("/signature/public_key", "profile.key.not_on_curve")}


def test_max_items_rule() -> None:
    problems: list = []
    array(string(), max_items=2)(["a", "b", "c"], "/chunks", problems)
    assert [(p.pointer, p.code) for p in problems] == [("/chunks", "spec.max_items")]


def test_ijson_pins() -> None:
    assert parse(b"[1.0]").value == [1.0]
    assert isinstance(parse(b"[1.0]").value[0], float)
    assert parse(b'{"a": -9007199254740991}').simple
    assert not parse(b'{"\xc3\xa9": 1}').simple
    with pytest.raises(IJsonError) as caught:
        parse(b'{"a": 1, "a": 1}')
    assert caught.value.code == "spec.ijson.duplicate_member"
    with pytest.raises(IJsonError) as caught:
        parse(b"[" + b"1" * 5000 + b"]")
    assert caught.value.code == "spec.ijson.integer_range"


def test_validate_never_raises_on_non_bytes() -> None:
    result = validate("not bytes")  # type: ignore[arg-type]
    assert [p.code for p in result.errors] == ["spec.type"]


def _grant(**overrides: object) -> object:
    arguments: dict[str, object] = {
        "key": PUBLISHER,
        "issuer_id": "did:example:alice",
        "grant_id": "g",
        "manifest_cid": cid_for_bytes(b"m"),
        "audience": "did:example:bob",
        "audience_x25519_public_key": READER_BOX.public_key().public_bytes_raw(),
        "rights": [Right.READ],
        "issued_at": NOW,
        "expires_at": NOW + 10,
        "key_wrap": KeyWrap(bytes(32), bytes(12), bytes(48)),
    }
    arguments.update(overrides)
    return build_grant(**arguments)  # type: ignore[arg-type]


def test_builder_refuses_what_would_be_invalid() -> None:
    with pytest.raises(AddsError) as caught:
        _grant(rights=[Right.DERIVE], expires_at=NOW - 1)
    codes = {(p.pointer, p.code) for p in caught.value.problems}
    assert codes == {("/rights", "spec.rights.read"), ("/expires_at", "profile.time.order")}
    with pytest.raises(AddsError):
        _grant(key_wrap=KeyWrap(bytes(32), bytes(11), bytes(48)))
    with pytest.raises(AddsError):
        _grant(grant_id="")
    with pytest.raises(AddsError):
        _grant(task_id=float("nan"))


def test_sign_document_refuses_a_key_that_is_not_the_signers() -> None:
    document = dict(documents()["grant-minimal"].document)
    with pytest.raises(AddsError) as caught:
        sign_document(document, generate_key_pair().signing)
    assert caught.value.problems[0].code == "profile.signature.signer_mismatch"
    resigned = sign_document(document, PUBLISHER)
    assert resigned == document  # Ed25519 is deterministic


def test_time_warnings_do_not_invalidate() -> None:
    data = documents()["grant-full"].canonical  # usable from NOW + 60 until NOW + 86400
    early = validate(data, now=NOW)
    assert early.valid
    assert [(w.pointer, w.code) for w in early.warnings] == [
        ("/not_before", "profile.time.not_yet_valid")
    ]
    assert validate(data, now=NOW + 60).warnings == ()
    late = validate(data, now=NOW + 86_400)
    assert late.valid
    assert [w.code for w in late.warnings] == ["profile.time.expired"]
    receipt = validate(documents()["receipt-minimal"].canonical, now=NOW + 31 * 86_400)
    assert [w.pointer for w in receipt.warnings] == ["/retention_until"]


def test_pem_round_trip_and_refusals() -> None:
    pair = generate_key_pair()
    signing = load_ed25519_private_key(private_key_pem(pair.signing))
    assert signing.public_key().public_bytes_raw() == pair.signing_public
    box = load_x25519_private_key(private_key_pem(pair.box))
    assert box.public_key().public_bytes_raw() == pair.box_public
    with pytest.raises(AddsError) as caught:
        load_ed25519_private_key(private_key_pem(pair.box))
    assert caught.value.problems[0].code == "key.wrong_type"
    with pytest.raises(AddsError) as caught:
        load_ed25519_private_key(b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")
    assert caught.value.problems[0].code == "key.unreadable"


def test_require_canonical_refuses_any_other_spelling() -> None:
    canonical = documents()["head-full"].canonical
    pretty = json.dumps(json.loads(canonical), indent=2).encode()
    assert validate(pretty).valid
    assert validate(pretty).cid == validate(canonical).cid
    assert validate(canonical, require_canonical=True).valid
    refused = validate(pretty, require_canonical=True)
    assert [(p.pointer, p.code) for p in refused.errors] == [("", "profile.document.non_canonical")]
    broken = canonical.replace(b'"head_id":"notes"', b'"head_id":""')
    codes = [p.code for p in validate(broken, require_canonical=True).errors]
    assert codes == ["spec.min_length", "profile.signature.invalid"]
