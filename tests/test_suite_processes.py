"""The suite's guard against processes that outlive it (tests/support/processes.py).

Each check runs the guard in a child Python of its own, so that killing "every descendant" there
never touches the processes of the fixtures running around this test.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support.processes import Guard, is_subreaper

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")

# A parent that starts a sleeping grandchild and dies at once: the grandchild is an orphan, as a
# `hearth runtime run` was once left behind by a test that timed out.
ORPHAN = (
    "import subprocess, sys; subprocess.Popen([sys.executable, '-c', "
    "'import time; time.sleep(600)'], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)"
)


def run_python(script: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_an_orphan_is_adopted_named_and_killed() -> None:
    out = run_python(
        f"""
        import os, subprocess, sys
        from tests.support.processes import Guard, descendants
        guard = Guard()
        guard.start()
        subprocess.run([sys.executable, "-c", {ORPHAN!r}], check=True)
        left = guard.leftovers()
        print(len(left), [p.ppid == os.getpid() and "sleep(600)" in p.command for p in left])
        print(len(descendants(os.getpid())))
        """
    )
    # One leftover, adopted by the guarded process (its parent is gone), then none alive.
    assert out.split() == ["1", "[True]", "0"]


def test_without_the_guard_the_orphan_would_go_unseen() -> None:
    # The same orphan without adoption goes to init (or to this session's guard, whichever is
    # the nearest subreaper): it is not a descendant of the process that made it. This is why the
    # guard adopts, and it shows the check above can fail.
    out = run_python(
        f"""
        import os, subprocess, sys
        from tests.support.processes import descendants
        subprocess.run([sys.executable, "-c", {ORPHAN!r}], check=True)
        found = [
            p for p in descendants(os.getppid())
            if p.ppid == os.getppid() and p.pid != os.getpid() and "sleep(600)" in p.command
        ]
        print(len(descendants(os.getpid())), len(found))
        for p in found:
            os.kill(p.pid, 9)
        """
    )
    # Not under the process that made it; under pytest, whose guard adopted it.
    assert out.split() == ["0", "1"]


def test_the_session_is_guarded() -> None:
    # pytest itself adopts orphans for the whole run (tests/conftest.py), which the check above
    # relied on; a new guard adopts nothing until started.
    assert is_subreaper()
    assert Guard().adopting is False
