"""drop the single-column indexes that composite indexes already start with

memories.project_id (ix_memories_wake, ix_memories_project_created), memories.identity_id
(ix_memories_identity_elevated) and ledger.wallet_id (ix_ledger_wallet_created): each served no
query the composite one does not, and cost an index insert on every arrival.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-21 04:30:00.000000
"""

from __future__ import annotations

from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

DROPPED = (
    ("ix_memories_project_id", "memories", "project_id"),
    ("ix_memories_identity_id", "memories", "identity_id"),
    ("ix_ledger_wallet_id", "ledger", "wallet_id"),
)


def upgrade() -> None:
    for name, table, _column in DROPPED:
        op.drop_index(name, table_name=table)


def downgrade() -> None:
    for name, table, column in DROPPED:
        op.create_index(name, table, [column], unique=False)
