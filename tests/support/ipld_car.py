"""``@ipld/car``, the reference CAR implementation (JavaScript), as an independent reader.

It is installed from the npm registry with ``npm`` into a cache directory once per machine
(``HEARTH_NPM_CACHE``, else ``~/.cache/hearth-tests/ipld-car``) and run with ``node``. When node,
npm or the registry is not there the tests skip with the reason; under CI (``CI=true``) that
is a failure, never a silent skip. The ``npm install`` is a subprocess that ends before this
returns, and so is every ``node`` run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support.external_suites import under_ci
from tests.support.npm_tools import installing

PACKAGE = "@ipld/car@5"
CACHE = Path(
    os.environ.get("HEARTH_NPM_CACHE", Path.home() / ".cache" / "hearth-tests" / "ipld-car")
)

# Reads a CAR with @ipld/car's streaming iterator and hashes every block with multiformats'
# sha2-256 (both from npm), printing the roots and, per block, its CID and whether it holds.
_SCRIPT = """
import fs from 'node:fs'
import { CarBlockIterator } from '@ipld/car/iterator'
import { sha256 } from 'multiformats/hashes/sha2'
import { equals } from 'multiformats/bytes'
const blocks = await CarBlockIterator.fromIterable(fs.createReadStream(process.argv[2]))
const roots = (await blocks.getRoots()).map(String)
const out = []
for await (const { cid, bytes } of blocks) {
  const digest = await sha256.digest(bytes)
  const holds = equals(digest.bytes, cid.multihash.bytes)
  out.push({ cid: cid.toString(), codec: cid.code, holds, size: bytes.length })
}
console.log(JSON.stringify({ roots, blocks: out }))
"""


def _unavailable(reason: str) -> None:
    if under_ci():
        pytest.fail(f"@ipld/car is needed under CI: {reason}", pytrace=False)
    pytest.skip(f"@ipld/car unavailable: {reason}")


def ipld_car_dir() -> Path:
    """A directory where ``node`` can import ``@ipld/car``; installs it on first use."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        _unavailable("node and npm are not on PATH")
    with installing(CACHE):
        _install(npm or "npm")
    return CACHE


def _install(npm: str) -> None:
    marker = CACHE / "node_modules" / "@ipld" / "car" / "package.json"
    if not marker.is_file():
        CACHE.mkdir(parents=True, exist_ok=True)
        (CACHE / "package.json").write_text('{"private": true, "type": "module"}\n')
        try:
            subprocess.run(
                [npm, "install", "--no-audit", "--no-fund", "--silent", PACKAGE],
                cwd=CACHE,
                check=True,
                capture_output=True,
                timeout=180,
            )
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as exc:
            _unavailable(f"npm install {PACKAGE} failed: {exc}")
    script = CACHE / "read_car.mjs"
    if not script.is_file() or script.read_text() != _SCRIPT:
        script.write_text(_SCRIPT)


def read_with_ipld_car(path: Path) -> dict[str, Any]:
    """The roots and blocks of the CAR at ``path`` as ``@ipld/car`` reads them."""
    where = ipld_car_dir()
    done = subprocess.run(
        ["node", str(where / "read_car.mjs"), str(path)],
        cwd=where,
        check=True,
        capture_output=True,
        timeout=120,
        text=True,
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result
