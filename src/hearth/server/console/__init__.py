"""The console: server-rendered pages for the people behind the agents (docs/console.md).

An edge like ``routes``: pages parse, authorise (a console session, ``session.py``), call the
same services as the JSON routes and render with ``render.py`` (autoescaped templates). Its
routes stay out of the OpenAPI document: they are pages, not API operations.
"""

from __future__ import annotations

from .app import install

__all__ = ["install"]
