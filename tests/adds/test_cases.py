"""The named data sets: every invalid case reports exactly its problems; every valid one none."""

from __future__ import annotations

import json

import pytest

from hearth.adds import validate
from tests.support.adds_cases import INVALID, VALID, Invalid
from tests.support.doc_codes import documented_error_codes


@pytest.mark.parametrize("name", sorted(VALID))
def test_valid_documents_have_no_problems(name: str) -> None:
    result = validate(VALID[name])
    assert result.valid, result.errors
    assert result.kind == name.split("-", maxsplit=1)[0]
    assert result.cid is not None


@pytest.mark.parametrize("case", INVALID, ids=[c.name for c in INVALID])
def test_invalid_document_reports_exactly_its_problems(case: Invalid) -> None:
    result = validate(case.data)
    assert not result.valid
    found = sorted((p.pointer, p.code) for p in result.errors)
    assert found == sorted(case.expected)
    for problem in result.errors:
        assert problem.message
        assert problem.source in {"spec", "profile"}


def test_case_names_are_unique() -> None:
    names = [c.name for c in INVALID]
    assert len(names) == len(set(names))


def test_every_error_code_is_exercised_by_a_case() -> None:
    """Each code listed in docs/adds.md as an error appears in at least one named case, except
    those the external suites and unit tests cover (listed here with where)."""
    covered_elsewhere = {
        "spec.cid.truncated": "tests/adds/test_codecs.py",
        "spec.cid.trailing": "tests/adds/test_codecs.py",
        "profile.key.not_on_curve": "tests/adds/test_codecs.py",
        "spec.max_items": "tests/adds/test_codecs.py (over a million chunks)",
        "profile.document.non_canonical": "tests/adds/test_codecs.py (require_canonical)",
    }
    exercised = {code for case in INVALID for _, code in case.expected}
    missing = documented_error_codes() - exercised - set(covered_elsewhere)
    assert not missing


def test_problems_are_reported_in_document_order_and_serialise() -> None:
    case = next(c for c in INVALID if c.name == "several problems at once")
    result = validate(case.data)
    rendered = json.dumps([p.as_dict() for p in result.errors])
    assert json.loads(rendered)[0] == {
        "pointer": "/receipt_id",
        "code": "spec.required",
        "message": "missing required member 'receipt_id'",
    }
