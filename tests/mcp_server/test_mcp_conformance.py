"""The official MCP conformance suite (``npx @modelcontextprotocol/conformance server``, from the
npm registry) against the live service's ``/mcp``: every scenario that applies to a server of
this kind passes; the others are in ``conformance-baseline.json``, each with its reason.

The suite sends no credentials, so an ASGI layer in front of the app gives its requests to
``/mcp`` the project's bearer, as a proxy holding the credential would; the 401 without one is
tested in test_mcp.py. Without ``npx`` (or the registry) the test skips outside CI and fails
under CI.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli_homes import home_with_identity
from tests.support.external_suites import under_ci
from tests.support.live import live_service, sqlite_settings

BASELINE = json.loads((Path(__file__).parent / "conformance-baseline.json").read_text())
PASSING = {"SUCCESS", "INFO", "WARNING"}


def _absent(reason: str) -> None:
    if under_ci():
        pytest.fail(f"{reason}: CI requires the MCP conformance suite", pytrace=False)
    pytest.skip(f"{reason}: MCP conformance suite skipped")


def _with_bearer(held: dict[str, str]) -> Callable[[Any], Any]:
    def wrap(app: Any) -> Any:
        async def layer(scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] == "http" and scope["path"] == "/mcp" and "bearer" in held:
                headers = [(k, v) for k, v in scope["headers"] if k != b"authorization"]
                headers.append((b"authorization", f"Bearer {held['bearer']}".encode()))
                scope = {**scope, "headers": headers}
            await app(scope, receive, send)

        return layer

    return wrap


def test_the_conformance_suite_passes_every_scenario_that_applies(tmp_path: Path) -> None:
    npx = shutil.which("npx")
    if npx is None:
        _absent("npx is not installed")
    held: dict[str, str] = {}
    out = tmp_path / "results"
    with live_service(sqlite_settings(tmp_path), wrap=_with_bearer(held)) as live:
        (tmp_path / "me").mkdir()
        home, _profile = home_with_identity(live, tmp_path / "me", "Auk")
        held["bearer"] = (home / "api_key").read_text().strip()
        command = [npx, "-y", BASELINE["suite"], "server", "--url", f"{live.base_url}/mcp"]
        try:
            ran = subprocess.run(
                [*command, "--suite", "all", "-o", str(out)],
                capture_output=True,
                text=True,
                timeout=300,
                check=False,
            )
        except subprocess.TimeoutExpired:
            pytest.fail("the conformance suite did not finish in 300 s")
    results: dict[str, list[dict[str, Any]]] = {}
    for checks in sorted(out.glob("server-*/checks.json")) if out.is_dir() else []:
        scenario = checks.parent.name.removeprefix("server-").rsplit("-", 6)[0]
        results[scenario] = json.loads(checks.read_text())
    if not results:
        _absent(f"the suite did not run (npx exit {ran.returncode}): {ran.stderr[-500:]}")
    not_applicable: dict[str, str] = BASELINE["not_applicable"]
    assert set(not_applicable) <= set(results), "baseline names a scenario the suite lacks"
    failed = {
        scenario: [c.get("errorMessage") for c in checks if c["status"] not in PASSING]
        for scenario, checks in results.items()
        if scenario not in not_applicable
    }
    assert {s: f for s, f in failed.items() if f} == {}
    # What applies was really exercised: the handshake, listings, a tool call, an error.
    for scenario in ("server-initialize", "tools-list", "tools-call-error", "resources-list"):
        assert any(c["status"] == "SUCCESS" for c in results[scenario]), scenario
