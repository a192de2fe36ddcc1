"""The tests' own house rules, read from the source with ``ast`` (nothing is imported or run).

1. A test module (``test_*.py``) is imported by nobody: no module under tests/ imports one, nor a
   ``conftest.py`` (pytest loads those itself). What tests share lives in ``tests/support/``, one
   module per purpose, or in a ``conftest.py`` as a fixture.
2. A helper that moved to tests/support leaves no copies behind: a top-level function or class
   name that tests/support defines may be defined again by at most one test module (a module
   may keep a local helper of its own under a name support also uses, such as a different
   ``new_project``; two copies of one name beside the shared one is a helper that was copied
   instead of imported).
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parent
SUPPORT = TESTS / "support"


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(TESTS.parent).with_suffix("").parts)


def imported_modules(source: str, module: str) -> set[str]:
    """Every module that ``source`` (the text of ``module``) imports, relative imports resolved;
    for a from-import also each ``package.name``, since the name may be a module itself."""
    package = module.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            imported = ".".join([*base, *([node.module] if node.module else [])])
            found.add(imported)
            found.update(f"{imported}.{alias.name}" for alias in node.names)
    return found


def is_test_or_conftest(module: str) -> bool:
    last = module.rsplit(".", 1)[-1]
    return module.startswith("tests.") and (last.startswith("test_") or last == "conftest")


def top_level_helpers(source: str) -> set[str]:
    """The functions and classes ``source`` defines at its top level, tests themselves aside."""
    tree = ast.parse(source)
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    return {
        node.name
        for node in tree.body
        if isinstance(node, kinds) and not node.name.startswith(("test_", "Test"))
    }


def test_no_module_imports_a_test_module_or_a_conftest() -> None:
    offences = {
        f"{path.relative_to(TESTS.parent)} imports {module}"
        for path in sorted(TESTS.rglob("*.py"))
        for module in imported_modules(path.read_text(encoding="utf-8"), module_name(path))
        if is_test_or_conftest(module)
    }
    assert not offences, sorted(offences)


def test_a_shared_helper_is_not_copied_into_test_modules() -> None:
    shared: set[str] = set()
    for path in SUPPORT.glob("*.py"):
        shared |= top_level_helpers(path.read_text(encoding="utf-8"))
    defined_in: dict[str, list[str]] = defaultdict(list)
    for path in sorted(TESTS.rglob("test_*.py")):
        for name in top_level_helpers(path.read_text(encoding="utf-8")) & shared:
            defined_in[name].append(str(path.relative_to(TESTS.parent)))
    copies = {name: paths for name, paths in defined_in.items() if len(paths) > 1}
    assert not copies, copies


def test_the_rules_see_what_they_forbid() -> None:
    source = (
        "from .test_runtimes import in_db\n"
        "from . import test_bridge\n"
        "import tests.client.conftest\n"
        "from tests.support.live import Live\n"
        "def helper() -> None: ...\n"
        "def test_it() -> None: ...\n"
    )
    forbidden = {
        module
        for module in imported_modules(source, "tests.server.test_example")
        if is_test_or_conftest(module)
    }
    assert forbidden == {
        "tests.server.test_runtimes",
        "tests.server.test_bridge",
        "tests.client.conftest",
    }
    assert top_level_helpers(source) == {"helper"}
