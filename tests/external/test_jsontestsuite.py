"""JSONTestSuite (nst/JSONTestSuite) against the strict I-JSON parser ``hearth.adds.ijson``.

Every file is read as raw bytes. Expected verdicts follow the suite's README (strict I-JSON,
RFC 7493) and the project's policy in docs/adds.md.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from hearth.adds.ijson import IJsonError, parse
from tests.support.external_suites import available, cases_or_missing, suite

NAME = "JSONTestSuite"
ROOT = available(NAME)

DUPLICATE = "spec.ijson.duplicate_member"
NONCHARACTER = "spec.ijson.noncharacter"
INTEGER_RANGE = "spec.ijson.integer_range"
NUMBER_RANGE = "spec.ijson.number_range"
UTF8 = "spec.ijson.utf8"
LONE_SURROGATE = "spec.ijson.lone_surrogate"
BOM = "spec.ijson.bom"
DEPTH = "profile.ijson.depth"

# The `y_*` files that RFC 8259 accepts but strict I-JSON refuses (README, point 2).
Y_REFUSED = {
    "y_object_duplicated_key.json": DUPLICATE,
    "y_object_duplicated_key_and_value.json": DUPLICATE,
    "y_string_escaped_noncharacter.json": NONCHARACTER,
    "y_string_last_surrogates_1_and_2.json": NONCHARACTER,
    "y_string_nonCharacterInUTF-8_U+10FFFF.json": NONCHARACTER,
    "y_string_nonCharacterInUTF-8_U+FFFF.json": NONCHARACTER,
    "y_string_unicode_U+10FFFE_nonchar.json": NONCHARACTER,
    "y_string_unicode_U+1FFFE_nonchar.json": NONCHARACTER,
    "y_string_unicode_U+FDD0_nonchar.json": NONCHARACTER,
    "y_string_unicode_U+FFFE_nonchar.json": NONCHARACTER,
}

# The expected code of every `i_*` file, by name pattern; the first match wins.
I_CODES: list[tuple[str, str]] = [
    # Integers beyond +-(2**53 - 1). Project policy: `i_number_too_big_pos_int.json` is
    # `[100000000000000000000]` (1e20 written as an integer); a double holds it exactly, but it
    # lies outside the I-JSON safe integer range, so it is refused.
    (r"i_number_(too_big_(pos|neg)_int|very_big_negative_int)\.json", INTEGER_RANGE),
    # The other numbers overflow to +-Infinity or underflow a non-zero literal to 0.
    (r"i_number_.*", NUMBER_RANGE),
    # Escaped lone, unpaired or reversed surrogates (\uD800...).
    (r"i_object_key_lone_2nd_surrogate\.json", LONE_SURROGATE),
    (
        r"i_string_(1st_surrogate_but_2nd_missing|1st_valid_surrogate_2nd_invalid"
        r"|incomplete_surrogate_and_escape_valid|incomplete_surrogate_pair"
        r"|incomplete_surrogates_escape_valid|invalid_lonely_surrogate|invalid_surrogate"
        r"|inverted_surrogates_U\+1D11E|lone_second_surrogate)\.json",
        LONE_SURROGATE,
    ),
    # Not UTF-8: invalid, overlong, truncated, beyond U+10FFFF, a UTF-8 encoded surrogate,
    # ISO-8859-1, and UTF-16 with or without its (non UTF-8) byte order mark.
    (r"i_string_.*", UTF8),
    (r"i_structure_UTF-8_BOM_empty_object\.json", BOM),
    # 500 levels of nesting, beyond the project's limit of 64.
    (r"i_structure_500_nested_arrays\.json", DEPTH),
]

# test_transform/: every file with its verdict, a code (refused) or the parsed value (accepted).
TRANSFORM: dict[str, str | list[Any] | dict[str, Any]] = {
    # Integers beyond +-(2**53 - 1).
    "number_-9223372036854775808.json": INTEGER_RANGE,
    "number_-9223372036854775809.json": INTEGER_RANGE,
    "number_9223372036854775807.json": INTEGER_RANGE,
    "number_9223372036854775808.json": INTEGER_RANGE,
    "number_10000000000000000999.json": INTEGER_RANGE,
    # A non-zero literal that underflows to 0.
    "number_1e-999.json": NUMBER_RANGE,
    # A fraction or exponent makes a float, even when the value is whole.
    "number_1.0.json": [1.0],
    "number_1e6.json": [1000000.0],
    # Needs more precision than a double: accepted as the nearest double.
    "number_1.000000000000000005.json": [1.0],
    "number_1000000000000000.json": [1000000000000000],
    # NFC and NFD spellings are different names, not duplicates.
    "object_key_nfc_nfd.json": {"\u00e9": "NFC", "e\u0301": "NFD"},
    "object_key_nfd_nfc.json": {"e\u0301": "NFD", "\u00e9": "NFC"},
    "object_same_key_different_values.json": DUPLICATE,
    "object_same_key_same_value.json": DUPLICATE,
    # {"a":0, "a":-0}: refused as a duplicate before any question about -0.
    "object_same_key_unclear_values.json": DUPLICATE,
    # Escaped lone surrogates; the raw ones (ED A0 80) are not even UTF-8.
    "string_1_escaped_invalid_codepoint.json": LONE_SURROGATE,
    "string_2_escaped_invalid_codepoints.json": LONE_SURROGATE,
    "string_3_escaped_invalid_codepoints.json": LONE_SURROGATE,
    "string_1_invalid_codepoint.json": UTF8,
    "string_2_invalid_codepoints.json": UTF8,
    "string_3_invalid_codepoints.json": UTF8,
    "string_with_escaped_NULL.json": ["A\u0000B"],
}


def _files(folder: str, prefix: str) -> list[object] | None:
    if ROOT is None:
        return None
    return [
        pytest.param(path.name, id=path.name)
        for path in sorted((ROOT / folder).iterdir())
        if path.name.startswith(prefix)
    ]


def _read(folder: str, name: str) -> bytes:
    return (suite(NAME) / folder / name).read_bytes()


def _code(data: bytes) -> str:
    with pytest.raises(IJsonError) as info:
        parse(data)
    return info.value.code


def _same(got: Any, expected: Any) -> None:
    # repr also tells 1 from 1.0 and keeps member order.
    assert got == expected
    assert repr(got) == repr(expected)


def _i_code(name: str) -> str | None:
    return next((code for pattern, code in I_CODES if re.fullmatch(pattern, name)), None)


@pytest.mark.parametrize("name", cases_or_missing(NAME, _files("test_parsing", "n_")))
def test_n_files_are_refused(name: str | None) -> None:
    data = _read("test_parsing", str(name))
    _code(data)


@pytest.mark.parametrize("name", cases_or_missing(NAME, _files("test_parsing", "y_")))
def test_y_files(name: str | None) -> None:
    data = _read("test_parsing", str(name))
    if name in Y_REFUSED:
        assert _code(data) == Y_REFUSED[name]
    else:
        _same(parse(data).value, json.loads(data))


@pytest.mark.parametrize("name", cases_or_missing(NAME, _files("test_parsing", "i_")))
def test_i_files_are_refused(name: str | None) -> None:
    data = _read("test_parsing", str(name))
    expected = _i_code(str(name))
    assert expected is not None, f"no expected code for {name}"
    assert _code(data) == expected


def test_expectation_tables_match_the_suite() -> None:
    parsing = suite(NAME) / "test_parsing"
    names = {path.name for path in parsing.iterdir()}
    assert set(Y_REFUSED) <= names
    i_names = {name for name in names if name.startswith("i_")}
    assert len(i_names) == 35
    # Every pattern is used, so none is stale.
    used = {next(p for p, _ in I_CODES if re.fullmatch(p, name)) for name in i_names}
    assert used == {pattern for pattern, _ in I_CODES}
    assert set(TRANSFORM) == {path.name for path in (suite(NAME) / "test_transform").iterdir()}


@pytest.mark.parametrize(
    "name",
    cases_or_missing(
        NAME, None if ROOT is None else [pytest.param(name, id=name) for name in TRANSFORM]
    ),
)
def test_transform(name: str | None) -> None:
    data = _read("test_transform", str(name))
    expected = TRANSFORM[str(name)]
    if isinstance(expected, str):
        assert _code(data) == expected
    else:
        _same(parse(data).value, expected)


def test_depth_limit_is_64() -> None:
    # The limit behind i_structure_500_nested_arrays.json: 64 levels pass, 65 do not.
    _same(parse(b"[" * 64 + b"]" * 64).value, json.loads(b"[" * 64 + b"]" * 64))
    assert _code(b"[" * 65 + b"]" * 65) == DEPTH
