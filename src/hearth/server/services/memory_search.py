"""Memory search: a query parsed here, the full-text index (``db/search_index``), the ranking
rule (docs/memory.md).

The query ``q`` is words, ``"quoted phrases"`` and prefixes (``term*``). It is parsed here into
terms of plain words (letters and digits), and the index's own syntax (an FTS5 expression, a
``tsquery``) is written from those terms: the caller's text never reaches either parser, so
no input can be a syntax error there, only a 422 ``invalid_search_query`` from here.

Ranking: every memory matching at least one term is a match. A memory that holds every term
comes before every one that does not (``all_terms``); within each group the score decides:
the text relevance (BM25 on SQLite, ``ts_rank`` on PostgreSQL) times the tier's boost times the
recency factor of an episodic memory. The database ranks every match and returns one page
joined to its memories, in one statement held to the caller's project.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from sqlalchemy import (
    Boolean,
    Connection,
    DateTime,
    Float,
    Integer,
    String,
    and_,
    bindparam,
    case,
    column,
    exists,
    false,
    func,
    literal,
    literal_column,
    or_,
    select,
    table,
    true,
)
from sqlalchemy.dialects.postgresql import TSVECTOR
from sqlalchemy.types import TypeDecorator

from ..db import direct
from ..db.engine import utcnow
from ..db.rows import MemoryRow
from ..db.search_index import BM25_WEIGHTS, FTS_TABLE, PG_TABLE, ROWS_TABLE
from ..db.tables import memories, memory_attestations
from ..errors import ProblemsError
from ..json_types import JsonObject
from ..memory_tiers import decays, witnessed
from . import cursors
from .memories import HALF_LIFE_DAYS, _attestations_of, view

MAX_TERMS: Final = 16
MAX_WORDS: Final = 32  # words of all terms together (a phrase's words count one each)
MAX_WORD_CHARS: Final = 100
MIN_PREFIX_CHARS: Final = 2
SNIPPET_CHARS: Final = 160

# The score's adjustments (docs/memory.md, "Ranking"): elevated tiers rank higher, and an
# episodic memory's factor falls from 1 when stored towards 0.5 (0.75 at 30 days old).
TIER_BOOST: Final = {"episodic": 1.0, "foundational": 1.25, "constitutive": 1.5}
RECENCY_FLOOR: Final = 0.5

# The semantic leg (docs/memory.md, "Semantic search"): the nearest FUSION_DEPTH memories by
# meaning and at least as many of the full-text ranking are fused by reciprocal-rank fusion,
# each ranking adding 1 / (RRF_K + rank) to a memory's score (k = 60, as Cormack, Clarke and
# Büttcher proposed it).
FUSION_DEPTH: Final = 100
RRF_K: Final = 60


@dataclass(frozen=True)
class Meaning:
    """The query's meaning under ``model``: ``nearest(n)`` gives up to n memories of the
    project nearest it (id, cosine), best first, whether or not a search may return them; a
    search given one keeps those it may and fuses the two rankings."""

    model: str
    nearest: Callable[[int], list[tuple[str, float]]]


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


def _history_columns() -> list[Any]:
    """The history columns migration 0014 copies beside the index, and ``live``."""
    return [
        column("superseded_at", DateTime),
        column("deleted_at", DateTime),
        column("untrusted", Boolean),
        column("confirmed_at", DateTime),
        column("live", Boolean),
    ]


_FTS = table(FTS_TABLE, column("rowid", Integer))
_ROWS = table(
    ROWS_TABLE,
    column("rowid", Integer),
    column("memory_id", String),
    column("project_id", String),
    column("identity_id", String),
    column("tier", String),
    column("key", String),
    column("created_at", DateTime),
    *_history_columns(),
)
_PG = table(
    PG_TABLE,
    column("memory_id", String),
    column("project_id", String),
    column("identity_id", String),
    column("tier", String),
    column("key", String),
    column("created_at", DateTime),
    *_history_columns(),
    column("document", TSVECTOR),
)
# The configuration as a literal: the statement names it, as the index does.
_SIMPLE: Any = literal_column("'simple'::regconfig")


def _filters(names: Sequence[str], source: Any) -> list[Any]:
    """The project and the filters ``names`` on ``source``'s columns: the index's own copy
    of them (``search_index.MIRRORED``)."""
    conditions: list[Any] = [source.c.project_id == bindparam("project")]
    if "as_of" not in names:
        # What a default search finds: heads of chains, no tombstone, trusted (migration 0014).
        conditions.append(source.c.live == true())
    for name in names:
        if name == "as_of":
            # As the memories stood then, as the listing and the wake read them: created by
            # then, not yet superseded, not deleted (a tombstone has no text left to find), and
            # trusted then (born trusted, or confirmed by then).
            at = bindparam("as_of", type_=DateTime)
            conditions += [
                source.c.created_at <= at,
                or_(source.c.superseded_at.is_(None), source.c.superseded_at > at),
                source.c.deleted_at.is_(None),
                or_(
                    and_(source.c.untrusted == false(), source.c.confirmed_at.is_(None)),
                    source.c.confirmed_at <= at,
                ),
            ]
        elif name == "since":
            conditions.append(source.c.created_at >= bindparam("since", type_=DateTime))
        elif name == "until":
            conditions.append(source.c.created_at < bindparam("until", type_=DateTime))
        else:
            conditions.append(source.c[name] == bindparam(name))
    return conditions


_UNIX_EPOCH_JULIAN_DAY: Final = 2_440_587.5
_EPOCH: Final = datetime(1970, 1, 1)


class _JulianDay(TypeDecorator[datetime]):
    """A (naive UTC) time bound as its Julian day number, the number SQLite's ``julianday()``
    gives: the search's "now" is then read once, where ``julianday(:now)`` parsed its text
    again for every match ranked."""

    impl = Float
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> float | None:
        if value is None:
            return None
        if value.tzinfo is not None:
            value = value.astimezone(UTC).replace(tzinfo=None)
        return (value - _EPOCH).total_seconds() / 86_400.0 + _UNIX_EPOCH_JULIAN_DAY


def _factor(dialect: str, source: Any) -> Any:
    """The score's adjustment as SQL: the tier's boost, and for a decaying tier the recency
    factor ``RECENCY_FLOOR + (1 - RECENCY_FLOOR) / (1 + age_days / HALF_LIFE_DAYS)``."""
    if dialect == "postgresql":
        now = bindparam("now", type_=DateTime)
        seconds = func.extract("epoch", now - source.c.created_at)
        age = func.greatest(0.0, seconds / 86_400.0)
    else:
        # julianday reads the stored text of a time; no math functions needed (not every
        # SQLite is built with them).
        now = bindparam("now", type_=_JulianDay)
        age = func.max(0.0, now - func.julianday(source.c.created_at))
    recency = RECENCY_FLOOR + (1 - RECENCY_FLOOR) / (1.0 + age / HALF_LIFE_DAYS)
    whens = [
        (source.c.tier == tier, recency * boost if decays(tier) else literal(boost))
        for tier, boost in TIER_BOOST.items()
    ]
    return case(*whens, else_=literal(1.0))


def _ranked(dialect: str, names: tuple[str, ...], *, one_term: bool) -> Any:
    """One page of the matches under the filters ``names`` (``limit``, ``offset``), as
    (memory id, score, holds every term, created_at), in the ranking rule's order: the memories
    matching ``all`` (every term) first, then those matching ``match`` (some term); each
    group by score. With ``one_term``, ``match`` is the only term and every match holds it."""
    if dialect == "postgresql":
        query = func.to_tsquery(_SIMPLE, bindparam("match", type_=String))
        text: Any = func.ts_rank(_PG.c.document, query)
        source: Any = _PG
        columns = _PG
        conditions = [_PG.c.document.op("@@")(query)]
        every: Any = (
            true()
            if one_term
            else _PG.c.document.op("@@", return_type=Boolean)(
                func.to_tsquery(_SIMPLE, bindparam("all", type_=String))
            )
        )
    else:
        text = -func.bm25(literal_column(FTS_TABLE), *BM25_WEIGHTS, type_=Float)
        source = _FTS.join(_ROWS, _ROWS.c.rowid == _FTS.c.rowid)
        columns = _ROWS
        conditions = [literal_column(FTS_TABLE).op("MATCH")(bindparam("match"))]
        if one_term:
            every = true()
        else:
            # A second cursor on the index, read once into a set: the rows holding every term.
            fts = _FTS.alias("every_term")
            holding = select(fts.c.rowid).where(
                literal_column(f"every_term.{FTS_TABLE}").op("MATCH")(bindparam("all"))
            )
            every = _FTS.c.rowid.in_(holding)
    conditions += _filters(names, columns)
    score = (text * _factor(dialect, columns)).label("score")
    every = every.label("every")
    return (
        select(columns.c.memory_id.label("id"), score, every, columns.c.created_at)
        .select_from(source)
        .where(*conditions)
        .order_by(
            every.desc(), score.desc(), columns.c.created_at.desc(), columns.c.memory_id.desc()
        )
        .limit(bindparam("limit"))
        .offset(bindparam("offset"))
    )


def _page(dialect: str, names: tuple[str, ...], one_term: bool) -> Any:
    """The page's memories joined to their ranks, in the ranking's order: one statement per
    search (``memories``, a wide row, is read for the page alone)."""
    hits = _ranked(dialect, names, one_term=one_term).subquery("hits")
    return (
        select(memories, hits.c.score, hits.c.every, *_attested(dialect))
        .join_from(hits, memories, memories.c.id == hits.c.id)
        .order_by(
            hits.c.every.desc(), hits.c.score.desc(), hits.c.created_at.desc(), hits.c.id.desc()
        )
    )


def _attested(dialect: str) -> list[Any]:
    """On SQLite, whether each memory of the page has attestations, read beside it: most
    have none, and the page then needs no second statement for them (an expanding ``IN``,
    compiled again at every call, cost a fifth of the shortcut's time in Python)."""
    if dialect != "sqlite":
        return []
    held = exists().where(memory_attestations.c.memory_id == memories.c.id)
    return [held.label("attested")]


def _admitted(dialect: str, names: tuple[str, ...]) -> Any:
    """Which of the memories ``ids`` a search under the filters ``names`` may return: the
    semantic leg's candidates held to the full-text leg's filters, on the index's rows."""
    columns = _PG if dialect == "postgresql" else _ROWS
    return select(columns.c.memory_id).where(
        columns.c.memory_id.in_(bindparam("ids", expanding=True)), *_filters(names, columns)
    )


# (kind, dialect, filters given, one term) -> the statement: built once, as listings' are.
_STATEMENTS: dict[tuple[str, str, tuple[str, ...], bool], Any] = {}


def _build(kind: str, dialect: str, names: tuple[str, ...], one_term: bool) -> Any:
    if kind == "ranked":
        return _ranked(dialect, names, one_term=one_term)
    if kind == "admitted":
        return _admitted(dialect, names)
    return _page(dialect, names, one_term)


def _statement(dialect: str, names: tuple[str, ...], one_term: bool, kind: str = "page") -> Any:
    key = (kind, dialect, names, one_term)
    statement = _STATEMENTS.get(key)
    if statement is None:
        statement = _STATEMENTS[key] = _build(kind, dialect, names, one_term)
    return statement


# --- the search ---------------------------------------------------------------------------------


def first_match(terms: Sequence[Term]) -> re.Pattern[str]:
    """One pattern finding the first place any term matches (made once per search)."""
    alternatives = []
    for term in terms:
        words = r"\W+".join(re.escape(w) for w in term.words)
        alternatives.append(words + (r"\w*" if term.prefix else r"(?!\w)"))
    return re.compile(r"(?<!\w)(?:" + "|".join(alternatives) + ")", re.IGNORECASE)


def snippet(content: str, terms: Sequence[Term] | re.Pattern[str]) -> str:
    """About ``SNIPPET_CHARS`` characters of ``content`` around the first word a term matches,
    with an ellipsis where it was cut."""
    pattern = terms if isinstance(terms, re.Pattern) else first_match(terms)
    found = pattern.search(content)
    at = found.start() if found else 0
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
    as_of: datetime | None = None,
    cursor: str | None = None,
    limit: int = 20,
    now: datetime | None = None,
    meaning: Meaning | None = None,
) -> cursors.Page:
    """One page of the project's memories matching ``q``, best first (docs/memory.md); with
    ``as_of``, among the memories as they stood then, their recency counted from then; with
    ``meaning``, the full-text and the meaning rankings fused."""
    terms = parse(q)
    given: JsonObject = {
        name: value
        for name, value in (
            ("identity_id", identity_id),
            ("tier", tier),
            ("key", key),
            ("since", since),
            ("until", until),
            ("as_of", as_of),
        )
        if value is not None
    }
    offset = cursors.decode_offset(cursor) if cursor is not None else 0
    now = as_of or now or utcnow()
    dialect = conn.dialect.name
    names = tuple(given)
    if dialect == "postgresql":
        every_match = " & ".join(t.tsquery() for t in terms)
        some_match = " | ".join(t.tsquery() for t in terms)
    else:
        every_match = " AND ".join(t.fts5() for t in terms)
        some_match = " OR ".join(t.fts5() for t in terms)
    params: JsonObject = {**given, "project": project_id, "now": now}
    if meaning is not None:
        matches = {"match": some_match, "all": every_match}
        return _fused(
            conn,
            terms,
            names=names,
            params={**params, **matches},
            meaning=meaning,
            window=(offset, limit),
        )

    # The rule: every memory holding every term, best first; then those holding some. One
    # row past the page tells whether another page follows.
    matches = {"match": some_match, "all": every_match}
    one_term = len(terms) == 1
    ranked = _top_first(conn, project_id, one_term, {**params, **matches}, (offset, limit))
    page: list[_Hit]
    if ranked is not None:
        page, more = ranked[:limit], len(ranked) > limit
        memories_of = [_memory_of_hit(hit) for hit in page]
    else:
        found = conn.execute(
            _statement(dialect, names, one_term),
            {**params, **matches, "limit": limit + 1, "offset": offset},
        ).all()
        more = len(found) > limit
        page = [
            _Hit(row.id, row.score, bool(row.every), attested=_attested_row(row))
            for row in found[:limit]
        ]
        memories_of = [_memory_of(row) for row in found[:limit]]
    attestations = _attestations_of(
        conn,
        [
            m.id
            for m, hit in zip(memories_of, page, strict=True)
            if hit.attested and witnessed(m.tier)
        ],
    )
    pattern = first_match(terms)
    items = [
        {
            "memory": view(memory, now, attestations.get(memory.id)),
            "score": round(float(hit.score), 6),
            "all_terms": hit.every,
            "similarity": None,
            "snippet": snippet(memory.content, pattern),
        }
        for memory, hit in zip(memories_of, page, strict=True)
    ]
    next_cursor = cursors.encode_offset(offset + limit) if more else None
    return cursors.Page(items, next_cursor)


