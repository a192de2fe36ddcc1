"""memory and chronicle: elevation, expression patches, witness attestations, wake indexes

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-21 01:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("memories", schema=None) as batch_op:
        batch_op.add_column(sa.Column("elevated_at", sa.DateTime(), nullable=True))
        batch_op.add_column(sa.Column("expression_patch", sa.JSON(), nullable=True))
        batch_op.create_index(
            "ix_memories_wake",
            ["project_id", "identity_id", "tier", "created_at"],
            unique=False,
        )
        batch_op.create_index(
            "ix_memories_project_created", ["project_id", "created_at", "id"], unique=False
        )
        batch_op.create_index(
            "ix_memories_identity_elevated", ["identity_id", "elevated_at", "id"], unique=False
        )
    # Memories stored above episodic before this revision (birth memories) reached their tier
    # when they were stored.
    op.execute(
        "UPDATE memories SET elevated_at = created_at "
        "WHERE tier <> 'episodic' AND elevated_at IS NULL"
    )

    op.create_table(
        "memory_attestations",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("memory_id", sa.String(length=36), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("attester_did", sa.String(length=200), nullable=False),
        sa.Column("signing_key_id", sa.String(length=200), nullable=False),
        sa.Column("public_key", sa.String(length=44), nullable=False),
        sa.Column("signature", sa.String(length=88), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["memory_id"],
            ["memories.id"],
            name=op.f("fk_memory_attestations_memory_id_memories"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_memory_attestations")),
    )
    with op.batch_alter_table("memory_attestations", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_memory_attestations_memory_id"), ["memory_id"], unique=False
        )

    with op.batch_alter_table("chronicle", schema=None) as batch_op:
        batch_op.add_column(sa.Column("details", sa.JSON(), nullable=True))
        batch_op.create_index(
            "ix_chronicle_project_created", ["project_id", "created_at", "id"], unique=False
        )
        batch_op.create_index(
            "ix_chronicle_project_kind_created",
            ["project_id", "kind", "created_at", "id"],
            unique=False,
        )
        batch_op.create_index(
            "ix_chronicle_identity_created", ["identity_id", "created_at", "id"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("chronicle", schema=None) as batch_op:
        batch_op.drop_index("ix_chronicle_identity_created")
        batch_op.drop_index("ix_chronicle_project_kind_created")
        batch_op.drop_index("ix_chronicle_project_created")
        batch_op.drop_column("details")

    with op.batch_alter_table("memory_attestations", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_memory_attestations_memory_id"))
    op.drop_table("memory_attestations")

    with op.batch_alter_table("memories", schema=None) as batch_op:
        batch_op.drop_index("ix_memories_identity_elevated")
        batch_op.drop_index("ix_memories_project_created")
        batch_op.drop_index("ix_memories_wake")
        batch_op.drop_column("expression_patch")
        batch_op.drop_column("elevated_at")
