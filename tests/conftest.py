"""Fixtures the test packages share; helpers that are plain functions live in tests/support."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.fake_llm import FakeLlm, fake_llm


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeLlm]:
    """The fake LLM server (both vendors' APIs over real HTTP), one per test module."""
    with fake_llm() as running:
        yield running
