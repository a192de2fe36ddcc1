"""JavaScript tools from the npm registry for tests that need an independent client, installed
once into a cache folder (``npm install --prefix``) and reused by later runs.

Outside CI a machine without node and npm, or without the registry, skips those tests with the
reason; under CI (``CI=true``) that is a failure (``redis_server.skip_or_fail``).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.support.redis_server import skip_or_fail

CACHE = Path(os.environ.get("HEARTH_NPM_CACHE", Path.home() / ".cache" / "hearth-tests" / "npm"))
INSTALL_TIMEOUT_S = 600  # a first install downloads a few hundred packages


def npm_prefix(name: str, packages: dict[str, str], overrides: dict[str, str]) -> Path:
    """A folder whose node_modules holds ``packages`` (name: pinned version), with npm's
    ``overrides`` applied to their dependencies. Installed again whenever the wanted set
    changes (its package.json differs)."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        skip_or_fail("node and npm are needed for this independent client")
    prefix = CACHE / name
    manifest = json.dumps(
        {"private": True, "dependencies": packages, "overrides": overrides}, indent=2
    )
    with installing(prefix):
        _install(prefix, manifest, npm)
    return prefix


@contextmanager
def installing(folder: Path) -> Iterator[None]:
    """Held while ``folder`` is checked and installed: the suite's workers (pytest-xdist) may
    want the same cached tool at once, and two ``npm install`` runs into one folder, or a
    script rewritten while another worker runs it, break each other."""
    folder.mkdir(parents=True, exist_ok=True)
    with (folder.parent / f".{folder.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _install(prefix: Path, manifest: str, npm: str) -> None:
    wanted = prefix / "package.json"
    if _read(wanted) == manifest and (prefix / "node_modules" / ".package-lock.json").is_file():
        return
    wanted.write_text(manifest)
    try:
        done = subprocess.run(
            [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund"],
            capture_output=True,
            text=True,
            timeout=INSTALL_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        wanted.unlink()
        skip_or_fail(f"npm install into {prefix} took over {INSTALL_TIMEOUT_S} s")
    if done.returncode != 0:
        wanted.unlink()  # installed again next time
        skip_or_fail(f"npm install into {prefix} failed: {done.stderr[-500:]}")


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None
