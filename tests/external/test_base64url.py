"""Unpadded base64url (RFC 4648 section 5, ``hearth.adds.b64``) against public vectors."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hearth.adds.b64 import (
    b64url_decode,
    b64url_encode,
    b64url_problem,
    canonical_b64url_pattern,
)
from tests.support.external_suites import available, cases_or_missing, parse_multibase_csv, suite

MULTIBASE = "multibase"
WYCHEPROOF = "wycheproof"
ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

# RFC 4648 section 10 test vectors, base64 column; with the padding removed they are the
# base64url forms too (none of them uses characters 62 or 63).
RFC4648_SECTION10 = [
    (b"", ""),
    (b"f", "Zg"),
    (b"fo", "Zm8"),
    (b"foo", "Zm9v"),
    (b"foob", "Zm9vYg"),
    (b"fooba", "Zm9vYmE"),
    (b"foobar", "Zm9vYmFy"),
]


@pytest.mark.parametrize(
    ("data", "text"), RFC4648_SECTION10[1:], ids=[t for _, t in RFC4648_SECTION10[1:]]
)
def test_rfc4648_section10(data: bytes, text: str) -> None:
    assert b64url_encode(data) == text
    assert b64url_decode(text) == data
    assert b64url_problem(text) is None
    assert canonical_b64url_pattern(len(text)).fullmatch(text)


def test_rfc4648_section10_empty_string_is_refused() -> None:
    """RFC 4648 encodes "" as "", but an ADDS base64url value needs at least one character."""
    assert RFC4648_SECTION10[0] == (b"", "")
    assert b64url_encode(b"") == ""
    assert b64url_problem("") == "alphabet"
    with pytest.raises(ValueError, match=r"\(alphabet\)"):
        b64url_decode("")
    with pytest.raises(ValueError, match="no byte string encodes to 0"):
        canonical_b64url_pattern(0)


# --- multibase rows -------------------------------------------------------------------------


MULTIBASE_FILES = ["basic.csv", "leading_zero.csv", "two_leading_zeros.csv"]


@pytest.mark.parametrize("name", MULTIBASE_FILES)
def test_multibase_base64url_rows(name: str) -> None:
    data, rows = parse_multibase_csv(suite(MULTIBASE) / "tests" / name)
    assert data.endswith(b"yes mani !")
    text = rows["base64url"]
    assert text[0] == "u"
    assert b64url_decode(text[1:]) == data
    assert b64url_encode(data) == text[1:]
    # The padded variant ("U" prefix) is refused when it actually carries padding.
    padded = rows["base64urlpad"][1:]
    if "=" in padded:
        assert b64url_problem(padded) == "alphabet"
        with pytest.raises(ValueError, match=r"\(alphabet\)"):
            b64url_decode(padded)
    else:
        assert padded == text[1:]


# --- Wycheproof JWK x vs raw public key -----------------------------------------------------


def _wycheproof_keys() -> list[object] | None:
    folder = available(WYCHEPROOF)
    if folder is None:
        return None
    data = json.loads((folder / "testvectors_v1" / "ed25519_test.json").read_text("utf-8"))
    return [
        pytest.param({"pk": g["publicKey"]["pk"], "x": g["publicKeyJwk"]["x"]}, id=f"group{i}")
        for i, g in enumerate(data["testGroups"])
    ]


def test_wycheproof_group_count() -> None:
    keys = _wycheproof_keys() if suite(WYCHEPROOF) else None
    assert keys is not None
    assert len(keys) == 78


@pytest.mark.parametrize("key", cases_or_missing(WYCHEPROOF, _wycheproof_keys()))
def test_wycheproof_jwk_x(key: dict[str, Any] | None) -> None:
    suite(WYCHEPROOF)
    assert key is not None
    raw = bytes.fromhex(key["pk"])
    assert len(raw) == 32
    assert b64url_encode(raw) == key["x"]
    assert b64url_decode(key["x"]) == raw
    assert b64url_problem(key["x"]) is None
    assert canonical_b64url_pattern(43).fullmatch(key["x"])


# --- non-canonical tails, standard alphabet, padding ----------------------------------------


def _tail_cases() -> list[object]:
    cases = []
    for length in (2, 3, 6, 7, 43):
        unused = 4 if length % 4 == 2 else 2
        for index, char in enumerate(ALPHABET):
            canonical = index & ((1 << unused) - 1) == 0
            cases.append(pytest.param(length, char, canonical, id=f"len{length}-{char}"))
    return cases


@pytest.mark.parametrize(("length", "last", "canonical"), _tail_cases())
def test_last_character_unused_bits(length: int, last: str, canonical: bool) -> None:
    text = "Q" * (length - 1) + last
    matched = canonical_b64url_pattern(length).fullmatch(text) is not None
    assert matched is canonical
    if canonical:
        assert b64url_problem(text) is None
        assert b64url_encode(b64url_decode(text)) == text
    else:
        assert b64url_problem(text) == "non_canonical"
        with pytest.raises(ValueError, match=r"\(non_canonical\)"):
            b64url_decode(text)


def test_canonical_tail_counts() -> None:
    """16 of 64 last characters are canonical with 2 unused bits, 4 with 4 unused bits."""
    assert sum(bool(canonical_b64url_pattern(3).fullmatch("AA" + c)) for c in ALPHABET) == 16
    assert sum(bool(canonical_b64url_pattern(2).fullmatch("A" + c)) for c in ALPHABET) == 4


REFUSED_ALPHABET = {
    "plus": "ab+c",
    "slash": "ab/c",
    "plus-last": "Zm9+",
    "slash-first": "/m9v",
    "pad-2": "Zg==",
    "pad-1": "Zm8=",
    "pad-full-block": "Zm9v====",
    "space": "Zm9 v",
    "newline": "Zm9v\n",
    "non-ascii": "Zm9é",
}


@pytest.mark.parametrize("text", list(REFUSED_ALPHABET.values()), ids=list(REFUSED_ALPHABET))
def test_standard_alphabet_and_padding_refused(text: str) -> None:
    assert b64url_problem(text) == "alphabet"
    with pytest.raises(ValueError, match=r"\(alphabet\)"):
        b64url_decode(text)
    if len(text) % 4 != 1:
        assert canonical_b64url_pattern(len(text)).fullmatch(text) is None


@pytest.mark.parametrize("length", [1, 5, 45])
def test_impossible_lengths_refused(length: int) -> None:
    text = "A" * length
    assert b64url_problem(text) == "length"
    with pytest.raises(ValueError, match=r"\(length\)"):
        b64url_decode(text)
    with pytest.raises(ValueError, match=f"no byte string encodes to {length} "):
        canonical_b64url_pattern(length)
