"""The full-text index of memories, kept by the database in the same transaction as the writes.

A memory stored and acknowledged must be searchable at once, whichever code path wrote it (a
service, a fork, a migration, a test seeding rows straight in SQL). So, like the wake's counters
(``counters.py``), the index is kept by triggers on ``memories``: an INSERT indexes the row, a
DELETE unindexes it, and an UPDATE of its id, key or content does both. Tier, identity and
times are not indexed: searches read them from ``memories`` itself, so an elevation never
touches the index.

SQLite: an FTS5 table ``memory_search_fts`` (the ``unicode61`` tokenizer with diacritics kept,
to tokenize as PostgreSQL's ``simple`` configuration does; BM25 ranks it) whose rowids come
from ``memory_search_rows`` (an INTEGER PRIMARY KEY per memory id). The FTS5 table is
contentless (``content=''``): the text lives once, in ``memories``, and the triggers hand the
old values to FTS5's ``delete`` command. A memory's own rowid is not used because VACUUM may
renumber the rowids of a table without an INTEGER PRIMARY KEY, and the index would then point
at the wrong memories.

PostgreSQL: ``memory_search`` (memory id, ``tsvector``) with a GIN index; the document is built
by ``hearth_search_document`` with the language-neutral ``simple`` configuration (no stemming,
no stop words: names and text in any language match as written), the key weighted A and the
content B. ASCII punctuation is turned into spaces first so that both databases split text the
same way (``2024-03-15`` is three words on both, ``ana@example.com`` three, not one e-mail token).

``table_statements``, ``trigger_statements``, ``drop_statements`` and ``backfill_statements``
are the one definition (migration 0012); a later change is a new migration that drops these
and creates the new set. ``bulk_insert_statements`` (SQLite) lets a bulk insert (an import)
index its memories after them, in its own transaction, from the same column lists.
"""

from __future__ import annotations

from typing import Final

FTS_TABLE: Final = "memory_search_fts"  # SQLite
ROWS_TABLE: Final = "memory_search_rows"  # SQLite: memory id -> the FTS5 rowid
PG_TABLE: Final = "memory_search"  # PostgreSQL: memory id -> tsvector

# FTS5 column weights of bm25(), in the table's column order (key, content): a word of the
# key counts twice a word of the content, as PostgreSQL's weights A and B roughly do.
BM25_WEIGHTS: Final = (2.0, 1.0)

# The columns a search filters and ranks on, copied beside the index (SQLite: in
# ``memory_search_rows``; PostgreSQL: in ``memory_search``), so that the ranking reads the index
# alone and joins ``memories`` for one page only. Joining every match to ``memories`` (a wide
# row) cost three quarters of a search at 100,000 memories on PostgreSQL.
MIRRORED: Final = ("project_id", "identity_id", "tier", "key", "created_at")
_MIRRORED = ", ".join(MIRRORED)
_NEW_MIRRORED = ", ".join(f"NEW.{c}" for c in MIRRORED)

# Whether a default search finds a memory: the head of its chain, not a tombstone, and trusted
# (migration 0013's columns; docs/memory.md, "History" and "Provenance"). Migration 0014 copies
# it beside the index as ``live``, and the history columns themselves for a search ``as_of`` a
# time, kept by the same triggers, so that a search filters on the index's own rows as it does
# on the other copied columns.
HISTORY_COLUMNS: Final = ("superseded_at", "deleted_at", "untrusted", "confirmed_at")
_HISTORY = ", ".join(HISTORY_COLUMNS)
_NEW_HISTORY = ", ".join(f"NEW.{c}" for c in HISTORY_COLUMNS)


def _live(row: str) -> str:
    return f"({row}.superseded_at IS NULL AND {row}.deleted_at IS NULL AND {row}.untrusted = FALSE)"


def _copied(row: str) -> str:
    """What the live index copies of a memory ``row`` (NEW in a trigger), in ``_LIVE_COLUMNS``'
    order."""
    return ", ".join(
        (*(f"{row}.{c}" for c in MIRRORED), *(f"{row}.{c}" for c in HISTORY_COLUMNS), _live(row))
    )


_LIVE_COLUMNS = f"{_MIRRORED}, {_HISTORY}, live"


def _text(row: str) -> str:
    """What the full-text index holds of a memory ``row``: its key and its content."""
    return f"COALESCE({row}.key, ''), {row}.content"


