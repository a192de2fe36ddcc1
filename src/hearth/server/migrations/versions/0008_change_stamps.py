"""change stamps: one counter per project, bumped by every change, keying the wake's cache

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-22 09:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "change_stamps",
        sa.Column("project_id", sa.String(length=36), nullable=False),
        sa.Column("stamp", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["project_id"], ["projects.id"], name=op.f("fk_change_stamps_project_id_projects")
        ),
        sa.PrimaryKeyConstraint("project_id", name=op.f("pk_change_stamps")),
    )


def downgrade() -> None:
    op.drop_table("change_stamps")
