"""Fixtures the test packages share; helpers that are plain functions live in tests/support."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.fake_llm import FakeLlm, fake_llm
from tests.support.processes import Guard


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeLlm]:
    """The fake LLM server (both vendors' APIs over real HTTP), one per test module."""
    with fake_llm() as running:
        yield running


# No process a test starts outlives the run (tests/support/processes.py): pytest adopts orphans
# from the start, and at the end fails the session on any descendant still alive, naming it.
_guard = Guard()


def pytest_sessionstart(session: pytest.Session) -> None:
    _guard.start()


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    left = _guard.leftovers()
    if not left:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    lines = [f"  pid {p.pid} (parent {p.ppid}): {p.command}" for p in left]
    message = "processes started by the suite outlived it (killed now):\n" + "\n".join(lines)
    if reporter is not None:
        reporter.write_sep("=", "leftover processes", red=True)
        reporter.write_line(message)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED
