"""identity keys: runtime and device signing keys registered for an identity beside its root

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-21 02:25:20.098156
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "identity_keys",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("identity_id", sa.String(length=36), nullable=False),
        sa.Column("kid", sa.String(length=64), nullable=False),
        sa.Column("public_key", sa.String(length=44), nullable=False),
        sa.Column("purpose", sa.String(length=20), nullable=False),
        sa.Column("runtime_id", sa.String(length=36), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("revoked_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["identity_id"], ["identities.id"], name=op.f("fk_identity_keys_identity_id_identities")
        ),
        sa.ForeignKeyConstraint(
            ["runtime_id"], ["runtimes.id"], name=op.f("fk_identity_keys_runtime_id_runtimes")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_identity_keys")),
        sa.UniqueConstraint("identity_id", "kid", name="uq_identity_keys_identity_kid"),
    )


def downgrade() -> None:
    op.drop_table("identity_keys")
