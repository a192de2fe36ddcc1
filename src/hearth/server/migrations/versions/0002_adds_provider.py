"""ADDS provider node: blocks and documents held per project, the provider key, its records

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-21 00:35:48.149779
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "adds_provider_records",
        sa.Column("provider_key", sa.String(length=43), nullable=False),
        sa.Column("sequence", sa.BigInteger(), nullable=False),
        sa.Column("cid", sa.String(length=59), nullable=False),
        sa.Column("canonical", sa.LargeBinary(), nullable=False),
        sa.Column("state_digest", sa.String(length=64), nullable=False),
        sa.Column("expires_at", sa.BigInteger(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("provider_key", "sequence", name=op.f("pk_adds_provider_records")),
    )
    with op.batch_alter_table("adds_provider_records", schema=None) as batch_op:
        batch_op.create_index("ix_adds_provider_records_cid", ["cid"], unique=False)

    op.create_table(
        "provider_keys",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("public_key", sa.String(length=43), nullable=False),
        sa.Column("private_key", sa.LargeBinary(), nullable=False),
        sa.Column("wrapping", sa.String(length=40), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_provider_keys")),
    )
    op.create_table(
        "adds_blocks",
        sa.Column("project_id", sa.String(length=36), nullable=False),
        sa.Column("cid", sa.String(length=59), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["project_id"], ["projects.id"], name=op.f("fk_adds_blocks_project_id_projects")
        ),
        sa.PrimaryKeyConstraint("project_id", "cid", name=op.f("pk_adds_blocks")),
    )
    with op.batch_alter_table("adds_blocks", schema=None) as batch_op:
        batch_op.create_index("ix_adds_blocks_cid", ["cid"], unique=False)
        batch_op.create_index("ix_adds_blocks_created_at", ["created_at"], unique=False)
        batch_op.create_index(
            "ix_adds_blocks_project_created", ["project_id", "created_at", "cid"], unique=False
        )

    op.create_table(
        "adds_documents",
        sa.Column("project_id", sa.String(length=36), nullable=False),
        sa.Column("cid", sa.String(length=59), nullable=False),
        sa.Column("kind", sa.String(length=20), nullable=False),
        sa.Column("canonical", sa.LargeBinary(), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("signer_key", sa.String(length=43), nullable=False),
        sa.Column("head_id", sa.Text(), nullable=True),
        sa.Column("head_digest", sa.String(length=64), nullable=True),
        sa.Column("sequence", sa.BigInteger(), nullable=True),
        sa.Column("manifest_cid", sa.String(length=59), nullable=True),
        sa.Column("audience", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["project_id"], ["projects.id"], name=op.f("fk_adds_documents_project_id_projects")
        ),
        sa.PrimaryKeyConstraint("project_id", "cid", name=op.f("pk_adds_documents")),
    )
    with op.batch_alter_table("adds_documents", schema=None) as batch_op:
        batch_op.create_index("ix_adds_documents_cid", ["cid"], unique=False)
        batch_op.create_index("ix_adds_documents_head", ["signer_key", "head_digest"], unique=False)
        batch_op.create_index("ix_adds_documents_manifest_cid", ["manifest_cid"], unique=False)
        batch_op.create_index(
            "ix_adds_documents_project_created", ["project_id", "created_at", "cid"], unique=False
        )
        batch_op.create_index(
            "ix_adds_documents_project_kind_created",
            ["project_id", "kind", "created_at", "cid"],
            unique=False,
        )


def downgrade() -> None:
    with op.batch_alter_table("adds_documents", schema=None) as batch_op:
        batch_op.drop_index("ix_adds_documents_project_kind_created")
        batch_op.drop_index("ix_adds_documents_project_created")
        batch_op.drop_index("ix_adds_documents_manifest_cid")
        batch_op.drop_index("ix_adds_documents_head")
        batch_op.drop_index("ix_adds_documents_cid")

    op.drop_table("adds_documents")
    with op.batch_alter_table("adds_blocks", schema=None) as batch_op:
        batch_op.drop_index("ix_adds_blocks_project_created")
        batch_op.drop_index("ix_adds_blocks_created_at")
        batch_op.drop_index("ix_adds_blocks_cid")

    op.drop_table("adds_blocks")
    op.drop_table("provider_keys")
    with op.batch_alter_table("adds_provider_records", schema=None) as batch_op:
        batch_op.drop_index("ix_adds_provider_records_cid")

    op.drop_table("adds_provider_records")
