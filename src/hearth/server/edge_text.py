"""Text the service stores, checked once at the edge (docs/service.md, "Text the service stores").

PostgreSQL's text cannot hold NUL (U+0000), and no driver can encode a lone UTF-16 surrogate
(U+D800..U+DFFF without its pair) as UTF-8. Such text can only arrive in a request: in a path
segment or a query value (``%00``), or in a JSON body (``\\u0000``, ``\\ud800``). One rule,
applied by an app-wide dependency (``edge_guard.refuse_unstorable``) before any route's own
dependencies run, refuses it with 422
``unstorable_text`` and the location where it was found (never the value), on every route and
both databases, so no field and no query ever meets it.

The JSON body checked is the one the framework already decoded for the route's model: the
dependency reads the cached value, it never parses again. Its bytes are scanned in C for the only
spellings that can decode to such text, and the decoded value is walked only when one appears,
so an ordinary request pays for a few byte scans. The same bytes must be JSON this service reads
(400 ``invalid_json`` otherwise): strict UTF-8, not UTF-16 or UTF-32 (which Python's parser
would take), and nested at most ``MAX_JSON_DEPTH`` levels.

Routes that read raw bytes and parse them themselves (ADDS documents) call ``find_unstorable``
where they parse. Headers need no check: the HTTP parser refuses a NUL in a header, and any
other header byte decodes (as Latin-1) to storable text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .errors import ApiError, ProblemsError

# Deeper than any body a route accepts, far below what exhausts the parser's recursion. A JSON
# member that is kept (metadata, evidence) is written and read back by the same recursive
# encoders, so the bound also keeps every stored document readable.
MAX_JSON_DEPTH = 64

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
# In UTF-8 JSON text such a character can only be an escape: a raw NUL is not valid JSON text,
# and a raw surrogate is not valid UTF-8 (``_ENCODED_SURROGATE`` is refused on its own).
# ``\\u0000`` after an escaped backslash is ordinary text; the walk of the value decides.
RISKY_ESCAPE = re.compile(rb"\\u(?:0000|[dD][89a-fA-F])")
# ED A0..BF xx: a surrogate encoded as UTF-8, which Python's JSON parser decodes from bytes
# ("surrogatepass") although strict UTF-8 forbids it.
_ENCODED_SURROGATE = re.compile(rb"\xed[\xa0-\xbf]")
# For the depth of JSON bytes: escaped backslashes and quotes, everything but brackets and
# quotes, and strings (after the bytes are translated, whatever brackets they held).
_ESCAPED_PAIR = re.compile(rb'\\[\\"]')
_NOT_STRUCTURE = bytes(c for c in range(256) if c not in b'[]{}"')
_SQUARE = bytes.maketrans(b"{}", b"[]")
_STRING = re.compile(rb'"[^"]*"')

KINDS = {
    "nul_character": "a NUL character (U+0000)",
    "lone_surrogate": "a lone UTF-16 surrogate (U+D800..U+DFFF)",
}


@dataclass(frozen=True, slots=True)
class Unstorable:
    """Where text that cannot be stored was found: ``loc`` as in validation errors
    (``["body", "items", "0", "name"]``, ``["path", "did"]``, ``["query", "cursor"]``),
    ``kind`` a key of ``KINDS``, ``in_name`` when it is the name of the member at ``loc``'s
    parent rather than a value."""

    loc: tuple[str, ...]
    kind: str
    in_name: bool = False

    def refusal(self) -> ApiError:
        place = "a member name" if self.in_name else "a value"
        return ProblemsError(
            422,
            "unstorable_text",
            "The request holds text the service cannot store: NUL characters and lone UTF-16 "
            "surrogates are refused wherever they appear.",
            [
                {
                    "loc": list(self.loc),
                    "message": f"{place} holds {KINDS[self.kind]}",
                    "type": self.kind,
                }
            ],
            hint="Send text as valid Unicode without U+0000; binary data goes base64-encoded.",
        )


def text_problem(text: str) -> str | None:
    """The kind of unstorable character in ``text`` (``KINDS``), or None."""
    found = _UNSTORABLE.search(text)
    if found is None:
        return None
    return "nul_character" if found.group() == "\x00" else "lone_surrogate"


def find_unstorable(value: Any, loc: tuple[str, ...] = ("body",)) -> Unstorable | None:
    """The first string or member name, in document order, of a decoded JSON value that cannot
    be stored; None when every one can. Iterative: the depth of ``value`` costs no recursion."""
    stack: list[tuple[Any, tuple[str, ...]]] = [(value, loc)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, str):
            kind = text_problem(item)
            if kind is not None:
                return Unstorable(where, kind)
        elif isinstance(item, dict):
            members: list[tuple[Any, tuple[str, ...]]] = []
            for name, member in item.items():
                kind = text_problem(name)
                if kind is not None:
                    return Unstorable(where, kind, in_name=True)
                members.append((member, (*where, name)))
            stack.extend(reversed(members))
        elif isinstance(item, list):
            stack.extend((item[i], (*where, str(i))) for i in reversed(range(len(item))))
    return None


def find_in_url(
    path_params: Mapping[str, Any], query: Iterable[tuple[str, str]]
) -> Unstorable | None:
    """Path parameters and query items (both already percent-decoded). A percent-encoded
    surrogate decodes to U+FFFD, so only NUL can be found here; the check is the same one."""
    for name, value in path_params.items():
        if isinstance(value, str) and (kind := text_problem(value)) is not None:
            return Unstorable(("path", name), kind)
    for name, value in query:
        if (kind := text_problem(name)) is not None:
            return Unstorable(("query",), kind, in_name=True)
        if (kind := text_problem(value)) is not None:
            return Unstorable(("query", name), kind)
    return None


def unreadable_json(body: bytes) -> tuple[str, str] | None:
    """Why JSON bytes that Python's parser took are not JSON this service reads, as
    (problem type, message); None when they are."""
    if b"\x00" in body:
        # Never in UTF-8 JSON text; always in UTF-16 or UTF-32 text, which the parser detects.
        return "json_not_utf8", "The body is not UTF-8 (it holds NUL bytes)."
    if not body.isascii() and _ENCODED_SURROGATE.search(body) is not None:
        return "json_not_utf8", "The body is not UTF-8 (it holds an encoded surrogate)."
    if nests_deeper_than(body, MAX_JSON_DEPTH):
        return "json_too_deep", f"The body nests deeper than {MAX_JSON_DEPTH} levels."
    return None


def nests_deeper_than(data: bytes, limit: int) -> bool:
    """Whether syntactically valid JSON nests arrays and objects deeper than ``limit``.

    Every step runs in C at about the speed of a memory scan, so a body of many small objects
    costs a fraction of its parse: what is left after dropping escaped pairs, everything but
    brackets and quotes, and then strings, is the bracket skeleton (objects' braces mapped to
    square brackets: depth is the same), and each ``replace`` of ``[]`` peels exactly one level.
    A string with no bracket in it is ``""`` in the skeleton, dropped by a ``replace`` as well:
    two adjacent quotes enclose nothing structural, whichever two strings they belong to, so
    only skeletons where a string held a bracket need the slower regular expression.
    """
    if b"\\" in data:
        data = _ESCAPED_PAIR.sub(b"", data)
    skeleton = data.translate(_SQUARE, _NOT_STRUCTURE)
    if skeleton.count(b"[") <= limit:  # brackets in strings counted too: still a bound
        return False
    skeleton = skeleton.replace(b'""', b"")
    if b'"' in skeleton:
        skeleton = _STRING.sub(b"", skeleton)
    for _ in range(limit):
        skeleton = skeleton.replace(b"[]", b"")
        if not skeleton:
            return False
    return True


def is_json(content_type: str | None) -> bool:
    """The media types the framework decodes as JSON: application/json and application/*+json."""
    if not content_type:
        return False
    media = content_type.partition(";")[0].strip().lower()
    return media == "application/json" or (
        media.startswith("application/") and media.endswith("+json")
    )


__all__ = [
    "KINDS",
    "MAX_JSON_DEPTH",
    "RISKY_ESCAPE",
    "Unstorable",
    "find_in_url",
    "find_unstorable",
    "is_json",
    "nests_deeper_than",
    "text_problem",
    "unreadable_json",
]