def _fused(
    conn: Connection,
    terms: Sequence[Term],
    *,
    names: tuple[str, ...],
    params: JsonObject,
    meaning: Meaning,
    window: tuple[int, int],
) -> cursors.Page:
    """One page of the fusion of the full-text ranking (to a depth reaching past the page) and
    the ``FUSION_DEPTH`` nearest memories by meaning, under the same filters. The rule holds:
    every memory holding every term comes first, then the rest, each group by fused score.
    Pages are consistent: a memory the full-text ranking reaches only at a deeper page has a
    fused score below every memory already fused."""
    dialect = conn.dialect.name
    offset, limit = window
    depth = max(FUSION_DEPTH, offset + limit + 1)
    ranked = conn.execute(
        _statement(dialect, names, len(terms) == 1, "ranked"),
        {**params, "limit": depth + 1, "offset": 0},
    ).all()
    deeper = len(ranked) > depth
    near = _nearest_admitted(conn, _statement(dialect, names, False, "admitted"), params, meaning)
    fused: dict[str, float] = {}
    every: dict[str, bool] = {}
    for rank, row in enumerate(ranked[:depth], 1):
        fused[row.id] = 1 / (RRF_K + rank)
        every[row.id] = bool(row.every)
    similarity: dict[str, float] = {}
    for rank, (memory_id, cosine) in enumerate(near, 1):
        fused[memory_id] = fused.get(memory_id, 0.0) + 1 / (RRF_K + rank)
        similarity[memory_id] = cosine
    # A memory found by meaning alone holds no term, or (when every memory the full-text
    # ranking reached so far holds every term) comes after them until a deeper page reaches it.
    order = sorted(fused, key=lambda i: (not every.get(i, False), -fused[i], i))
    chosen = order[offset : offset + limit]
    more = deeper or len(order) > offset + limit
    rows = {row.id: MemoryRow.of(row._mapping) for row in conn.execute(_BY_IDS, {"ids": chosen})}
    memories_of = [rows[i] for i in chosen]
    attestations = _attestations_of(conn, [m.id for m in memories_of if witnessed(m.tier)])
    pattern = first_match(terms)
    now = params["now"]
    assert isinstance(now, datetime)
    items = [
        {
            "memory": view(memory, now, attestations.get(memory.id)),
            "score": round(fused[memory.id], 6),
            "all_terms": every.get(memory.id, False),
            "similarity": round(similarity[memory.id], 6) if memory.id in similarity else None,
            "snippet": snippet(memory.content, pattern),
        }
        for memory in memories_of
    ]
    return cursors.Page(items, cursors.encode_offset(offset + limit) if more else None)


