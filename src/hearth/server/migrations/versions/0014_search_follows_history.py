"""search follows history: a default search finds only heads of chains, no tombstone, trusted

Migration 0012's index was made before memories had versions, tombstones and provenance
(0013). This keeps ``live`` beside the index (SQLite's ``memory_search_rows``, PostgreSQL's
``memory_search``): the head of its chain, not deleted, trusted, as the wake selects; and copies
of ``superseded_at``, ``deleted_at``, ``untrusted`` and ``confirmed_at``, for a search as of a
time. The
triggers are made again from ``hearth.server.db.search_index`` with ``live``, so every write,
whoever makes it, keeps it exact in its own transaction; the memories already stored are read
once here.

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-27 23:55:00.000000
"""

from __future__ import annotations

from alembic import op

from hearth.server.db import search_index

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    bind = op.get_bind()
    dialect = bind.dialect.name
    statements = [
        *search_index.drop_trigger_statements(dialect),
        *search_index.live_column_statements(dialect),
        *search_index.trigger_statements(dialect, live=True),
    ]
    for statement in statements:
        bind.exec_driver_sql(statement)


def downgrade() -> None:
    bind = op.get_bind()
    dialect = bind.dialect.name
    statements = [
        *search_index.drop_trigger_statements(dialect),
        *search_index.drop_live_column_statements(dialect),
        *search_index.trigger_statements(dialect, live=False),
    ]
    for statement in statements:
        bind.exec_driver_sql(statement)
