"""Row counts the wake shows, kept by the database in the same transaction as the writes.

A count read with ``count(*)`` costs as much as the rows it counts: at 100,000 memories the
wake's per-tier counts alone took 10 ms on SQLite and 52 ms on PostgreSQL. Here each count the
wake shows is one row of ``wake_counts`` (project, scope, kind, total), kept by triggers that the
database runs inside the transaction of every INSERT, DELETE and UPDATE of the counted table,
whichever code path writes it (a service, a fork, a migration, a test seeding rows). A count is
therefore never ahead of or behind the rows a reader sees in the same snapshot, and reading one
is a primary-key lookup.

``COUNTED`` is the one definition: each entry names a table, the column holding the project,
the column (if any) that scopes the count (an identity; ``''`` when the column is NULL or the
count is the project's), the kind (a constant, optionally followed by a column's value, as the
memory tiers are), and the condition a row must meet to be counted. ``create_statements`` and
``drop_statements`` turn it into SQL for SQLite and PostgreSQL; ``backfill_statements`` counts
the rows already there, once, when the triggers are created (migration 0010).

Contention: an insert holds its counter row until its transaction commits, so concurrent
writers of the same (project, scope, kind) commit one after another. Counters are scoped per
identity where the wake reads them per identity (memories, attestations), so only writes to
one identity's rows of one kind queue on each other; a project-wide row would make every
memory write of the project queue, and transactions touching two scopes in opposite orders
could deadlock on it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Counted:
    """One kind of count: rows of ``table`` meeting ``where``, per project and scope."""

    table: str
    kind: str  # the stored kind, or its prefix when ``kind_column`` is set
    project: str  # the column holding the project id
    scope: str | None = None  # the column scoping the count (NULL counts under '')
    kind_column: str | None = None  # its value is appended to ``kind`` after a colon
    where: tuple[str, ...] = ()  # conditions on the row, ``{row}`` standing for NEW or OLD

    @property
    def name(self) -> str:
        return "hearth_count_" + self.kind.replace(":", "_")

    @property
    def columns(self) -> tuple[str, ...]:
        """The columns whose change can move a row from one counter to another."""
        named = [self.project, self.scope, self.kind_column, *_columns_of(self.where)]
        return tuple(dict.fromkeys(c for c in named if c is not None))

    def kind_sql(self, row: str) -> str:
        if self.kind_column is None:
            return f"'{self.kind}'"
        return f"'{self.kind}:' || {row}.{self.kind_column}"

    def scope_sql(self, row: str) -> str:
        return f"COALESCE({row}.{self.scope}, '')" if self.scope is not None else "''"

    def where_sql(self, row: str) -> str:
        conditions = [f"{row}.{self.project} IS NOT NULL"]
        conditions += [condition.format(row=row) for condition in self.where]
        return " AND ".join(conditions)


def _columns_of(conditions: tuple[str, ...]) -> list[str]:
    """The columns named in conditions written as ``{row}.column ...``."""
    found = []
    for condition in conditions:
        for part in condition.split("{row}.")[1:]:
            found.append(part.split()[0])
    return found


# Migration 0010 counted every memory row; migration 0013 counts only the memories the wake can
# select (the head of a chain, not a tombstone, trusted): the old definition is kept for 0010.
MEMORIES_0010 = Counted("memories", "memories", "project_id", "identity_id", kind_column="tier")
MEMORIES = Counted(
    "memories",
    "memories",
    "project_id",
    "identity_id",
    kind_column="tier",
    where=(
        "{row}.superseded_at IS NULL",
        "{row}.deleted_at IS NULL",
        "{row}.untrusted = FALSE",
    ),
)
RUNTIMES = Counted("runtimes", "runtimes", "project_id", where=("{row}.deleted_at IS NULL",))
ACTIVE_IDENTITIES = Counted(
    "identities", "identities:active", "project_id", where=("{row}.status = 'active'",)
)
TEMPLATES = Counted("templates", "templates", "publisher_project_id")
BLOCKS = Counted("adds_blocks", "adds_blocks", "project_id")
DOCUMENTS = Counted("adds_documents", "adds_documents", "project_id")
VAULT = Counted("vault_secrets", "vault", "project_id")
RECEIVED = Counted("attestations", "attestations:received", "project_id", "subject_identity_id")
GIVEN = Counted(
    "attestations",
    "attestations:given",
    "project_id",
    "attester_identity_id",
    where=("{row}.attester_identity_id IS NOT NULL",),
)

COUNTED: tuple[Counted, ...] = (
    MEMORIES,
    RUNTIMES,
    ACTIVE_IDENTITIES,
    TEMPLATES,
    BLOCKS,
    DOCUMENTS,
    VAULT,
    RECEIVED,
    GIVEN,
)
# What migration 0010 created, as it created it (its memory count counted every row).
COUNTED_0010: tuple[Counted, ...] = (MEMORIES_0010, *COUNTED[1:])


def _decrement(counted: Counted, row: str = "OLD") -> str:
    return (
        "UPDATE wake_counts SET total = total - 1"
        f" WHERE project_id = {row}.{counted.project} AND scope = {counted.scope_sql(row)}"
        f" AND kind = {counted.kind_sql(row)} AND {counted.where_sql(row)};"
    )


def _increment(counted: Counted, row: str = "NEW") -> str:
    return (
        "INSERT INTO wake_counts (project_id, scope, kind, total)"
        f" SELECT {row}.{counted.project}, {counted.scope_sql(row)}, {counted.kind_sql(row)}, 1"
        f" WHERE {counted.where_sql(row)}"
        " ON CONFLICT (project_id, scope, kind) DO UPDATE SET total = wake_counts.total + 1;"
    )


def _moved(counted: Counted, distinct: str) -> str:
    return " OR ".join(f"OLD.{c} {distinct} NEW.{c}" for c in counted.columns)


def _sqlite(counted: Counted) -> list[str]:
    # SQLite's INSERT ... SELECT needs its WHERE before ON CONFLICT to parse as an upsert;
    # where_sql always gives one.
    name, table = counted.name, counted.table
    columns = ", ".join(counted.columns)
    return [
        f"CREATE TRIGGER {name}_insert AFTER INSERT ON {table} BEGIN {_increment(counted)} END",
        f"CREATE TRIGGER {name}_delete AFTER DELETE ON {table} BEGIN {_decrement(counted)} END",
        f"CREATE TRIGGER {name}_update AFTER UPDATE OF {columns} ON {table}"
        f" WHEN {_moved(counted, 'IS NOT')}"
        f" BEGIN {_decrement(counted)} {_increment(counted)} END",
    ]


def _postgresql(counted: Counted, per_statement: bool) -> list[str]:
    name, table = counted.name, counted.table
    columns = ", ".join(counted.columns)
    body = (
        "BEGIN"
        f" IF TG_OP <> 'INSERT' THEN {_decrement(counted)} END IF;"
        f" IF TG_OP <> 'DELETE' THEN {_increment(counted)} END IF;"
        " RETURN NULL; END"
    )
    update = (
        f"CREATE TRIGGER {name}_update AFTER UPDATE OF {columns} ON {table} FOR EACH ROW"
        f" WHEN ({_moved(counted, 'IS DISTINCT FROM')}) EXECUTE FUNCTION {name}()"
    )
    function = f"CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$ {body} $$"
    if not per_statement:
        return [
            function,
            f"CREATE TRIGGER {name}_write AFTER INSERT OR DELETE ON {table}"
            f" FOR EACH ROW EXECUTE FUNCTION {name}()",
            update,
        ]
    # Inserts and deletes counted once per statement, grouped, from its transition table: a
    # row trigger updates the same counter row once per row, and within one transaction each
    # update is a new version of it that the next must reach through the ones before, so a
    # transaction inserting n memories of one identity cost O(n^2) (an import of 8,000: 92 µs
    # a row in this trigger, against 35 µs at 2,000; docs/performance.md). Updates stay per
    # row: PostgreSQL allows no transition table on a trigger with a column list.
    added = (
        f"INSERT INTO wake_counts (project_id, scope, kind, total)"
        f" {count_query(counted, 'inserted')} ORDER BY 1, 2, 3"
        " ON CONFLICT (project_id, scope, kind)"
        " DO UPDATE SET total = wake_counts.total + EXCLUDED.total;"
    )
    removed = (
        f"UPDATE wake_counts SET total = wake_counts.total - gone.total"
        f" FROM ({count_query(counted, 'deleted')}) AS gone (project_id, scope, kind, total)"
        " WHERE wake_counts.project_id = gone.project_id AND wake_counts.scope = gone.scope"
        " AND wake_counts.kind = gone.kind;"
    )
    return [
        function,
        update,
        f"CREATE FUNCTION {name}_inserted() RETURNS trigger LANGUAGE plpgsql"
        f" AS $$ BEGIN {added} RETURN NULL; END $$",
        f"CREATE TRIGGER {name}_inserted AFTER INSERT ON {table}"
        f" REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION {name}_inserted()",
        f"CREATE FUNCTION {name}_deleted() RETURNS trigger LANGUAGE plpgsql"
        f" AS $$ BEGIN {removed} RETURN NULL; END $$",
        f"CREATE TRIGGER {name}_deleted AFTER DELETE ON {table}"
        f" REFERENCING OLD TABLE AS deleted FOR EACH STATEMENT EXECUTE FUNCTION {name}_deleted()",
    ]


def create_statements(
    dialect: str, counted: tuple[Counted, ...] = COUNTED, *, per_statement: bool = True
) -> list[str]:
    """The triggers (and PostgreSQL's trigger functions) that keep ``counted`` current. On
    PostgreSQL inserts and deletes are counted per statement (migration 0017);
    ``per_statement=False`` gives the per-row triggers migrations 0010 and 0013 created.
    SQLite has row triggers only (an update of the same row in one transaction is in place)."""
    if dialect == "postgresql":
        return [statement for c in counted for statement in _postgresql(c, per_statement)]
    return [statement for c in counted for statement in _sqlite(c)]


def drop_statements(dialect: str, counted: tuple[Counted, ...] = COUNTED) -> list[str]:
    if dialect == "postgresql":  # CASCADE: the triggers go with their functions
        return [
            f"DROP FUNCTION IF EXISTS {c.name}{suffix}() CASCADE"
            for c in counted
            for suffix in ("", "_inserted", "_deleted")
        ]
    return [
        f"DROP TRIGGER IF EXISTS {c.name}_{event}"
        for c in counted
        for event in ("insert", "delete", "update")
    ]


def count_query(c: Counted, source: str | None = None) -> str:
    """The counts of ``c`` computed from its rows (or those of ``source``, a transition table),
    as (project_id, scope, kind, total)."""
    row = source or c.table
    return (
        f"SELECT {row}.{c.project}, {c.scope_sql(row)}, {c.kind_sql(row)}, count(*) FROM {row}"
        f" WHERE {c.where_sql(row)} GROUP BY 1, 2, 3"
    )


def backfill_statements(counted: tuple[Counted, ...] = COUNTED) -> list[str]:
    """Count the rows already stored, once (the same SQL on both databases)."""
    return [
        f"INSERT INTO wake_counts (project_id, scope, kind, total) {count_query(c)}"
        for c in counted
    ]


__all__ = [
    "COUNTED",
    "COUNTED_0010",
    "MEMORIES",
    "MEMORIES_0010",
    "Counted",
    "backfill_statements",
    "count_query",
    "create_statements",
    "drop_statements",
]
