"""RFC 8785 (JCS) test data from cyberphone/json-canonicalization against
``hearth.adds.canonical.canonicalize`` and the strict I-JSON parser."""

from __future__ import annotations

import re
import struct

import pytest

from hearth.adds.canonical import canonicalize
from hearth.adds.ijson import MAX_SAFE_INTEGER, IJsonError, parse
from tests.support.external_suites import available, cases_or_missing, suite

NAME = "json-canonicalization"
ROOT = available(NAME)
INTEGER_LITERAL = re.compile(r"-?[0-9]+")


def _inputs() -> list[object] | None:
    if ROOT is None:
        return None
    return [pytest.param(path.stem, id=path.name) for path in sorted((ROOT / "input").iterdir())]


def _es6_lines() -> list[tuple[int, str, float, str]]:
    """(line number, hex bits, the double, expected JCS text) for every line of the file."""
    text = (suite(NAME) / "es6testfile10k.txt").read_text(encoding="ascii")
    lines = []
    for number, line in enumerate(text.splitlines(), start=1):
        bits, expected = line.split(",")
        value = struct.unpack(">d", bytes.fromhex(bits.zfill(16)))[0]
        lines.append((number, bits, value, expected))
    assert len(lines) == 10_000
    return lines


def _report(mismatches: list[str]) -> str:
    return f"{len(mismatches)} mismatches, first ones:\n" + "\n".join(mismatches[:20])


# Every input is strict I-JSON (no big integers, duplicates, surrogates or noncharacters), so
# each one is parsed with the project's parser; no fallback to json.loads is needed.
@pytest.mark.parametrize("stem", cases_or_missing(NAME, _inputs()))
def test_input_canonicalizes_to_output(stem: str | None) -> None:
    root = suite(NAME)
    expected = (root / "output" / f"{stem}.json").read_bytes()
    assert bytes.fromhex((root / "outhex" / f"{stem}.txt").read_text()) == expected
    parsed = parse((root / "input" / f"{stem}.json").read_bytes())
    assert canonicalize(parsed.value) == expected
    # The parser's ``simple`` flag picks the same bytes.
    assert canonicalize(parsed.value, simple=parsed.simple) == expected
    # Canonical bytes are a fixed point.
    assert canonicalize(parse(expected).value) == expected


def test_es6_number_serialization() -> None:
    mismatches = [
        f"line {number}: {bits} -> {got!r}, expected {expected!r}"
        for number, bits, value, expected in _es6_lines()
        if (got := canonicalize(value)) != expected.encode()
    ]
    assert not mismatches, _report(mismatches)


def _beyond_safe_integer(text: str) -> bool:
    return INTEGER_LITERAL.fullmatch(text) is not None and abs(int(text)) > MAX_SAFE_INTEGER


def test_es6_round_trip_through_parser() -> None:
    """``[expected]`` parses and canonicalizes back to itself, except where JCS writes a whole
    double from 2**53 up to 1e21 as integer digits: the project's policy refuses an integer
    literal beyond +-(2**53 - 1) even when a double holds it exactly."""
    mismatches = []
    refused = 0
    for number, bits, _, expected in _es6_lines():
        document = f"[{expected}]".encode()
        if _beyond_safe_integer(expected):
            refused += 1
            try:
                parse(document)
            except IJsonError as exc:
                if exc.code != "spec.ijson.integer_range":
                    mismatches.append(f"line {number}: {bits} {expected}: {exc.code}")
            else:
                mismatches.append(f"line {number}: {bits} {expected}: accepted")
            continue
        try:
            got = canonicalize(parse(document).value)
        except IJsonError as exc:
            mismatches.append(f"line {number}: {bits} {expected}: {exc.code}: {exc}")
            continue
        if got != document:
            mismatches.append(f"line {number}: {bits} -> {got!r}, expected {document!r}")
    assert not mismatches, _report(mismatches)
    assert refused == 84  # lines of the file whose JCS text is such an integer


def test_es6_canonical_form_of_accepted_float_parses() -> None:
    """A float literal the parser accepts must have canonical bytes the parser accepts too
    (documents are validated from their canonical bytes)."""
    mismatches = []
    for number, _, value, expected in _es6_lines():
        try:
            parsed = parse(f"[{value!r}]".encode())
        except IJsonError:
            continue
        canonical = canonicalize(parsed.value)
        assert canonical == f"[{expected}]".encode()
        try:
            parse(canonical)
        except IJsonError as exc:
            mismatches.append(f"line {number}: [{value!r}] -> {canonical!r}: {exc.code}")
    assert not mismatches, _report(mismatches)