# --- SQLite's shortcut: the best by text relevance first ---------------------------------------

# The largest factor a memory's score can have (the tier's boost; recency only lowers it).
_MOST: Final = max(TIER_BOOST.values())
TOP_FIRST: Final = 256  # candidates by text relevance the shortcut starts from
# After two misses in a row, a project's searches skip the shortcut this long: a project whose
# memories are few in a shared index misses every time, and pays the shortcut and the full
# ranking; a single miss (one search in a hundred at 100,000 memories) says nothing of the next.
_MISSES_BEFORE_REST: Final = 16
_MISSED: Final = -1  # the project's last search missed
_skipping: dict[str, int] = {}  # project -> searches left to skip, or _MISSED


@dataclass(frozen=True)
class _Hit:
    """A ranked memory: its id, score, whether it holds every term, and (the shortcut reads
    it in the same statement) the memory itself."""

    id: str
    score: float
    every: bool
    memory: MemoryRow | None = None
    attested: bool = True  # whether it may have attestations (False: read, and it has none)


def _attested_row(row: Any) -> bool:
    # SQLite's statements say whether a memory has attestations; PostgreSQL's do not.
    return bool(getattr(row, "attested", True))


_COLUMNS: Final = len(memories.c)


def _memory_of_hit(hit: _Hit) -> MemoryRow:
    assert hit.memory is not None  # the shortcut's hits carry their memory
    return hit.memory


