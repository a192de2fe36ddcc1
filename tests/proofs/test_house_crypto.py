"""The house rule of ../shared/STYLE.md, enforced: only ``hearth.proofs`` and ``hearth.adds``
import ``cryptography``; the server, the client and the CLI call their recipes (and name keys
through ``hearth.proofs.key_types``)."""

from __future__ import annotations

import ast
from pathlib import Path

import hearth

PACKAGE = Path(hearth.__file__).parent
CRYPTO_PACKAGES = ("proofs", "adds")


def _cryptography_imports(path: Path) -> list[str]:
    """``module:line`` of every import of ``cryptography`` in the file, at any depth (imports
    inside functions and ``TYPE_CHECKING`` blocks count too)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        found += [f"{name}:{node.lineno}" for name in names if name.split(".")[0] == "cryptography"]
    return found


def test_only_proofs_and_adds_import_cryptography() -> None:
    offenders = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if relative.split("/")[0] in CRYPTO_PACKAGES:
            continue
        imports = _cryptography_imports(path)
        if imports:
            offenders[relative] = imports
    assert offenders == {}, (
        "import cryptography only in hearth.proofs or hearth.adds; call their recipes "
        f"(and hearth.proofs.key_types) instead: {offenders}"
    )


def test_the_walk_sees_the_crypto_packages() -> None:
    # Guards the test itself: a walk that found no import at all would pass vacuously.
    assert _cryptography_imports(PACKAGE / "proofs" / "key_types.py")