_OLD_VALUES = _text("OLD")
_NEW_VALUES = _text("NEW")


def _sqlite_unindex() -> str:
    return (
        f"INSERT INTO {FTS_TABLE} ({FTS_TABLE}, rowid, key, content)"
        f" SELECT 'delete', rowid, {_OLD_VALUES} FROM {ROWS_TABLE} WHERE memory_id = OLD.id;"
    )


def _sqlite_index() -> str:
    return (
        f"INSERT INTO {FTS_TABLE} (rowid, key, content)"
        f" SELECT rowid, {_NEW_VALUES} FROM {ROWS_TABLE} WHERE memory_id = NEW.id;"
    )


def _sqlite_tables() -> list[str]:
    return [
        f"CREATE TABLE {ROWS_TABLE} (rowid INTEGER PRIMARY KEY,"
        " memory_id VARCHAR(36) NOT NULL UNIQUE, project_id VARCHAR(36) NOT NULL,"
        " identity_id VARCHAR(36), tier VARCHAR(20) NOT NULL, key VARCHAR(200),"
        " created_at DATETIME NOT NULL)",
        f"CREATE VIRTUAL TABLE {FTS_TABLE} USING fts5(key, content, content='',"
        " tokenize='unicode61 remove_diacritics 0')",
    ]


def _sqlite_triggers(live: bool) -> list[str]:
    copied = ("project_id", "identity_id", "tier", "created_at")
    watched = (*copied, *HISTORY_COLUMNS) if live else copied
    moved = " OR ".join(f"OLD.{c} IS NOT NEW.{c}" for c in watched)
    kept = (*copied, *HISTORY_COLUMNS) if live else copied
    copy = ", ".join(f"{c} = NEW.{c}" for c in kept) + (f", live = {_live('NEW')}" if live else "")
    columns = _LIVE_COLUMNS if live else _MIRRORED
    values = _copied("NEW") if live else _NEW_MIRRORED
    return [
        "CREATE TRIGGER hearth_search_insert AFTER INSERT ON memories BEGIN"
        f" INSERT INTO {ROWS_TABLE} (memory_id, {columns}) VALUES (NEW.id, {values});"
        f" {_sqlite_index()} END",
        "CREATE TRIGGER hearth_search_delete AFTER DELETE ON memories BEGIN"
        f" {_sqlite_unindex()} DELETE FROM {ROWS_TABLE} WHERE memory_id = OLD.id; END",
        "CREATE TRIGGER hearth_search_update AFTER UPDATE OF id, key, content ON memories"
        " WHEN OLD.id IS NOT NEW.id OR OLD.key IS NOT NEW.key OR OLD.content IS NOT NEW.content"
        f" BEGIN {_sqlite_unindex()}"
        f" UPDATE {ROWS_TABLE} SET memory_id = NEW.id, key = NEW.key WHERE memory_id = OLD.id;"
        f" {_sqlite_index()} END",
        # The copied columns alone (an elevation moves the tier): the text is not touched.
        # Either id may be the row's: the triggers of one UPDATE run in no promised order.
        f"CREATE TRIGGER hearth_search_copy AFTER UPDATE OF {', '.join(watched)} ON memories"
        f" WHEN {moved} BEGIN UPDATE {ROWS_TABLE} SET {copy}"
        " WHERE memory_id IN (OLD.id, NEW.id); END",
    ]


# ASCII punctuation to spaces, then the simple configuration; the key weighs A, the content B.
# Not [[:punct:]]: under a C.UTF-8 locale it takes in combining marks too, and would cut a
# Devanagari word at its vowel signs. The parser's own tokens that would split text unlike
# FTS5 (e-mail addresses, hosts, paths, signed numbers, versions) are all made of ASCII.
_PUNCTUATION = "[!-/:-@[-`{-~]+"
_PG_DOCUMENT = (
    "CREATE FUNCTION hearth_search_document(key text, content text) RETURNS tsvector"
    " LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT"
    f" setweight(to_tsvector('simple', regexp_replace(coalesce(key, ''), '{_PUNCTUATION}', ' ',"
    f" 'g')), 'A') || setweight(to_tsvector('simple', regexp_replace(content, '{_PUNCTUATION}',"
    " ' ', 'g')), 'B') $$"
)


