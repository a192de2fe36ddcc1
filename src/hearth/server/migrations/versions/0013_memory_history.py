"""memory history and provenance: supersession, tombstones, as_of times, channel and trust

A memory is now append-only in meaning (docs/memory.md): ``supersedes``/``superseded_by`` link
the versions of a chain, ``superseded_at`` and a tombstone's ``deleted_at`` record when a
version stopped being the head, so a listing or a wake can answer ``as_of`` a time. Provenance:
``channel`` (canon.MemoryChannel), ``api_key_id``, ``runtime_id``, ``inbox_message_id``,
``signed_by``, and
``untrusted``/``confirmed_at`` for content from outside the project. Existing memories are
backfilled as written through the API and trusted (the server defaults).

The wake's selection reads ``ix_memories_wake_live``, the wake's index over the selectable
memories only (a partial index), so superseded versions, tombstones and untrusted memories never
lengthen its ranges.

The wake's memory counters (migration 0010's triggers) now count only what the wake can select:
heads of chains, not tombstones, trusted. Their triggers are dropped and created again from
``db/counters.py``, and the memory counts are counted afresh.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-27 23:30:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from hearth.server.db import counters

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

COLUMNS = (
    "supersedes",
    "superseded_by",
    "superseded_at",
    "deleted_at",
    "channel",
    "api_key_id",
    "runtime_id",
    "inbox_message_id",
    "signed_by",
    "untrusted",
    "confirmed_at",
)


def _recount(bind: sa.Connection, counted: counters.Counted) -> None:
    """Drop the memory triggers, count the memories afresh under ``counted``, create them again."""
    for statement in counters.drop_statements(bind.dialect.name, (counted,)):
        bind.exec_driver_sql(statement)
    bind.exec_driver_sql("DELETE FROM wake_counts WHERE kind LIKE 'memories:%'")
    # The driver's own SQL: text() would read "kind:tier" as a bind parameter.
    for statement in counters.backfill_statements((counted,)):
        bind.exec_driver_sql(statement)
    for statement in counters.create_statements(bind.dialect.name, (counted,), per_statement=False):
        bind.exec_driver_sql(statement)


def upgrade() -> None:
    uuid = sa.String(length=36)
    op.add_column("memories", sa.Column("supersedes", uuid, nullable=True))
    op.add_column("memories", sa.Column("superseded_by", uuid, nullable=True))
    op.add_column("memories", sa.Column("superseded_at", sa.DateTime(), nullable=True))
    op.add_column("memories", sa.Column("deleted_at", sa.DateTime(), nullable=True))
    op.add_column(
        "memories",
        sa.Column("channel", sa.String(length=20), nullable=False, server_default="api"),
    )
    op.add_column("memories", sa.Column("api_key_id", uuid, nullable=True))
    op.add_column("memories", sa.Column("runtime_id", uuid, nullable=True))
    op.add_column("memories", sa.Column("inbox_message_id", uuid, nullable=True))
    op.add_column("memories", sa.Column("signed_by", sa.String(length=200), nullable=True))
    op.add_column(
        "memories",
        sa.Column("untrusted", sa.Boolean(), nullable=False, server_default=sa.false()),
    )
    op.add_column("memories", sa.Column("confirmed_at", sa.DateTime(), nullable=True))
    live = "superseded_at IS NULL AND deleted_at IS NULL AND "
    op.create_index(
        "ix_memories_wake_live",
        "memories",
        ["project_id", "identity_id", "tier", "created_at", "id"],
        unique=False,
        sqlite_where=sa.text(live + "untrusted = 0"),
        postgresql_where=sa.text(live + "NOT untrusted"),
    )
    _recount(op.get_bind(), counters.MEMORIES)


def downgrade() -> None:
    bind = op.get_bind()
    # Before 0013 a deletion removed the row: a tombstone (its content already erased) goes.
    # Superseded versions become ordinary memories again, as they were stored.
    bind.exec_driver_sql("DELETE FROM memories WHERE deleted_at IS NOT NULL")
    for statement in counters.drop_statements(bind.dialect.name, (counters.MEMORIES,)):
        bind.exec_driver_sql(statement)
    op.drop_index("ix_memories_wake_live", table_name="memories")
    with op.batch_alter_table("memories") as batch:
        for column in reversed(COLUMNS):
            batch.drop_column(column)
    _recount(bind, counters.MEMORIES_0010)
