"""initial schema

Revision ID: 0001
Revises:
Create Date: 2026-11-20 23:54:00.231993
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:

    op.create_table(
        "projects",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("origin", sa.String(length=40), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_projects")),
    )
    op.create_table(
        "single_use",
        sa.Column("scope", sa.String(length=32), nullable=False),
        sa.Column("digest", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("scope", "digest", name=op.f("pk_single_use")),
    )
    op.create_table(
        "api_keys",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("project_id", sa.String(length=36), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("prefix", sa.String(length=32), nullable=False),
        sa.Column("key_hash", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("revoked_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["project_id"], ["projects.id"], name=op.f("fk_api_keys_project_id_projects")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_api_keys")),
        sa.UniqueConstraint("key_hash", name=op.f("uq_api_keys_key_hash")),
    )
    with op.batch_alter_table("api_keys", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_api_keys_project_id"), ["project_id"], unique=False)

    op.create_table(
        "identities",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("project_id", sa.String(length=36), nullable=False),
        sa.Column("did", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("mode", sa.String(length=20), nullable=False),
        sa.Column("root_public_key", sa.String(length=44), nullable=True),
        sa.Column("box_public_key", sa.String(length=44), nullable=True),
        sa.Column("kid", sa.String(length=64), nullable=False),
        sa.Column("key_created_at", sa.DateTime(), nullable=True),
        sa.Column("capabilities", sa.JSON(), nullable=False),
        sa.Column("form", sa.String(length=20), nullable=False),
        sa.Column("language", sa.String(length=35), nullable=True),
        sa.Column("expression_visibility", sa.String(length=20), nullable=False),
        sa.Column("runtime", sa.JSON(), nullable=True),
        sa.Column("expression", sa.JSON(), nullable=True),
        sa.Column("metadata", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("level", sa.Integer(), nullable=False),
        sa.Column("trust_score", sa.Float(), nullable=False),
        sa.Column("sponsor_did", sa.String(length=64), nullable=True),
        sa.Column("elevated_at", sa.DateTime(), nullable=True),
        sa.Column("parent_identity_id", sa.String(length=36), nullable=True),
        sa.Column("origin", sa.String(length=40), nullable=False),
        sa.Column("next_sequence", sa.BigInteger(), nullable=False),
        sa.Column("authority_lease_until", sa.BigInteger(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.CheckConstraint(
            "mode in ('agent_root', 'legacy_bearer')", name=op.f("ck_identities_mode")
        ),
        sa.CheckConstraint("next_sequence >= 1", name=op.f("ck_identities_sequence_positive")),
        sa.ForeignKeyConstraint(
            ["project_id"], ["projects.id"], name=op.f("fk_identities_project_id_projects")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_identities")),
        sa.UniqueConstraint("did", name=op.f("uq_identities_did")),
    )
    with op.batch_alter_table("identities", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_identities_project_id"), ["project_id"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_identities_root_public_key"), ["root_public_key"], unique=False
        )

    op.create_table(
        "backups",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("project_id", sa.String(length=36), nullable=False),
        sa.Column("agent_id", sa.String(length=36), nullable=False),
        sa.Column("blob_base64", sa.Text(), nullable=False),
        sa.Column("key_derivation", sa.String(length=512), nullable=False),
        sa.Column("label", sa.String(length=200), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["agent_id"], ["identities.id"], name=op.f("fk_backups_agent_id_identities")
        ),
        sa.ForeignKeyConstraint(
            ["project_id"], ["projects.id"], name=op.f("fk_backups_project_id_projects")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_backups")),
    )
    with op.batch_alter_table("backups", schema=None) as batch_op:
        batch_op.create_index("ix_backups_agent_created", ["agent_id", "created_at"], unique=False)

    op.create_table(
        "chronicle",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("project_id", sa.String(length=36), nullable=False),
        sa.Column("identity_id", sa.String(length=36), nullable=True),
        sa.Column("kind", sa.String(length=20), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["identity_id"], ["identities.id"], name=op.f("fk_chronicle_identity_id_identities")
        ),
        sa.ForeignKeyConstraint(
            ["project_id"], ["projects.id"], name=op.f("fk_chronicle_project_id_projects")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_chronicle")),
    )
    with op.batch_alter_table("chronicle", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_chronicle_created_at"), ["created_at"], unique=False)
        batch_op.create_index(batch_op.f("ix_chronicle_project_id"), ["project_id"], unique=False)

    op.create_table(
        "memories",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("project_id", sa.String(length=36), nullable=False),
        sa.Column("identity_id", sa.String(length=36), nullable=True),
        sa.Column("tier", sa.String(length=20), nullable=False),
        sa.Column("key", sa.String(length=200), nullable=True),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["identity_id"], ["identities.id"], name=op.f("fk_memories_identity_id_identities")
        ),
        sa.ForeignKeyConstraint(
            ["project_id"], ["projects.id"], name=op.f("fk_memories_project_id_projects")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_memories")),
    )
    with op.batch_alter_table("memories", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_memories_identity_id"), ["identity_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_memories_project_id"), ["project_id"], unique=False)

    op.create_table(
        "wallets",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("project_id", sa.String(length=36), nullable=False),
        sa.Column("identity_id", sa.String(length=36), nullable=True),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("currency", sa.String(length=3), nullable=False),
        sa.Column("balance", sa.BigInteger(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.CheckConstraint("balance >= 0", name=op.f("ck_wallets_balance_non_negative")),
        sa.ForeignKeyConstraint(
            ["identity_id"], ["identities.id"], name=op.f("fk_wallets_identity_id_identities")
        ),
        sa.ForeignKeyConstraint(
            ["project_id"], ["projects.id"], name=op.f("fk_wallets_project_id_projects")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_wallets")),
    )
    with op.batch_alter_table("wallets", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_wallets_identity_id"), ["identity_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_wallets_project_id"), ["project_id"], unique=False)

    op.create_table(
        "ledger",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("wallet_id", sa.String(length=36), nullable=False),
        sa.Column("amount", sa.BigInteger(), nullable=False),
        sa.Column("reason", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["wallet_id"], ["wallets.id"], name=op.f("fk_ledger_wallet_id_wallets")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_ledger")),
    )
    with op.batch_alter_table("ledger", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_ledger_wallet_id"), ["wallet_id"], unique=False)


def downgrade() -> None:

    with op.batch_alter_table("ledger", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_ledger_wallet_id"))

    op.drop_table("ledger")
    with op.batch_alter_table("wallets", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_wallets_project_id"))
        batch_op.drop_index(batch_op.f("ix_wallets_identity_id"))

    op.drop_table("wallets")
    with op.batch_alter_table("memories", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_memories_project_id"))
        batch_op.drop_index(batch_op.f("ix_memories_identity_id"))

    op.drop_table("memories")
    with op.batch_alter_table("chronicle", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_chronicle_project_id"))
        batch_op.drop_index(batch_op.f("ix_chronicle_created_at"))

    op.drop_table("chronicle")
    with op.batch_alter_table("backups", schema=None) as batch_op:
        batch_op.drop_index("ix_backups_agent_created")

    op.drop_table("backups")
    with op.batch_alter_table("identities", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_identities_root_public_key"))
        batch_op.drop_index(batch_op.f("ix_identities_project_id"))

    op.drop_table("identities")
    with op.batch_alter_table("api_keys", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_api_keys_project_id"))

    op.drop_table("api_keys")
    op.drop_table("single_use")
    op.drop_table("projects")
