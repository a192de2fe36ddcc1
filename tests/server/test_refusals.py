"""The refusal catalogue (server/refusal_catalogue.py) is the one list of refusal codes: the table
of docs/service.md ("Errors") is drawn from it, and every code the source can answer with is in
it, with the status the source answers it with."""

from __future__ import annotations

import ast
import functools
import re
from collections import Counter
from pathlib import Path

import pytest

from hearth.server.refusal_catalogue import CATALOGUE, markdown_table, statuses

ROOT = Path(__file__).resolve().parents[2]
SERVER = ROOT / "src" / "hearth" / "server"
DOCS = ROOT / "docs"
# WebSocket frames after the upgrade carry codes of their own (docs/bridge.md, "The handshake").
NOT_HTTP = {SERVER / "bridge" / "connection.py", SERVER / "refusal_catalogue.py"}
# Refusals whose code is a parameter: (file, parameter), and the codes the callers pass are found
# as keyword arguments (`invalid=`, `stale=`) or listed here.
PARAMETERS = {
    ("freshness.py", "invalid"),
    ("freshness.py", "stale"),
    ("store.py", "error"),
}
TEMPLATES = {"invalid_{field}": {"invalid_nonce", "invalid_ciphertext"}}
CODE = re.compile(r"[a-z][a-z0-9_]*")


@functools.cache
def _sources() -> dict[Path, ast.Module]:
    return {
        path: ast.parse(path.read_text(encoding="utf-8"))
        for path in sorted(SERVER.rglob("*.py"))
        if path not in NOT_HTTP
    }


def _raised() -> tuple[dict[str, set[int | None]], set[tuple[str, str]], set[str]]:
    """(code -> statuses the source answers it with, None where the status is not a literal
    beside it), the parameters used as codes, and the templated codes."""
    found: dict[str, set[int | None]] = {}
    parameters: set[tuple[str, str]] = set()
    templates: set[str] = set()
    for path, tree in _sources().items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                args = node.args
                if (
                    len(args) >= 2
                    and isinstance(args[0], ast.Constant)
                    and isinstance(args[0].value, int)
                    and 400 <= args[0].value <= 599
                ):
                    code = args[1]
                    if isinstance(code, ast.Constant) and isinstance(code.value, str):
                        found.setdefault(code.value, set()).add(args[0].value)
                    elif isinstance(code, ast.Name):
                        parameters.add((path.name, code.id))
                    elif isinstance(code, ast.JoinedStr):
                        templates.add(_template(code))
                for keyword in node.keywords:
                    if keyword.arg in {"invalid", "stale"} and isinstance(
                        keyword.value, ast.Constant
                    ):
                        found.setdefault(keyword.value.value, set()).add(422)
            elif isinstance(node, ast.Dict):
                # The handlers' own bodies: {"error": "<code>", ...}.
                for key, value in zip(node.keys, node.values, strict=True):
                    if (
                        isinstance(key, ast.Constant)
                        and key.value == "error"
                        and isinstance(value, ast.Constant)
                    ):
                        found.setdefault(value.value, set()).add(None)
    return found, parameters, templates


def _template(node: ast.JoinedStr) -> str:
    return "".join(
        str(part.value) if isinstance(part, ast.Constant) else "{" + ast.unparse(part.value) + "}"
        for part in node.values
        if isinstance(part, ast.Constant | ast.FormattedValue)
    )


def _literals() -> set[str]:
    return {
        node.value
        for tree in _sources().values()
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and CODE.fullmatch(node.value)
    }


def test_the_docs_table_is_the_catalogue() -> None:
    page = (DOCS / "service.md").read_text(encoding="utf-8")
    assert markdown_table() in page, (
        "docs/service.md's table of refusals is not the catalogue's: replace it with the output "
        "of `python -m hearth.server.refusal_catalogue`"
    )


def test_every_refusal_of_the_source_is_catalogued_with_its_status() -> None:
    found, _, templates = _raised()
    catalogued = statuses()
    for template in templates:
        for code in TEMPLATES[template]:
            found.setdefault(code, set()).add(422)
    missing = sorted(code for code in found if code not in catalogued)
    assert not missing, f"refusal codes missing from server/refusal_catalogue.py: {missing}"
    wrong = {
        code: sorted(s for s in each if s is not None)
        for code, each in found.items()
        if {s for s in each if s is not None} - catalogued[code]
    }
    assert not wrong, f"answered with a status the catalogue does not give: {wrong}"


def test_codes_chosen_elsewhere_are_known() -> None:
    """A refusal whose code is a parameter or a template is checked through its callers: a new
    one is added to PARAMETERS or TEMPLATES, with the codes it can take in the catalogue."""
    _, parameters, templates = _raised()
    assert parameters == PARAMETERS
    assert templates == set(TEMPLATES)


def test_every_catalogued_code_is_in_the_source() -> None:
    literals = _literals() | {code for codes in TEMPLATES.values() for code in codes}
    dead = sorted(code for code in statuses() if code not in literals)
    assert not dead, f"catalogued codes the service never sends: {dead}"


def test_each_code_is_defined_once_per_status() -> None:
    pairs = Counter((row.status, code) for row in CATALOGUE for code in row.codes)
    assert [pair for pair, count in pairs.items() if count > 1] == []


@pytest.mark.parametrize("docs", sorted({row.docs for row in CATALOGUE}))
def test_docs_links_name_a_section_that_exists(docs: str) -> None:
    page, _, section = docs.partition("#")
    text = (DOCS / page).read_text(encoding="utf-8")
    if section:
        anchors = {_anchor(line) for line in text.splitlines() if line.startswith("#")}
        assert section in anchors, f"{page} has no section #{section}"


def _anchor(heading: str) -> str:
    """GitHub's anchor of a Markdown heading."""
    title = heading.lstrip("#").strip().lower()
    return re.sub(r"[^a-z0-9 _-]", "", title).replace(" ", "-")
