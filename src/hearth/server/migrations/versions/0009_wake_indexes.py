"""the wake's memory queries as index ranges: (project, identity, tier, created_at, id) and
(identity, tier)

``select_for_wake`` orders each tier's memories by (created_at, id). ``ix_memories_wake`` ended at
created_at, so neither database could take that order from it, and each query walked
``ix_memories_project_created`` over every memory of the project instead. With ``id`` at its end
the index gives the order, and each query reads at most its limit. ``shaping`` asks for an
identity's elevated memories; ``ix_memories_identity_elevated`` has no tier, so it read every
memory of the identity to keep the few elevated ones: ``ix_memories_identity_tier`` reads those.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-25 01:00:00.000000
"""

from __future__ import annotations

from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.drop_index("ix_memories_wake", table_name="memories")
    op.create_index(
        "ix_memories_wake",
        "memories",
        ["project_id", "identity_id", "tier", "created_at", "id"],
        unique=False,
    )
    op.create_index("ix_memories_identity_tier", "memories", ["identity_id", "tier"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_memories_identity_tier", table_name="memories")
    op.drop_index("ix_memories_wake", table_name="memories")
    op.create_index(
        "ix_memories_wake",
        "memories",
        ["project_id", "identity_id", "tier", "created_at"],
        unique=False,
    )