def _memory_of(row: Any) -> MemoryRow:
    # The row's first columns are the memory's, in the table's order (test_typed_rows holds
    # MemoryRow to that order).
    return MemoryRow(*row[:_COLUMNS])


def _top_first(
    conn: Connection,
    project_id: str,
    one_term: bool,
    params: JsonObject,
    window: tuple[int, int],
) -> list[_Hit] | None:
    """The page (and one more) by the ranking rule, on SQLite with no filter but the project's,
    from the ``TOP_FIRST`` matches of best text relevance alone; or None when those cannot
    prove the page, and the full ranking must decide.

    Ranking every match costs a lookup of its copied columns (project, tier, time, live) per
    match, about as much again as FTS5's own ``bm25()`` over them (docs/performance.md,
    "Memory search"). But a score is the relevance times a factor of at most ``_MOST``: once the
    page's last memory scores above ``_MOST`` times the least relevance among the candidates,
    no memory outside them can rank on the page, and only the candidates need their columns.
    The memories holding every term (an ``AND`` match: few, and cheap) are ranked whole first,
    as the rule puts them first. Exact: the same order, scores and pages as the full ranking
    (tests/server/test_memory_search.py compares the two)."""
    if conn.dialect.name != "sqlite" or params.keys() - {"project", "now", "match", "all"}:
        return None
    skipped = _skipping.get(project_id, 0)
    if skipped > 0:
        _skipping[project_id] = skipped - 1
        return None
    offset, limit = window
    wanted = offset + limit + 1
    every: list[_Hit] = []
    if not one_term:
        every = [
            _Hit(row.id, float(row.score), True, _memory_of(row), _attested_row(row))
            for row in direct.select_rows(
                conn,
                _statement("sqlite", (), True),
                {**params, "match": params["all"], "limit": wanted, "offset": 0},
            )
        ]
        if len(every) == wanted:
            _skipping.pop(project_id, None)
            return every[offset:]
    needed = wanted - len(every)
    # The candidates holding every term are the ones ranked above: left out here, so the
    # statement returns enough rows (``wanted``) for the rest to fill its part of the page.
    held = {hit.id for hit in every}
    # On the driver's cursor: Core's own time per execution of this statement (its cache key,
    # built by walking it) was a twentieth of the search (docs/performance.md).
    found = direct.select_rows(conn, _TOP, {**params, "k": TOP_FIRST, "needed": wanted})
    rest = [
        _Hit(row.id, float(row.score), one_term, _memory_of(row), _attested_row(row))
        for row in found
        if row.id is not None and row.id not in held
    ][:needed]
    # Every candidate counted, and the least relevant of them, whether or not admitted.
    if found and found[0].candidates == TOP_FIRST:  # more matches may lie beyond them
        least = -float(found[0].least)
        if len(rest) < needed or rest[needed - 1].score <= _MOST * least:
            _skipping[project_id] = _MISSES_BEFORE_REST if skipped == _MISSED else _MISSED
            return None
    _skipping.pop(project_id, None)
    return (every + rest)[offset:]


