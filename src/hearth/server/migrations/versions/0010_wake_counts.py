"""wake counts: the counts the wake shows, kept by triggers in the writes' own transactions;
an index for the attestations an identity gave

Each count the wake showed was a ``count(*)`` that grew with the store (the memory tiers took
10 ms on SQLite and 52 ms on PostgreSQL at 100,000 memories). ``wake_counts`` holds one row per
(project, scope, kind), and the triggers from ``hearth.server.db.counters`` keep it exact in the
transaction of every write to the counted tables. The rows already stored are counted once here.
The wake's attestations given get an index of their own (they read the project's range before).

The trigger SQL comes from ``db/counters.py`` (its ``COUNTED`` table, the one definition); a
later change to what is counted is a new migration that drops these triggers and creates the
new set; so this one names the set as it was (``counters.COUNTED_0010``: 0013 changed what the
memory count counts).

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-25 02:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from hearth.server.db import counters

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "wake_counts",
        sa.Column("project_id", sa.String(length=36), nullable=False),
        sa.Column("scope", sa.String(length=36), nullable=False),
        sa.Column("kind", sa.String(length=40), nullable=False),
        sa.Column("total", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("project_id", "scope", "kind", name=op.f("pk_wake_counts")),
    )
    op.create_index(
        "ix_attestations_attester_created",
        "attestations",
        ["attester_identity_id", "created_at", "id"],
        unique=False,
    )
    # The driver's own SQL: text() would read "kind:tier" as a bind parameter.
    bind = op.get_bind()
    for statement in counters.backfill_statements(counters.COUNTED_0010):
        bind.exec_driver_sql(statement)
    for statement in counters.create_statements(
        bind.dialect.name, counters.COUNTED_0010, per_statement=False
    ):
        bind.exec_driver_sql(statement)


def downgrade() -> None:
    bind = op.get_bind()
    for statement in counters.drop_statements(bind.dialect.name, counters.COUNTED_0010):
        bind.exec_driver_sql(statement)
    op.drop_table("wake_counts")
    op.drop_index("ix_attestations_attester_created", table_name="attestations")
