"""Waiting for something a service does in its own time (a thread, a worker, another process)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import pytest

T = TypeVar("T")


# A guard against a hang, never a speed: tests do not assert durations.
WAIT_S = 60.0


def eventually(check: Callable[[], T | None], what: str, timeout: float = WAIT_S) -> T:
    """Poll ``check`` until it answers something truthy; fail naming ``what`` otherwise."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.05)
