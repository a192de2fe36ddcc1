"""uritemplate-test (RFC 6570) and the project's ``{cid}`` rule against
``hearth.adds.uritemplates.template_problem``."""

from __future__ import annotations

import json

import pytest

from hearth.adds.uritemplates import template_problem
from tests.support.external_suites import available, cases_or_missing, suite

NAME = "uritemplate-test"
ROOT = available(NAME)

TEMPLATE = "spec.endpoint.template"
MISSING_CID = "spec.endpoint.missing_cid"
CID_PREFIX = "profile.endpoint.cid_prefix"

# `false` in negative-tests.json, yet grammatical: they fail only at expansion, because `keys`
# is a map and a prefix modifier does not apply to a composite value (RFC 6570 section 2.4.1).
GRAMMATICAL_FALSE = {"{keys:1}", "{+keys:1}"}


def _cases() -> list[object] | None:
    """One case per distinct template of each file, with whether the suite expects it invalid."""
    if ROOT is None:
        return None
    cases = []
    for path in sorted(ROOT.glob("*.json")):
        invalid: dict[str, bool] = {}
        for group in json.loads(path.read_text(encoding="utf-8")).values():
            for template, expected in group["testcases"]:
                invalid[template] = expected is False
        cases += [
            pytest.param((path.name, template, is_invalid), id=f"{path.stem}:{template}")
            for template, is_invalid in invalid.items()
        ]
    return cases


@pytest.mark.parametrize("case", cases_or_missing(NAME, _cases()))
def test_suite_template(case: tuple[str, str, bool] | None) -> None:
    suite(NAME)
    assert case is not None
    _, template, invalid = case
    problem = template_problem(template)
    if invalid and template not in GRAMMATICAL_FALSE:
        assert problem is not None
        assert problem[0] == TEMPLATE
    else:
        # No template of the suite uses `cid`, so a valid one lacks it.
        assert problem is not None
        assert problem[0] == MISSING_CID


def test_suite_has_the_expected_exceptions() -> None:
    root = suite(NAME)
    negative = json.loads((root / "negative-tests.json").read_text(encoding="utf-8"))
    false_templates = {
        template
        for group in negative.values()
        for template, expected in group["testcases"]
        if expected is False
    }
    assert false_templates >= GRAMMATICAL_FALSE


CID_CASES = [
    ("{cid}", None),
    ("https://p.example/b/{cid}", None),
    ("{+cid}", None),
    ("{#cid}", None),
    ("{?cid}", None),
    ("{/cid}", None),
    ("{cid*}", None),
    ("{x,cid}", None),
    ("{cid:3}{cid}", None),
    # The same uses in the other order: one plain {cid} is enough.
    ("{cid}{cid:3}", None),
    ("{cid:3}", CID_PREFIX),
    ("{cidx}", MISSING_CID),
    ("{CID}", MISSING_CID),
    ("cid", MISSING_CID),
    ("https://x/", MISSING_CID),
    ("{cid=x}", TEMPLATE),
    ("{cid[]}", TEMPLATE),
    ("a b{cid}", TEMPLATE),
    ("{cid", TEMPLATE),
    ("{}", TEMPLATE),
    ("{!cid}", TEMPLATE),
]


@pytest.mark.parametrize(
    ("template", "expected"),
    [pytest.param(t, e, id=f"{t}->{e}") for t, e in CID_CASES],
)
def test_cid_rule(template: str, expected: str | None) -> None:
    problem = template_problem(template)
    assert (None if problem is None else problem[0]) == expected, problem
