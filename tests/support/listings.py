"""Listings read page after page, following ``next_cursor``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def every_page(fetch: Callable[[dict[str, Any]], Any], **params: Any) -> list[list[Any]]:
    """The items of each page of a listing, following ``next_cursor`` until it is null;
    ``fetch(params)`` returns one page's JSON body."""
    pages: list[list[Any]] = []
    cursor: str | None = None
    while True:
        page = fetch({**params, "cursor": cursor} if cursor else dict(params))
        pages.append(page["items"])
        cursor = page["next_cursor"]
        if cursor is None:
            return pages


def paged(fetch: Callable[[dict[str, Any]], Any], field: str = "id", /, **params: Any) -> list[Any]:
    """``field`` of every item of a listing, page after page (``every_page``)."""
    return [item[field] for items in every_page(fetch, **params) for item in items]
