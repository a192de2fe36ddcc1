"""The validator's fast paths give exactly the general path's verdicts.

Three shortcuts sit in front of the general (hooked, reporting) code, each allowed to say "yes"
only when the general code would find nothing and to hand everything else over:
- ``validate._validate_canonical``: small canonical documents matched by the kind's regex;
- ``ijson._parse_plain``: the hook-free parse, with its member count and ``canonical`` flag;
- ``rules.Rule.ok`` / ``all_ok`` and ``kinds._chunk_arithmetic_holds``: the predicates that
  spare the reporting walks.
Each valid document and many mutations of it (whitespace, repeated names, escapes, number forms,
member order, wrong types and values) go through the validator as it is and through the general
path alone, and must come out the same, problem for problem.
"""

from __future__ import annotations

import copy
import importlib
import json
from collections.abc import Iterator
from typing import Any

import pytest

from hearth.adds import ijson, kinds
from hearth.adds.canonical import canonicalize
from hearth.adds.cid import cid_for_bytes
from hearth.adds.kinds import KINDS, KindRules
from hearth.adds.problems import Problem
from hearth.adds.validate import ValidationResult, validate
from tests.support.adds_cases import VALID

# The module, not the function that hearth.adds exports under the same name.
validate_module = importlib.import_module("hearth.adds.validate")


def _general_check_structure(self: KindRules, document: dict[str, Any], problems: Any) -> None:
    self.check(document, "", problems)