def _postgresql_tables() -> list[str]:
    return [
        f"CREATE TABLE {PG_TABLE} (memory_id VARCHAR(36) PRIMARY KEY,"
        " project_id VARCHAR(36) NOT NULL, identity_id VARCHAR(36), tier VARCHAR(20) NOT NULL,"
        " key VARCHAR(200), created_at TIMESTAMP WITHOUT TIME ZONE NOT NULL,"
        " document tsvector NOT NULL)",
        f"CREATE INDEX ix_{PG_TABLE}_document ON {PG_TABLE} USING gin (document)",
        _PG_DOCUMENT,
    ]


def _postgresql_triggers(live: bool) -> list[str]:
    columns = _LIVE_COLUMNS if live else _MIRRORED
    values = _copied("NEW") if live else _NEW_MIRRORED
    body = (
        "BEGIN"
        f" IF TG_OP <> 'INSERT' THEN DELETE FROM {PG_TABLE} WHERE memory_id = OLD.id; END IF;"
        f" IF TG_OP <> 'DELETE' THEN INSERT INTO {PG_TABLE} (memory_id, {columns}, document)"
        f" VALUES (NEW.id, {values}, hearth_search_document(NEW.key, NEW.content));"
        " END IF; RETURN NULL; END"
    )
    watched = ("id", *MIRRORED, "content", *(HISTORY_COLUMNS if live else ()))
    moved = " OR ".join(f"OLD.{c} IS DISTINCT FROM NEW.{c}" for c in watched)
    return [
        f"CREATE FUNCTION hearth_search_index() RETURNS trigger LANGUAGE plpgsql AS $$ {body} $$",
        "CREATE TRIGGER hearth_search_write AFTER INSERT OR DELETE ON memories"
        " FOR EACH ROW EXECUTE FUNCTION hearth_search_index()",
        f"CREATE TRIGGER hearth_search_update AFTER UPDATE OF {', '.join(watched)} ON memories"
        f" FOR EACH ROW WHEN ({moved}) EXECUTE FUNCTION hearth_search_index()",
    ]


def table_statements(dialect: str) -> list[str]:
    """The index's tables (and PostgreSQL's document function), empty."""
    return _postgresql_tables() if dialect == "postgresql" else _sqlite_tables()


def trigger_statements(dialect: str, *, live: bool = False) -> list[str]:
    """The triggers that keep the index in step with ``memories``: migration 0012's, or with
    ``live`` migration 0014's, which also keep the ``live`` copy."""
    if dialect == "postgresql":
        return _postgresql_triggers(live)
    return _sqlite_triggers(live)


# SQLite, a bulk insert (an import): its memories are indexed after them, in two statements,
# where the insert trigger indexes each row as it comes (a trigger program, a lookup by memory
# id and a separate FTS5 insert per row; 0.4 s of 20,000 memories against 0.09 s in bulk).
INSERT_TRIGGER: Final = "hearth_search_insert"


def bulk_insert_statements() -> tuple[str, str, list[str], str]:
    """SQLite: (drop the insert trigger; the rowids to start after, as
    ``:memories, :rows``; index the memories inserted since, as the trigger would each, in
    the same order; create the trigger again). All in the writer's one transaction, so no
    other write sees the trigger missing, and a rollback brings it back. The trigger made
    again is the live one of ``trigger_statements`` (migration 0014's)."""
    create = next(t for t in _sqlite_triggers(live=True) if f" {INSERT_TRIGGER} " in t)
    return (
        f"DROP TRIGGER {INSERT_TRIGGER}",
        f"SELECT (SELECT coalesce(max(rowid), 0) FROM memories),"
        f" (SELECT coalesce(max(rowid), 0) FROM {ROWS_TABLE})",
        [
            f"INSERT INTO {ROWS_TABLE} (memory_id, {_LIVE_COLUMNS})"
            f" SELECT m.id, {_copied('m')} FROM memories m WHERE m.rowid > :memories"
            " ORDER BY m.rowid",
            f"INSERT INTO {FTS_TABLE} (rowid, key, content)"
            f" SELECT r.rowid, {_text('m')} FROM {ROWS_TABLE} r"
            " JOIN memories m ON m.id = r.memory_id WHERE r.rowid > :rows",
        ],
        create,
    )


