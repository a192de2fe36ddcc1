"""Every name a bench reaches in hearth still exists.

The benches are scripts, not tests, and some (bench/edge_text.py) have no short run of their own:
when a refactoring moved ``edge_text.refuse_unstorable`` to ``edge_guard``, that bench broke and
nothing said so. This reads each bench with ``ast`` and checks every ``module.name`` it uses
where ``module`` is a hearth module it imported, and every name it imports from hearth.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


def hearth_references(path: Path) -> list[tuple[int, str, str]]:
    """(line, module, name) for each name of hearth the bench relies on."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    modules: dict[str, str] = {}  # local name -> hearth module
    found: list[tuple[int, str, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("hearth"):
            for alias in node.names:
                local = alias.asname or alias.name
                submodule = f"{node.module}.{alias.name}"
                try:
                    importlib.import_module(submodule)
                except ImportError:
                    found.append((node.lineno, node.module or "", alias.name))
                else:
                    modules[local] = submodule
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("hearth") and alias.asname:
                    modules[alias.asname] = alias.name
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in modules
        ):
            found.append((node.lineno, modules[node.value.id], node.attr))
    return found


@pytest.mark.parametrize("path", sorted(BENCH.glob("*.py")), ids=lambda p: p.name)
def test_every_name_a_bench_uses_exists(path: Path) -> None:
    missing = [
        f"{path.name}:{line}: {module}.{name}"
        for line, module, name in hearth_references(path)
        if not hasattr(importlib.import_module(module), name)
    ]
    assert missing == []


def test_the_check_sees_a_missing_name(tmp_path: Path) -> None:
    # The same reading on the shape that broke: a name that moved away from its module.
    broken = tmp_path / "broken.py"
    broken.write_text("from hearth.server import edge_text\nedge_text.refuse_unstorable\n")
    references = hearth_references(broken)
    assert references == [(2, "hearth.server.edge_text", "refuse_unstorable")]
    assert not hasattr(importlib.import_module("hearth.server.edge_text"), "refuse_unstorable")