def _general(data: bytes, *, now: int | None = None) -> ValidationResult:
    """validate() with every fast path turned off."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(validate_module, "_validate_canonical", lambda data, now: None)
        patch.setattr(ijson, "_parse_plain", lambda *args: None)
        patch.setattr(kinds, "_chunk_arithmetic_holds", lambda *args: False)
        patch.setattr(KindRules, "check_structure", _general_check_structure)
        return validate(data, now=now)


def _summary(result: ValidationResult) -> tuple[Any, ...]:
    def problems(found: tuple[Problem, ...]) -> list[tuple[str, str, str]]:
        return [(p.pointer, p.code, p.message) for p in found]

    return (
        result.kind,
        result.document,
        repr(result.document),  # 1 and 1.0, True and 1 compare equal; their reprs do not
        problems(result.errors),
        problems(result.warnings),
        result.simple,
    )


def _insert_after(data: bytes, marker: bytes, text: bytes) -> bytes | None:
    at = data.find(marker)
    return None if at < 0 else data[: at + len(marker)] + text + data[at + len(marker) :]


def _text_mutations(data: bytes) -> Iterator[bytes]:
    """Edits of the bytes that the fast paths must notice or leave alone."""
    yield data
    yield b" " + data
    yield data + b"\n"
    yield data.replace(b",", b", ", 1)
    yield data.replace(b":", b" : ", 1)
    yield data[:-1]
    yield data.replace(b'"kind"', b'"\\u006bind"', 1)
    yield data.replace(b'"', b'"\\u0041', 1)
    first = data.find(b'":"')
    yield data[: first + 3] + b"\\/" + data[first + 3 :]
    for member in (
        b'"kind":"grant",',
        b'"adds_version":"0.1",',
        b'"zz":-0,',
        b'"zz":0,',
        b'"zz":1.0,',
        b'"zz":1e400,',
        b'"zz":12345678901234567,',
        b'"zz":9007199254740991,',
        b'"zz":"\xc3\xa9",',
        b'"\xc3\xa9":1,',
        b'"zz":"a\\"b",',
        b'"zz":[[[[1]]]],',
        b'"zz":NaN,',
    ):
        found = _insert_after(data, b"{", member)
        if found is not None:
            yield found
    for marker, member in (
        (b'"signature":{', b'"algorithm":"Ed25519",'),
        (b'"extensions":{', b'"example:x":1,"example:x":2,'),
        # Repeated and in order: only the member count tells.
        (b'"extensions":{', b'"a:x":1,"a:x":2,'),
        (b'"extensions":{', b'"a:x":"v","a:x":"v",'),
        (b'"extensions":{', b'"example:z":1,"example:a":2,'),
        (b'"extensions":{', b'"example:n":{"a":[1,2]},'),
        (b'"extensions":{', b'"example:f":1.5,'),
        (b'"extensions":{', b'"example:m":-0,'),
        (b'"extensions":{', b'"nope":true,'),
        (b'"rights":[', b'"read",'),
        (b'"rights":[', b'"derive",'),
        (b'"chunks":[', b'{"index":0},'),
    ):
        found = _insert_after(data, marker, member)
        if found is not None:
            yield found
    document = json.loads(data)
    # The same members in another order, compact: valid JSON, not canonical.
    yield json.dumps(dict(reversed(document.items())), separators=(",", ":")).encode()
    yield json.dumps(document, separators=(",", ":"), ensure_ascii=True, sort_keys=True).encode()
    yield json.dumps(document, indent=1, sort_keys=True).encode()


_BAD_VALUES: tuple[Any, ...] = ("", "x", -1, 0, 2**53, 1.5, True, None, [], {}, ["read"], {"a": 1})


def _leaves(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(value, dict):
        for name, member in value.items():
            yield from _leaves(member, (*path, name))
    elif isinstance(value, list):
        for index, member in enumerate(value[:3]):
            yield from _leaves(member, (*path, index))
    if path:
        yield path


def _set(document: Any, path: tuple[Any, ...], value: Any) -> Any:
    changed = copy.deepcopy(document)
    target = changed
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    return changed


def _delete(document: Any, path: tuple[Any, ...]) -> Any:
    changed = copy.deepcopy(document)
    target = changed
    for step in path[:-1]:
        target = target[step]
    del target[path[-1]]
    return changed


def _value_mutations(data: bytes) -> Iterator[Any]:
    """Parsed documents with one member wrong, missing or extra."""
    document = json.loads(data)
    for path in _leaves(document):
        for bad in _BAD_VALUES:
            yield _set(document, path, bad)
        yield _delete(document, path)
        if isinstance(path[-1], str):
            parent = _delete(document, path)
            yield _set(parent, (*path[:-1], "unknown_member"), 1)
    if isinstance(document.get("chunks"), list):
        # Several chunks, so the column-wise checks run; then one of them spoiled.
        chunks = [dict(document["chunks"][0], index=n) for n in range(3)]
        many = _set(document, ("chunks",), chunks)
        yield many
        for name in chunks[0]:
            for bad in _BAD_VALUES:
                yield _set(many, ("chunks", 1, name), bad)
            yield _delete(many, ("chunks", 2, name))


@pytest.mark.parametrize("name", sorted(VALID))
def test_text_mutations_get_the_general_paths_verdict(name: str) -> None:
    for data in _text_mutations(VALID[name]):
        for now in (None, 1_700_000_000, 2**40):
            assert _summary(validate(data, now=now)) == _summary(_general(data, now=now)), data
        strict = validate(data, require_canonical=True)
        expected = _summary(_general_with_canonical(data))
        assert _summary(strict) == expected, data


def _general_with_canonical(data: bytes) -> ValidationResult:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(validate_module, "_validate_canonical", lambda data, now: None)
        patch.setattr(ijson, "_parse_plain", lambda *args: None)
        patch.setattr(kinds, "_chunk_arithmetic_holds", lambda *args: False)
        patch.setattr(KindRules, "check_structure", _general_check_structure)
        return validate(data, require_canonical=True)


@pytest.mark.parametrize("name", sorted(VALID))
def test_value_mutations_get_the_general_paths_verdict(name: str) -> None:
    for document in _value_mutations(VALID[name]):
        # Sorted and compact, as canonical as JSON allows (2**53 has no RFC 8785 form).
        data = json.dumps(document, separators=(",", ":"), sort_keys=True).encode()
        assert _summary(validate(data)) == _summary(_general(data)), data


@pytest.mark.parametrize("name", sorted(VALID))
def test_structure_predicates_agree_with_the_checks(name: str) -> None:
    for document in _value_mutations(VALID[name]):
        rules = KINDS.get(str(document.get("kind")))
        if rules is None:
            continue
        problems: list[Problem] = []
        rules.check(document, "", problems)
        clean = not problems
        assert rules.check.ok(document) is clean
        assert rules.check.all_ok([document]) is clean
        assert rules.check.all_ok([document, document]) is clean
        chunks = document.get("chunks")
        if isinstance(chunks, list) and chunks:
            item_problems: list[Problem] = []
            for index, chunk in enumerate(chunks):
                kinds.chunk(chunk, f"/chunks/{index}", item_problems)
            assert kinds.chunk.all_ok(chunks) is (not item_problems)


@pytest.mark.parametrize("name", sorted(VALID))
def test_parse_says_canonical_only_of_canonical_bytes(name: str) -> None:
    seen_canonical = False
    for data in _text_mutations(VALID[name]):
        try:
            parsed = ijson.parse(data)
        except ijson.IJsonError:
            continue
        if parsed.canonical:
            seen_canonical = True
            assert canonicalize(parsed.value, simple=parsed.simple) == data
    # The unmodified document is found canonical when it is simple (its floats or non-ASCII
    # names leave the question to the encoder).
    assert seen_canonical or not ijson.parse(VALID[name]).simple


def test_the_fast_path_takes_a_canonical_grant() -> None:
    grant = next(data for name, data in VALID.items() if name.startswith("grant"))
    result = validate_module._validate_canonical(grant, None)
    assert result is not None
    assert result.valid
    assert ijson.parse(grant).canonical


def test_column_checks_match_one_value_checks() -> None:
    cids = [cid_for_bytes(bytes([n])) for n in range(20)]
    column = kinds.chunk.all_ok
    good = {"index": 0, "nonce": "A" * 16, "plaintext_size": 1, "ciphertext_size": 17}
    rows = [dict(good, cid=cid) for cid in cids]
    assert column(rows)
    for bad_cid in (cids[0][:-1] + "b", cids[0].upper(), cids[0] + "a", "b" + "a" * 58, "é" * 59):
        spoiled = [*rows[:5], dict(good, cid=bad_cid), *rows[5:]]
        assert not column(spoiled)
    for bad_nonce in ("A" * 17, "A" * 15, "A" * 15 + "=", "A" * 15 + "\n", "A" * 15 + "é"):
        spoiled = [*rows[:5], dict(rows[5], nonce=bad_nonce), *rows[5:]]
        assert not column(spoiled)


def test_fixed_length_columns_accept_exactly_what_the_regexes_accept() -> None:
    """Every one-character change of a good CID or base64url value: the column check (joined
    bytes, alphabet, positions) and the one-value regex agree."""
    alphabet = 'abcdefghijklmnopqrstuvwxyz234567ABCXYZ019-_=+/é\n" '
    for rule, good in (
        (kinds.cid(), cid_for_bytes(b"block")),
        (kinds.nonce12, "AAECAwQFBgcICQoL"),
        (kinds.bytes32, "ywf6HdIpN4X_w7yhkP5bsweimDc_ab8z4t7WppjhNCw"),
        (kinds.signature64, "A" * 85 + "g"),
    ):
        assert rule.all_ok([good, good])
        for position in range(len(good)):
            for char in alphabet:
                changed = good[:position] + char + good[position + 1 :]
                assert rule.all_ok([good, changed]) is rule.ok(changed), changed
                problems: list[Problem] = []
                rule(changed, "", problems)
                assert rule.ok(changed) is (not problems), changed