def drop_trigger_statements(dialect: str) -> list[str]:
    """The triggers alone (the tables and PostgreSQL's document function stay)."""
    if dialect == "postgresql":
        return ["DROP FUNCTION IF EXISTS hearth_search_index() CASCADE"]
    return [
        f"DROP TRIGGER IF EXISTS hearth_search_{name}"
        for name in ("insert", "delete", "update", "copy")
    ]


def _added_columns(dialect: str) -> list[tuple[str, str]]:
    moment = "TIMESTAMP WITHOUT TIME ZONE" if dialect == "postgresql" else "DATETIME"
    return [
        ("superseded_at", moment),
        ("deleted_at", moment),
        ("untrusted", "BOOLEAN NOT NULL DEFAULT FALSE"),
        ("confirmed_at", moment),
        ("live", "BOOLEAN NOT NULL DEFAULT TRUE"),
    ]


def live_column_statements(dialect: str) -> list[str]:
    """Migration 0014: the history columns and ``live`` beside the index, filled from the
    memories stored."""
    table = PG_TABLE if dialect == "postgresql" else ROWS_TABLE
    copied = ", ".join(f"{c} = m.{c}" for c in HISTORY_COLUMNS)
    added = [
        f"ALTER TABLE {table} ADD COLUMN {name} {kind}" for name, kind in _added_columns(dialect)
    ]
    if dialect == "postgresql":
        fill = (
            f"UPDATE {table} SET {copied}, live = {_live('m')} FROM memories m"
            f" WHERE m.id = {table}.memory_id"
        )
    else:
        fill = (
            f"UPDATE {table} SET ({_HISTORY}, live) = (SELECT"
            f" {', '.join(f'm.{c}' for c in HISTORY_COLUMNS)}, {_live('m')}"
            f" FROM memories m WHERE m.id = {table}.memory_id)"
        )
    return [*added, fill]


def drop_live_column_statements(dialect: str) -> list[str]:
    table = PG_TABLE if dialect == "postgresql" else ROWS_TABLE
    return [f"ALTER TABLE {table} DROP COLUMN {name}" for name, _ in _added_columns(dialect)]


def backfill_statements(dialect: str) -> list[str]:
    """Index the memories already stored, once (migration 0012, before the triggers exist)."""
    if dialect == "postgresql":
        return [
            f"INSERT INTO {PG_TABLE} (memory_id, {_MIRRORED}, document)"
            f" SELECT id, {_MIRRORED}, hearth_search_document(key, content) FROM memories"
        ]
    return [
        f"INSERT INTO {ROWS_TABLE} (memory_id, {_MIRRORED})"
        f" SELECT id, {_MIRRORED} FROM memories ORDER BY created_at, id",
        f"INSERT INTO {FTS_TABLE} (rowid, key, content) SELECT r.rowid, COALESCE(m.key, ''),"
        f" m.content FROM {ROWS_TABLE} r JOIN memories m ON m.id = r.memory_id",
    ]


def drop_statements(dialect: str) -> list[str]:
    if dialect == "postgresql":
        return [
            "DROP FUNCTION IF EXISTS hearth_search_index() CASCADE",
            "DROP FUNCTION IF EXISTS hearth_search_document(text, text)",
            f"DROP TABLE IF EXISTS {PG_TABLE}",
        ]
    return [
        "DROP TRIGGER IF EXISTS hearth_search_insert",
        "DROP TRIGGER IF EXISTS hearth_search_delete",
        "DROP TRIGGER IF EXISTS hearth_search_update",
        "DROP TRIGGER IF EXISTS hearth_search_copy",
        f"DROP TABLE IF EXISTS {FTS_TABLE}",
        f"DROP TABLE IF EXISTS {ROWS_TABLE}",
    ]


def indexed_count_query(dialect: str) -> str:
    """How many memories the index holds (each memory is indexed exactly once)."""
    return f"SELECT count(*) FROM {PG_TABLE if dialect == 'postgresql' else ROWS_TABLE}"


__all__ = [
    "BM25_WEIGHTS",
    "FTS_TABLE",
    "HISTORY_COLUMNS",
    "MIRRORED",
    "PG_TABLE",
    "ROWS_TABLE",
    "backfill_statements",
    "drop_live_column_statements",
    "drop_statements",
    "drop_trigger_statements",
    "indexed_count_query",
    "live_column_statements",
    "table_statements",
    "trigger_statements",
]
