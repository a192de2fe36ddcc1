"""Every write of the ``runtimes`` table goes through the runtimes service (issue 16): outside
``server/services/runtimes/`` (and the database layer and its migrations, which create the
table), no module of ``src/hearth`` builds an INSERT, UPDATE or DELETE of it.

The check reads the source with ``ast``: a call of ``update``/``insert``/``delete`` (bare or as
an attribute, ``postgresql.insert`` too) on the table, the table's own ``.update()``,
``.insert()``, ``.delete()``, and raw SQL in ``text(...)`` that writes it. The table is the name
``runtimes`` (or its alias) imported from a ``tables`` module, or ``tables.runtimes``.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "hearth"
ALLOWED = ("server/services/runtimes/", "server/db/", "server/migrations/")
WRITES = {"update", "insert", "delete"}
RAW_WRITE = re.compile(r"\b(update|insert\s+into|delete\s+from)\s+\"?runtimes\b", re.IGNORECASE)


def _table_names(tree: ast.Module) -> set[str]:
    """The local names the runtimes table is imported under."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[-1] == "tables":
            names.update(a.asname or a.name for a in node.names if a.name == "runtimes")
    return names


def _is_table(node: ast.expr, names: set[str]) -> bool:
    if isinstance(node, ast.Name):
        return node.id in names
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "runtimes"
        and isinstance(node.value, ast.Name)
        and node.value.id == "tables"
    )


def _called(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def runtime_writes(source: str) -> list[int]:
    """The lines of ``source`` that build a write of the runtimes table."""
    tree = ast.parse(source)
    names = _table_names(tree)
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        called = _called(node.func)
        if called in WRITES and node.args and _is_table(node.args[0], names):
            lines.append(node.lineno)  # update(runtimes), postgresql.insert(runtimes)
        elif (
            called in WRITES
            and isinstance(node.func, ast.Attribute)
            and _is_table(node.func.value, names)
        ):
            lines.append(node.lineno)  # runtimes.update()
        elif called == "text" and any(
            isinstance(arg, ast.Constant)
            and isinstance(arg.value, str)
            and RAW_WRITE.search(arg.value)
            for arg in node.args
        ):
            lines.append(node.lineno)  # text("UPDATE runtimes ...")
    return sorted(lines)


def _modules() -> list[tuple[str, str]]:
    return [
        (path.relative_to(SRC).as_posix(), path.read_text(encoding="utf-8"))
        for path in sorted(SRC.rglob("*.py"))
    ]


def test_only_the_runtimes_service_writes_runtimes() -> None:
    outside = [
        f"src/hearth/{name}:{line}"
        for name, source in _modules()
        if not name.startswith(ALLOWED)
        for line in runtime_writes(source)
    ]
    assert outside == [], (
        "runtimes is written outside hearth.server.services.runtimes; add a function there "
        f"and call it: {outside}"
    )


def test_the_check_sees_the_service_writes() -> None:
    # Not vacuous: the service's own writes (moves, leases, provisioning) are found.
    found = {
        name
        for name, source in _modules()
        if name.startswith("server/services/runtimes/") and runtime_writes(source)
    }
    assert {
        "server/services/runtimes/moves.py",
        "server/services/runtimes/leases.py",
        "server/services/runtimes/provisioning.py",
    } <= found


def test_the_check_sees_every_form_of_write() -> None:
    source = """
from sqlalchemy import delete, insert, text, update
from sqlalchemy.dialects import postgresql
from ..db import tables
from ..db.tables import runtimes, strands
from ..db.tables import runtimes as table

update(runtimes).values(status="x")
postgresql.insert(table)
runtimes.delete()
tables.runtimes.update()
text("UPDATE runtimes SET status = 'x'")
update(strands).values(next_seq=1)
runtimes.c.id == 1
"""
    assert runtime_writes(source) == [8, 9, 10, 11, 12]
