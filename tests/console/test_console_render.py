"""The console's renderer and state machine drawing, without a service (docs/console.md,
"Safety: stored text is text")."""

from __future__ import annotations

import pytest

from hearth.server.console.render import markdown, page
from hearth.server.console.states import machine
from hearth.server.runtime_states import MOVES, STATES


@pytest.mark.parametrize(
    ("source", "shown"),
    [
        ("[innocent](javascript:alert(1))", "[innocent](javascript:alert(1))"),
        ("[ref][r]\n\n[r]: javascript:alert(1)", "[r]: javascript:alert(1)"),
        ("<javascript:alert(1)>", "&lt;javascript:alert(1)&gt;"),
        ("![x](javascript:alert(1))", "![x](javascript:alert(1))"),
        ("<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;"),
        ('<img src=x onerror="alert(1)">', "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;"),
        ("[site](https://example.com)", "[site](https://example.com)"),
    ],
)
def test_markdown_shows_links_and_html_as_the_text_they_were_written_as(
    source: str, shown: str
) -> None:
    html = str(markdown(source))
    assert shown in html
    assert "<a " not in html
    assert "<img" not in html
    assert "<script" not in html


def test_markdown_still_renders_what_a_wake_is_made_of() -> None:
    html = str(markdown("# You\n\n- **Wren**, `did:key:z6`\n\n> a quote"))
    assert "<h1>You</h1>" in html
    assert "<strong>Wren</strong>" in html
    assert "<code>did:key:z6</code>" in html
    assert "<blockquote>" in html


def test_tables_render_without_style_attributes() -> None:
    # Aligned columns would carry style="text-align:…", which the CSP (no inline style) refuses.
    html = str(markdown("| a | b |\n|:--|--:|\n| <i>x</i> | [y](javascript:z) |"))
    assert "<table>" in html
    assert "style" not in html
    assert "&lt;i&gt;x&lt;/i&gt;" in html
    assert "[y](javascript:z)" in html


def test_templates_escape_what_they_are_given() -> None:
    html = page("sign_in.html", session=None, error='<script>alert("x")</script>')
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in html


def test_the_machine_is_drawn_from_the_table_with_the_current_state_marked() -> None:
    for current in STATES:
        drawn = machine(current)
        assert [n.name for n in drawn.nodes] == list(STATES)
        assert [n.name for n in drawn.nodes if n.current] == [current]
        labels = {trigger for edge in drawn.edges for trigger in edge.label.split(", ")}
        assert labels == set(MOVES)
        # The moves out of the current state are the ones marked active.
        active = {t for e in drawn.edges if e.active for t in e.label.split(", ")}
        assert active == {m.trigger for m in MOVES.values() if current in m.sources}
