"""HTML for the console: Jinja2 with autoescaping on for every template, and the wake's Markdown
through markdown-it with raw HTML off and links, images, autolinks and link references
disabled: stored text is always text, and Markdown cannot hide where a link goes (a link shows
as the text it was written as, target included), so no ``javascript:`` URL becomes an href."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markdown_it import MarkdownIt
from markupsafe import Markup

TEMPLATES = Path(__file__).parent / "templates"
STATIC = Path(__file__).parent / "static"

# CommonMark and tables (the wake's runtimes are a table), with HTML, links and images off.
_MARKDOWN = (
    MarkdownIt("commonmark", {"html": False, "linkify": False})
    .enable("table")
    .disable(["link", "image", "autolink", "reference"])
)


@functools.lru_cache(maxsize=64)
def markdown(text: str) -> Markup:
    """Markdown to HTML; markdown-it escapes every character of the source it emits as text.
    Kept for the texts seen last: a large wake's Markdown (40 kB at 10,000 memories) takes
    markdown-it about 28 ms, and the wake's own cache answers the same text until it changes."""
    tokens = _MARKDOWN.parse(text)
    for token in tokens:
        # A column's alignment would be a style attribute, which the CSP refuses (no inline
        # style): the console's stylesheet aligns nothing, so the attribute is dropped.
        if token.attrs and "style" in token.attrs:
            del token.attrs["style"]
    # markdown-it escaped the source it emits as text (html is off): its output is markup.
    return Markup(_MARKDOWN.renderer.render(tokens, _MARKDOWN.options, {}))


def pretty_json(value: Any) -> str:
    """JSON for a ``<pre>``: a string, escaped by the template like any other."""
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)


_ENV = Environment(
    loader=FileSystemLoader(TEMPLATES),
    autoescape=True,  # every template, whatever its name
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
_ENV.filters["markdown"] = markdown
_ENV.filters["json"] = pretty_json


def page(name: str, **context: Any) -> str:
    return _ENV.get_template(name).render(**context)