def _top_statement() -> Any:
    """Among the ``k`` matches of ``match`` best by text relevance alone (``b``, FTS5's
    ``bm25()``, lower is better), the ``needed`` best by score that the project's search may
    return, with their memories, each row also carrying how many candidates there were and the
    least relevance among them. A row with a null id stands for a candidate not admitted,
    after the others."""
    relevance = func.bm25(literal_column(FTS_TABLE), *BM25_WEIGHTS, type_=Float).label("b")
    top = (
        select(_FTS.c.rowid, relevance)
        .where(literal_column(FTS_TABLE).op("MATCH")(bindparam("match")))
        .order_by(relevance)
        .limit(bindparam("k"))
        .subquery("top")
    )
    # The same arithmetic as _ranked's score: (-bm25) times the factor.
    score = ((-top.c.b) * _factor("sqlite", _ROWS)).label("score")
    admitted = [_ROWS.c.rowid == top.c.rowid, *_filters((), _ROWS)]
    ranked = (
        select(
            _ROWS.c.memory_id.label("ranked_id"),
            _ROWS.c.created_at.label("made"),
            score,
            func.count().over().label("candidates"),
            func.max(top.c.b).over().label("least"),
        )
        .select_from(top.outerjoin(_ROWS, and_(*admitted)))
        .order_by(
            _ROWS.c.memory_id.is_(None),  # the admitted first
            score.desc(),
            _ROWS.c.created_at.desc(),
            _ROWS.c.memory_id.desc(),
        )
        .limit(bindparam("needed"))
        .subquery("ranked")
    )
    # The page's memories read in the same statement (a null row for one not admitted).
    return (
        select(memories, ranked.c.score, ranked.c.candidates, ranked.c.least, *_attested("sqlite"))
        .select_from(ranked.outerjoin(memories, memories.c.id == ranked.c.ranked_id))
        .order_by(
            ranked.c.ranked_id.is_(None),
            ranked.c.score.desc(),
            ranked.c.made.desc(),
            ranked.c.ranked_id.desc(),
        )
    )


_TOP = _top_statement()


def _nearest_admitted(
    conn: Connection, admitted: Any, params: JsonObject, meaning: Meaning
) -> list[tuple[str, float]]:
    """The ``FUSION_DEPTH`` memories nearest the query that the search may return: the
    nearest of the project, four times as many as needed, then sixteen, and so on, until
    enough are admitted or none is left."""
    wanted = FUSION_DEPTH * 2
    while True:
        near = meaning.nearest(wanted)
        found: set[str] = set()
        ids = [memory_id for memory_id, _ in near]
        for start in range(0, len(ids), ADMIT_CHUNK):
            chunk = ids[start : start + ADMIT_CHUNK]
            found.update(conn.execute(admitted, {**params, "ids": chunk}).scalars())
        kept = [(memory_id, cosine) for memory_id, cosine in near if memory_id in found]
        if len(kept) >= FUSION_DEPTH or len(near) < wanted:
            return kept[:FUSION_DEPTH]
        wanted *= 4


ADMIT_CHUNK = 500  # ids per statement: well under every driver's limit on parameters

_BY_IDS = select(memories).where(memories.c.id.in_(bindparam("ids", expanding=True)))
