"""The wake's renderers and cache, without a service: golden files, the provider payloads'
shapes, the math form read back into the document, and the cache's rules on a fake clock.

Regenerate the golden files with ``HEARTH_REGENERATE_GOLDEN=1`` (docs/wake.md); the test then
writes them and fails, so a regenerated golden is always looked at before it is trusted.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from hearth.server.services import wake_render
from hearth.server.services.wake_cache import WakeCache
from tests.support.wake import VECTORS, check_golden, unflatten

DOCUMENT = VECTORS / "document.json"
GOLDEN = {
    "md": "wake.md",
    "math": "wake.math.txt",
    "anthropic": "wake.anthropic.json",
    "openai": "wake.openai.json",
}


def document() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(DOCUMENT.read_text("utf-8"))
    return loaded


@pytest.mark.parametrize("fmt", sorted(GOLDEN))
def test_the_fixture_renders_to_its_golden_file(fmt: str) -> None:
    body, media_type = wake_render.render(document(), fmt)
    assert media_type == wake_render.MEDIA_TYPES[fmt]
    check_golden(GOLDEN[fmt], body)


def test_json_is_the_document_itself() -> None:
    body, media_type = wake_render.render(document(), "json")
    assert media_type == "application/json"
    assert json.loads(body) == document()


def test_rendering_is_pure() -> None:
    original = document()
    kept = copy.deepcopy(original)
    first = {fmt: wake_render.render(original, fmt) for fmt in wake_render.MEDIA_TYPES}
    second = {fmt: wake_render.render(original, fmt) for fmt in wake_render.MEDIA_TYPES}
    assert first == second
    assert original == kept, "a renderer changed its input"


def test_provider_payloads_carry_the_markdown_as_the_vendor_takes_a_system_prompt() -> None:
    markdown = wake_render.to_markdown(document())
    anthropic = json.loads(wake_render.render(document(), "anthropic")[0])
    openai = json.loads(wake_render.render(document(), "openai")[0])
    # Messages API: a top-level `system` string (there is no system role among messages).
    assert anthropic == {"system": markdown}
    # Chat Completions: one message with role `system` and string content.
    assert openai == {"messages": [{"role": "system", "content": markdown}]}


def test_math_is_one_fact_per_line_and_reads_back_into_the_document() -> None:
    text = wake_render.to_math(document())
    assert "you_run.count = 3\n" in text
    assert 'you.agents[0].name = "Wren"\n' in text
    assert all(" = " in line for line in text.splitlines())
    assert unflatten(text) == document()
    odd = {"a": {"not an identifier": [1, {"b": None}]}, "empty": {}, "none": []}
    assert wake_render.to_math(odd) == (
        'a["not an identifier"][0] = 1\na["not an identifier"][1].b = null\nempty = {}\nnone = []\n'
    )
    assert unflatten(wake_render.to_math(odd)) == odd


def test_markdown_keeps_untrusted_text_in_its_place() -> None:
    changed = document()
    agent = changed["you"]["agents"][0]
    agent["name"] = "Wren\n# injected heading"
    changed["you_run"]["runtimes"][0]["name"] = "a | b\nc"
    changed["you_are_greeted"]["agents"][0]["sender"] = "``x`` y"
    markdown = wake_render.to_markdown(changed)
    assert "\n# injected" not in markdown
    assert "### Wren # injected heading (focus)" in markdown
    assert "| a \\| b c |" in markdown
    assert "- ``` ``x`` y ``` wrote to" in markdown
    # Memory content stays inside its block quote, whatever it holds.
    assert "  > # not a heading\n  > The garden project began.\n" in markdown


def test_an_unknown_format_is_refused_by_the_renderer() -> None:
    with pytest.raises(ValueError, match="unknown wake format"):
        wake_render.render(document(), "yaml")


# --- the cache ----------------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_cache_entries_expire_after_the_ttl() -> None:
    clock = Clock()
    cache = WakeCache(5.0, clock=clock)
    key = ("p1", None, "md")
    cache.put(key, b"body", "text/markdown", "t0", stamp=0)
    assert cache.get(key, stamp=0) is not None
    clock.now += 4.999
    hit = cache.get(key, stamp=0)
    assert hit is not None
    assert (hit.body, hit.generated_at) == (b"body", "t0")
    clock.now += 0.001
    assert cache.get(key, stamp=0) is None
    assert len(cache) == 0


def test_a_build_from_before_a_change_is_never_served_after_it() -> None:
    # The stamp is read before a build starts; a change lands while it runs (stamp 1 -> 2).
    cache = WakeCache(5.0, clock=Clock())
    cache.put(("p1", None, "math"), b"stale", "text/plain", "t", stamp=1)
    assert cache.get(("p1", None, "math"), stamp=2) is None, "a build from before the change"
    cache.put(("p1", None, "math"), b"new", "text/plain", "t", stamp=2)
    fresh = cache.get(("p1", None, "math"), stamp=2)
    assert fresh is not None
    assert fresh.body == b"new"


def test_the_cache_is_bounded_least_recently_used_first() -> None:
    cache = WakeCache(5.0, clock=Clock(), max_entries=2)
    cache.put(("a", None, "md"), b"a", "t", "t", stamp=0)
    cache.put(("b", None, "md"), b"b", "t", "t", stamp=0)
    assert cache.get(("a", None, "md"), stamp=0) is not None  # a is now the most recent
    cache.put(("c", None, "md"), b"c", "t", "t", stamp=0)
    assert len(cache) == 2
    assert cache.get(("b", None, "md"), stamp=0) is None
    assert cache.get(("a", None, "md"), stamp=0) is not None
    assert cache.get(("c", None, "md"), stamp=0) is not None
