"""Rows are typed where they cross a module boundary; JSON is named (docs/architecture.md,
"Rows and JSON").

A function signature under ``src/hearth/server`` never says a bare ``dict[str, Any]``: a row of a
table is a frozen dataclass (``hearth.server.db.rows``), and a JSON payload (a response body, a
document body, a JSON column) says ``JsonObject`` (``hearth.server.json_types``). So a bare
mapping can no longer hide a row. The signatures are read from the source with ``ast``; the row
classes are held to their tables' columns.

Every module is sorted (issue 16, "typed rows"): there is no allow-list. A mapping that is
neither, such as an ASGI message or uvicorn's app state, gets a name of its own where it is used
(``observability.Message``, ``request_heads.AppState``).
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sqlalchemy import Table

from hearth.server.db import rows, tables

SERVER = Path(__file__).resolve().parents[2] / "src" / "hearth" / "server"

ROW_TABLES: dict[type[Any], Table] = {
    rows.IdentityRow: tables.identities,
    rows.MemoryRow: tables.memories,
    rows.RuntimeRow: tables.runtimes,
    rows.WalletRow: tables.wallets,
    rows.LedgerRow: tables.ledger,
    rows.StrandRow: tables.strands,
    rows.ThoughtRow: tables.thoughts,
    rows.TemplateRow: tables.templates,
    rows.InboxMessageRow: tables.inbox_messages,
    rows.AttestationRow: tables.attestations,
    rows.ChronicleRow: tables.chronicle,
}


def _is_bare_mapping(node: ast.AST) -> bool:
    """``dict[str, Any]`` (or ``Dict[str, Any]``), the exact form a row used to travel as."""
    if not isinstance(node, ast.Subscript):
        return False
    if not (isinstance(node.value, ast.Name) and node.value.id in {"dict", "Dict"}):
        return False
    key_value = node.slice
    if not (isinstance(key_value, ast.Tuple) and len(key_value.elts) == 2):
        return False
    key, value = key_value.elts
    return (
        isinstance(key, ast.Name)
        and key.id == "str"
        and isinstance(value, ast.Name)
        and value.id == "Any"
    )


def _annotations(function: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[ast.expr]:
    arguments = function.args
    for argument in [
        *arguments.posonlyargs,
        *arguments.args,
        *arguments.kwonlyargs,
        *([arguments.vararg] if arguments.vararg else []),
        *([arguments.kwarg] if arguments.kwarg else []),
    ]:
        if argument.annotation is not None:
            yield argument.annotation
    if function.returns is not None:
        yield function.returns


def bare_mappings(path: Path) -> list[str]:
    """Each function of ``path`` whose signature holds a bare ``dict[str, Any]`` anywhere
    (``list[dict[str, Any]]`` and ``dict[str, Any] | None`` included), as ``name:line``."""
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and any(
            _is_bare_mapping(part)
            for annotation in _annotations(node)
            for part in ast.walk(annotation)
        ):
            found.append(f"{node.name}:{node.lineno}")
    return found


def _modules() -> dict[str, list[str]]:
    return {
        str(path.relative_to(SERVER)): bare_mappings(path) for path in sorted(SERVER.rglob("*.py"))
    }


def test_no_signature_carries_a_bare_mapping() -> None:
    offenders = {module: found for module, found in _modules().items() if found}
    assert not offenders, (
        f"{sum(map(len, offenders.values()))} signatures in {len(offenders)} modules say a bare "
        "dict[str, Any]: a row is a dataclass of hearth.server.db.rows, JSON is JsonObject: "
        f"{offenders}"
    )


def test_the_walk_finds_a_bare_mapping(tmp_path: Path) -> None:
    """The check can fail: a row typed as a bare mapping is found, the alias is not."""
    source = tmp_path / "sample.py"
    source.write_text(
        "from typing import Any\n"
        "def row(conn: object) -> list[dict[str, Any] | None]: ...\n"
        "def body(payload: JsonObject) -> JsonObject: ...\n",
        encoding="utf-8",
    )
    assert bare_mappings(source) == ["row:2"]


def test_each_row_class_has_its_tables_columns() -> None:
    """A row class's fields are its table's columns, in order, optional exactly where the
    column is nullable (the types are read as written: ``str | None``)."""
    defined = {
        value
        for value in vars(rows).values()
        if isinstance(value, type) and value.__module__ == rows.__name__
    }
    assert defined == set(ROW_TABLES)
    for row_class, table in ROW_TABLES.items():
        fields = dataclasses.fields(row_class)
        assert [f.name for f in fields] == [c.name for c in table.columns], row_class.__name__
        for field, column in zip(fields, table.columns, strict=True):
            optional = "None" in str(field.type).split(" | ")
            assert optional == bool(column.nullable), f"{row_class.__name__}.{field.name}"
