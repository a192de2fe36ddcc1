"""memory search: a full-text index of memories, kept by triggers in the writes' transactions

SQLite gets an FTS5 table (``unicode61``, BM25) with a table mapping memory ids to its rowids;
PostgreSQL a ``tsvector`` per memory (the ``simple`` configuration) under a GIN index. The SQL
comes from ``hearth.server.db.search_index`` (the one definition; docs/memory.md): the memories
already stored are indexed once here, then the triggers keep the index exact on every INSERT,
DELETE and UPDATE of a memory's id, key or content, whoever makes it.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-27 23:30:00.000000
"""

from __future__ import annotations

from alembic import op

from hearth.server.db import search_index

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    bind = op.get_bind()
    dialect = bind.dialect.name
    # The tables (and PostgreSQL's document function) first, then the rows already stored,
    # then the triggers: a memory written from here on is indexed by its own transaction.
    for statement in search_index.table_statements(dialect):
        bind.exec_driver_sql(statement)
    for statement in search_index.backfill_statements(dialect):
        bind.exec_driver_sql(statement)
    for statement in search_index.trigger_statements(dialect):
        bind.exec_driver_sql(statement)


def downgrade() -> None:
    bind = op.get_bind()
    for statement in search_index.drop_statements(bind.dialect.name):
        bind.exec_driver_sql(statement)
