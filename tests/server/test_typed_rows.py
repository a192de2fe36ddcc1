"""Rows are typed where they cross a module boundary; JSON is named (docs/architecture.md,
"Rows and JSON").

A function signature under ``src/hearth/server`` never says a bare ``dict[str, Any]``: a row of a
table is a frozen dataclass (``hearth.server.db.rows``), and a JSON payload (a response body, a
document body, a JSON column) says ``JsonObject`` (``hearth.server.json_types``). So a bare
mapping can no longer hide a row. Read from the source with ``ast``: nothing is imported or run.

``NOT_YET_TYPED`` lists the modules whose signatures have not been sorted into rows and JSON yet
(issue 16, "typed rows"): the tables still carried as mappings are keys and bearers, strands,
templates, wallets, vault, inbox, attestations and the chronicle, and the modules that read them.
The list only shrinks: a module on it that no longer uses the bare form fails the test too, so
that it leaves the list when it is cleaned.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

SERVER = Path(__file__).resolve().parents[2] / "src" / "hearth" / "server"

NOT_YET_TYPED: frozenset[str] = frozenset(
    {
        "bridge/connection.py",
        "bridge/frames.py",
        "bridge/hub.py",
        "canon.py",
        "error_handlers.py",
        "errors.py",
        "events.py",
        "logs.py",
        "mathos.py",
        "middleware.py",
        "models_runtimes.py",
        "observability.py",
        "openapi.py",
        "orchestrator/custody.py",
        "orientation_documents.py",
        "packages.py",
        "request_heads.py",
        "routes/adds.py",
        "routes/arrival.py",
        "routes/bootstrap.py",
        "routes/common.py",
        "routes/forks.py",
        "routes/health.py",
        "routes/orientation.py",
        "routes/public.py",
        "routes/voice.py",
        "services/adds_store.py",
        "services/arrival.py",
        "services/backups.py",
        "services/birth.py",
        "services/bootstrap.py",
        "services/cursors.py",
        "services/directory.py",
        "services/elevation.py",
        "services/identity_keys.py",
        "services/provider.py",
        "services/pulse.py",
        "services/recovery.py",
        "services/runtimes/events.py",
        "services/runtimes/provisioning.py",
        "services/wake.py",
        "services/wake_cache.py",
        "services/wake_metadata.py",
        "services/wake_render.py",
        "tutor.py",
    }
)


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
    offenders = {
        module: found
        for module, found in _modules().items()
        if found and module not in NOT_YET_TYPED
    }
    assert not offenders, (
        f"{sum(map(len, offenders.values()))} signatures in {len(offenders)} modules say a bare "
        "dict[str, Any]: a row is a dataclass of hearth.server.db.rows, JSON is JsonObject: "
        f"{offenders}"
    )


def test_the_allow_list_only_shrinks() -> None:
    modules = _modules()
    cleaned = sorted(module for module in NOT_YET_TYPED if not modules.get(module))
    assert not cleaned, f"no bare dict[str, Any] left; take them off NOT_YET_TYPED: {cleaned}"


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
