"""Memory search: a query parsed here, the full-text index (``db/search_index``), the ranking
rule (docs/memory.md).

The query ``q`` is words, ``"quoted phrases"`` and prefixes (``term*``). It is parsed here into
terms of plain words (letters and digits), and the index's own syntax (an FTS5 expression, a
``tsquery``) is written from those terms: the caller's text never reaches either parser, so
no input can be a syntax error there, only a 422 ``invalid_search_query`` from here.

Ranking: every memory matching at least one term is a candidate. A memory that holds every term
comes before every one that does not (``all_terms``); within each group the score decides:
the text relevance (BM25 on SQLite, ``ts_rank`` on PostgreSQL) times the tier's boost times the
recency factor of an episodic memory. Text relevance picks the ``DEPTH`` best candidates of each
group in the database, then the adjustments reorder them here; a search shows at most ``DEPTH``
results. Every statement is held to the caller's project.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from sqlalchemy import (
    Connection,
    DateTime,
    Float,
    Integer,
    Select,
    String,
    bindparam,
    column,
    func,
    literal_column,
    select,
    table,
)
from sqlalchemy.dialects.postgresql import TSVECTOR

from ..db.engine import utcnow
from ..db.rows import MemoryRow
from ..db.search_index import BM25_WEIGHTS, FTS_TABLE, PG_TABLE, ROWS_TABLE
from ..db.tables import memories
from ..errors import ProblemsError
from ..json_types import JsonObject
from ..memory_tiers import decays, witnessed
from . import cursors
from .memories import HALF_LIFE_DAYS, _attestations_of, view

DEPTH: Final = 200  # candidates per group, and the most results a search shows
MAX_TERMS: Final = 16
MAX_WORDS: Final = 32  # words of all terms together (a phrase's words count one each)
MAX_WORD_CHARS: Final = 100
MIN_PREFIX_CHARS: Final = 2
SNIPPET_CHARS: Final = 160

# The score's adjustments (docs/memory.md, "Ranking"): elevated tiers rank higher, and an
# episodic memory's factor falls from 1 when stored to 0.5 as it decays (half-way each 30 days).
TIER_BOOST: Final = {"episodic": 1.0, "foundational": 1.25, "constitutive": 1.5}
RECENCY_FLOOR: Final = 0.5


def words_of(text: str) -> list[str]:
    """The words of ``text``, lowercased: runs of letters and digits with the combining marks
    that follow them, as PostgreSQL's parser splits text once the index has turned punctuation
    into spaces (a Devanagari word keeps its vowel signs). FTS5's unicode61 splits such a word
    at its marks, but the words are sent to it as a quoted phrase, which it splits the same way
    at search time."""
    found: list[str] = []
    current: list[str] = []
    for char in text:
        category = unicodedata.category(char)
        if category[0] in "LN" or (category[0] == "M" and current):
            current.append(char)
        elif current:
            found.append("".join(current))
            current = []
    if current:
        found.append("".join(current))
    return [word.lower() for word in found]


@dataclass(frozen=True)
class Term:
    """One term of a query: a word (one element) or a phrase (its words in order); with
    ``prefix``, the last word matches any word it begins."""

    words: tuple[str, ...]
    prefix: bool = False

    def fts5(self) -> str:
        # The words are letters and digits only, so the quotes cannot be closed early.
        return '"' + " ".join(self.words) + '"' + ("*" if self.prefix else "")

    def tsquery(self) -> str:
        lexemes = [f"'{w}'" for w in self.words]
        if self.prefix:
            lexemes[-1] += ":*"
        return lexemes[0] if len(lexemes) == 1 else "(" + " <-> ".join(lexemes) + ")"


def invalid_query(kind: str, message: str, position: int) -> ProblemsError:
    """422 ``invalid_search_query``: the validation shape, pointing at ``q`` and the character
    (from 0) where the problem is; never the query itself."""
    return ProblemsError(
        422,
        "invalid_search_query",
        "The search query cannot be read: " + message,
        [{"loc": ["query", "q"], "message": message, "type": kind, "position": position}],
        hint='Words, "quoted phrases" and prefixes (term*), separated by spaces; see '
        "docs/memory.md.",
    )


def parse(q: str) -> list[Term]:
    """The terms of ``q``, or raise ``invalid_search_query``. Punctuation between words
    separates them (a bare word like ``2024-03-15`` is the phrase of its three words)."""
    terms: list[Term] = []
    i, n = 0, len(q)
    while i < n:
        if q[i].isspace():
            i += 1
            continue
        start = i
        if q[i] == '"':
            end = q.find('"', i + 1)
            if end < 0:
                raise invalid_query("unterminated_phrase", "a quote is never closed", start)
            text, i = q[i + 1 : end], end + 1
            prefix = i < n and q[i] == "*"
            i += prefix
            if i < n and not q[i].isspace() and q[i] != '"':
                raise invalid_query("phrase_not_separated", "a space must follow a phrase", i)
            words = _words(text, start)
            if not words:
                raise invalid_query("empty_phrase", "a quoted phrase has no words", start)
        else:
            while i < n and not q[i].isspace() and q[i] != '"':
                i += 1
            text = q[start:i]
            prefix = text.endswith("*")
            if "*" in text.rstrip("*") or text.endswith("**"):
                raise invalid_query(
                    "misplaced_wildcard", "a wildcard (*) may only end a word: term*", start
                )
            words = _words(text.rstrip("*"), start)
            if not words:
                if prefix:
                    raise invalid_query("misplaced_wildcard", "a wildcard needs a word", start)
                continue  # punctuation alone separates words and is not a term
        if prefix and len(words[-1]) < MIN_PREFIX_CHARS:
            raise invalid_query(
                "prefix_too_short", f"a prefix needs {MIN_PREFIX_CHARS} characters", start
            )
        terms.append(Term(tuple(words), prefix))
        if len(terms) > MAX_TERMS:
            raise invalid_query("too_many_terms", f"at most {MAX_TERMS} terms", start)
    if not terms:
        raise invalid_query("no_terms", "the query has no words to search for", 0)
    if sum(len(t.words) for t in terms) > MAX_WORDS:
        raise invalid_query("too_many_terms", f"at most {MAX_WORDS} words in all", 0)
    return list(dict.fromkeys(terms))  # a term repeated adds nothing


def _words(text: str, position: int) -> list[str]:
    words = words_of(text)
    if any(len(w) > MAX_WORD_CHARS for w in words):
        raise invalid_query(
            "word_too_long", f"a word is longer than {MAX_WORD_CHARS} characters", position
        )
    return words


# --- the statements -----------------------------------------------------------------------------

_FTS = table(FTS_TABLE, column("rowid", Integer))
_ROWS = table(ROWS_TABLE, column("rowid", Integer), column("memory_id", String))
_PG = table(PG_TABLE, column("memory_id", String), column("document", TSVECTOR))

FILTERS: Final = ("identity_id", "tier", "key", "since", "until")


def _filters(names: Sequence[str]) -> list[Any]:
    conditions: list[Any] = [memories.c.project_id == bindparam("project")]
    for name in names:
        if name == "since":
            conditions.append(memories.c.created_at >= bindparam("since", type_=DateTime))
        elif name == "until":
            conditions.append(memories.c.created_at < bindparam("until", type_=DateTime))
        else:
            conditions.append(memories.c[name] == bindparam(name))
    return conditions


def _candidates(dialect: str, names: tuple[str, ...]) -> Select[Any]:
    """The ``limit`` most text-relevant memories of the project matching ``match`` (an FTS5
    expression or a tsquery text) under the filters ``names``: (id, tier, created_at, text)."""
    if dialect == "postgresql":
        # The configuration as a literal: the statement's text names it, as the index does.
        query = func.to_tsquery(
            literal_column("'simple'::regconfig"), bindparam("match", type_=String)
        )
        text = func.ts_rank(_PG.c.document, query).label("text")
        return (
            select(memories.c.id, memories.c.tier, memories.c.created_at, text)
            .select_from(_PG.join(memories, memories.c.id == _PG.c.memory_id))
            .where(_PG.c.document.op("@@")(query), *_filters(names))
            .order_by(text.desc(), memories.c.id)
            .limit(bindparam("limit"))
        )
    bm25 = func.bm25(literal_column(FTS_TABLE), *BM25_WEIGHTS, type_=Float)
    return (
        select(memories.c.id, memories.c.tier, memories.c.created_at, (-bm25).label("text"))
        .select_from(
            _FTS.join(_ROWS, _ROWS.c.rowid == _FTS.c.rowid).join(
                memories, memories.c.id == _ROWS.c.memory_id
            )
        )
        .where(literal_column(FTS_TABLE).op("MATCH")(bindparam("match")), *_filters(names))
        .order_by(bm25, memories.c.id)
        .limit(bindparam("limit"))
    )


# (dialect, filters given) -> the statement: built once, as cursors' listings are.
_STATEMENTS: dict[tuple[str, tuple[str, ...]], Select[Any]] = {}
_BY_IDS = select(memories).where(memories.c.id.in_(bindparam("ids", expanding=True)))


def _statement(dialect: str, names: tuple[str, ...]) -> Select[Any]:
    key = (dialect, names)
    statement = _STATEMENTS.get(key)
    if statement is None:
        statement = _STATEMENTS[key] = _candidates(dialect, names)
    return statement


# --- ranking ------------------------------------------------------------------------------------


def adjustment(tier: str, created_at: datetime, now: datetime) -> float:
    """The factor the text relevance is multiplied by: the tier's boost, and for an episodic
    memory ``0.5 + 0.5 * weight`` (its decay weight: 1 when stored, 1/2 after 30 days)."""
    factor = TIER_BOOST.get(tier, 1.0)
    if decays(tier):
        age_days = max(0.0, (now - created_at).total_seconds() / 86_400)
        factor *= RECENCY_FLOOR + (1 - RECENCY_FLOOR) * 0.5 ** (age_days / HALF_LIFE_DAYS)
    return factor


@dataclass(frozen=True)
class Ranked:
    memory_id: str
    all_terms: bool
    score: float
    created_at: datetime

    def order(self) -> tuple[bool, float, datetime, str]:
        return (self.all_terms, self.score, self.created_at, self.memory_id)


def rank(candidates: Sequence[Ranked]) -> list[Ranked]:
    """The ranking rule: every memory holding all the terms first, then by score (then newest,
    then by id, so equal scores keep one order from page to page)."""
    return sorted(candidates, key=Ranked.order, reverse=True)


def snippet(content: str, terms: Sequence[Term]) -> str:
    """About ``SNIPPET_CHARS`` characters of ``content`` around the first word a term matches,
    with an ellipsis where it was cut."""
    starts = []
    for term in terms:
        words = r"[^\w]+".join(re.escape(w) for w in term.words)
        tail = r"\w*" if term.prefix else r"(?!\w)"
        found = re.search(r"(?<!\w)" + words + tail, content, re.IGNORECASE)
        if found:
            starts.append(found.start())
    at = min(starts) if starts else 0
    begin = max(0, at - SNIPPET_CHARS // 3)
    if begin > 0:
        space = content.find(" ", begin, at)
        begin = space + 1 if space >= 0 else begin
    end = min(len(content), begin + SNIPPET_CHARS)
    if end < len(content):
        space = content.rfind(" ", max(at + 1, begin + SNIPPET_CHARS // 2), end)
        end = space if space > 0 else end
    text = " ".join(content[begin:end].split())
    return ("…" if begin > 0 else "") + text + ("…" if end < len(content) else "")


def _ranked(row: Any, all_terms: bool, now: datetime) -> Ranked:
    score = float(row.text) * adjustment(row.tier, row.created_at, now)
    return Ranked(row.id, all_terms, score, row.created_at)


# --- the search ---------------------------------------------------------------------------------


def search(
    conn: Connection,
    project_id: str,
    q: str,
    *,
    identity_id: str | None = None,
    tier: str | None = None,
    key: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    cursor: str | None = None,
    limit: int = 20,
    now: datetime | None = None,
) -> cursors.Page:
    """One page of the project's memories matching ``q``, best first (docs/memory.md)."""
    terms = parse(q)
    given: JsonObject = {
        name: value
        for name, value in (
            ("identity_id", identity_id),
            ("tier", tier),
            ("key", key),
            ("since", since),
            ("until", until),
        )
        if value is not None
    }
    offset = cursors.decode_offset(cursor) if cursor is not None else 0
    now = now or utcnow()
    dialect = conn.dialect.name
    statement = _statement(dialect, tuple(given))
    params = {**given, "project": project_id, "limit": DEPTH}

    def leg(joiner: str) -> list[Any]:
        if dialect == "postgresql":
            match = f" {joiner} ".join(t.tsquery() for t in terms)
        else:
            match = f" {'AND' if joiner == '&' else 'OR'} ".join(t.fts5() for t in terms)
        return list(conn.execute(statement, {**params, "match": match}))

    every = leg("&")
    # Memories holding only some terms rank after all of those holding every term, so they are
    # needed only when the latter do not fill this page and tell whether another follows.
    some = leg("|") if len(terms) > 1 and len(every) <= offset + limit else []
    holding = {row.id for row in every}
    candidates = [_ranked(row, True, now) for row in every]
    candidates += [_ranked(row, False, now) for row in some if row.id not in holding]
    ranked = rank(candidates)[:DEPTH]
    page = ranked[offset : offset + limit]
    found = conn.execute(_BY_IDS, {"ids": [hit.memory_id for hit in page]})
    rows = {row.id: MemoryRow.of(row._mapping) for row in found}
    attestations = _attestations_of(conn, [i for i, m in rows.items() if witnessed(m.tier)])
    items = []
    for hit in page:
        memory = rows[hit.memory_id]  # the same snapshot read both statements
        items.append(
            {
                "memory": view(memory, now, attestations.get(memory.id)),
                "score": round(hit.score, 6),
                "all_terms": hit.all_terms,
                "snippet": snippet(memory.content, terms),
            }
        )
    more = offset + limit < len(ranked)
    next_cursor = cursors.encode_offset(offset + limit) if more else None
    return cursors.Page(items, next_cursor)
