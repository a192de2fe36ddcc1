"""The suite's own processes: every child a test starts is stopped, and none outlives the run.

Two parts:
- ``stop(process, signum)``: the one way a test ends a child it started. It sends the signal,
  waits, and kills the child when it has not ended in time, so a child that ignores the signal
  fails the test instead of living on (as `hearth runtime run` once did when the suite ran in the
  background, where SIGINT starts out ignored).
- the session's guard (``Guard``, used by ``tests/conftest.py``): pytest becomes a child
  subreaper (Linux ``PR_SET_CHILD_SUBREAPER``) at the session's start, so a process whose parent
  died is handed to pytest instead of init and is still seen. At the session's end every
  descendant still alive is listed, killed, and fails the run.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

PR_SET_CHILD_SUBREAPER = 36  # <linux/prctl.h>
PR_GET_CHILD_SUBREAPER = 37

# How long a child may take to end after its signal before it is killed: a guard against a hung
# process, never a speed.
STOP_WAIT_S = 30.0


def stop(
    process: subprocess.Popen[str], signum: int = signal.SIGTERM, timeout_s: float = STOP_WAIT_S
) -> tuple[str, str]:
    """Send ``signum`` and return the child's remaining (stdout, stderr). When it has not ended
    within ``timeout_s`` it is killed and ``AssertionError`` says so: a child that ignores its
    signal is a failure, never a leftover."""
    if process.poll() is None:
        process.send_signal(signum)
    return finish(process, timeout_s, f"of {signal.Signals(signum).name}")


def finish(
    process: subprocess.Popen[str], timeout_s: float = STOP_WAIT_S, after: str = "of its start"
) -> tuple[str, str]:
    """Wait for a child to end by itself and return its (stdout, stderr); kill it when it has not
    within ``timeout_s``, and fail."""
    try:
        return process.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        _, err = process.communicate()
        raise AssertionError(
            f"pid {process.pid} ({process.args!r}) did not end within {timeout_s} s {after}; "
            f"killed. stderr: {err!r}"
        ) from None


# A process started in the background by a shell (`cmd &`, setsid, an editor's or a scheduler's
# job) begins with SIGINT ignored, and exec keeps that. This launcher does the same to the command
# it runs, so a test can show that Ctrl-C still stops it when the suite itself runs in the
# foreground.
_IGNORING_SIGINT = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_IGN); "
    "os.execv(sys.argv[1], sys.argv[1:])"
)


def as_background(command: list[str]) -> list[str]:
    """``command`` started as a background job starts it: with SIGINT ignored."""
    return [sys.executable, "-c", _IGNORING_SIGINT, *command]


@dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int
    state: str
    command: str


def _read(pid: int) -> Proc | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:  # it ended while we looked
        return None
    # The command name is in parentheses and may hold spaces or parentheses itself.
    fields = stat[stat.rindex(")") + 2 :].split()
    command = raw.replace(b"\0", b" ").decode(errors="replace").strip()
    return Proc(
        pid, int(fields[1]), fields[0], command or stat[stat.index("(") : stat.rindex(")") + 1]
    )


def descendants(root: int) -> list[Proc]:
    """Every live process under ``root`` (zombies left out: they are only exit statuses)."""
    procs = [p for p in (_read(int(d)) for d in os.listdir("/proc") if d.isdigit()) if p]
    children: dict[int, list[Proc]] = {}
    for proc in procs:
        children.setdefault(proc.ppid, []).append(proc)
    found: list[Proc] = []
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child.pid)
    return [p for p in found if p.state != "Z"]


def reap() -> None:
    """Collect the exit status of every ended child, adopted ones included."""
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG) != (0, 0):
            pass


def is_subreaper() -> bool:
    """Whether this process adopts its descendants' orphans."""
    flag = ctypes.c_int(0)
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.prctl(PR_GET_CHILD_SUBREAPER, ctypes.byref(flag), 0, 0, 0) == 0 and flag.value == 1


class Guard:
    """Adopts orphans for the session and, at its end, names and kills the processes left."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.adopting = False

    def start(self) -> None:
        if not Path("/proc/self/stat").exists():
            return  # not Linux: nothing to adopt with, and no /proc to look in
        libc = ctypes.CDLL(None, use_errno=True)
        self.adopting = libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0

    def leftovers(self) -> list[Proc]:
        """The processes still alive under pytest, after each was killed (SIGKILL)."""
        if not self.adopting:
            return []
        reap()
        left = descendants(self.pid)
        for proc in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGKILL)
        reap()
        return left
