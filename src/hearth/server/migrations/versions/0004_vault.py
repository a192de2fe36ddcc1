"""wallets and vault: fund transfers with idempotency, sealed vault secrets, the vault key

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-21 12:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("ledger", schema=None) as batch_op:
        batch_op.create_index(
            "ix_ledger_wallet_created", ["wallet_id", "created_at", "id"], unique=False
        )

    op.create_table(
        "wallet_transfers",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("project_id", sa.String(length=36), nullable=False),
        sa.Column("idempotency_digest", sa.String(length=64), nullable=False),
        sa.Column("request_digest", sa.String(length=64), nullable=False),
        sa.Column("source_wallet_id", sa.String(length=36), nullable=False),
        sa.Column("target_wallet_id", sa.String(length=36), nullable=False),
        sa.Column("amount", sa.BigInteger(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.CheckConstraint("amount > 0", name=op.f("ck_wallet_transfers_amount_positive")),
        sa.ForeignKeyConstraint(
            ["project_id"], ["projects.id"], name=op.f("fk_wallet_transfers_project_id_projects")
        ),
        sa.ForeignKeyConstraint(
            ["source_wallet_id"],
            ["wallets.id"],
            name=op.f("fk_wallet_transfers_source_wallet_id_wallets"),
        ),
        sa.ForeignKeyConstraint(
            ["target_wallet_id"],
            ["wallets.id"],
            name=op.f("fk_wallet_transfers_target_wallet_id_wallets"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_wallet_transfers")),
        sa.UniqueConstraint(
            "project_id", "idempotency_digest", name="uq_wallet_transfers_idempotency"
        ),
    )
    with op.batch_alter_table("wallet_transfers", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_wallet_transfers_source_wallet_id"), ["source_wallet_id"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_wallet_transfers_target_wallet_id"), ["target_wallet_id"], unique=False
        )

    op.create_table(
        "vault_secrets",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("project_id", sa.String(length=36), nullable=False),
        sa.Column("identity_id", sa.String(length=36), nullable=True),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("description", sa.String(length=500), nullable=True),
        sa.Column("sealing", sa.String(length=40), nullable=False),
        sa.Column("ciphertext", sa.LargeBinary(), nullable=False),
        sa.Column("version", sa.BigInteger(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["identity_id"],
            ["identities.id"],
            name=op.f("fk_vault_secrets_identity_id_identities"),
        ),
        sa.ForeignKeyConstraint(
            ["project_id"], ["projects.id"], name=op.f("fk_vault_secrets_project_id_projects")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_vault_secrets")),
        sa.UniqueConstraint("project_id", "name", name="uq_vault_secrets_project_name"),
    )
    with op.batch_alter_table("vault_secrets", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_vault_secrets_identity_id"), ["identity_id"], unique=False
        )

    op.create_table(
        "vault_keys",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("key", sa.LargeBinary(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_vault_keys")),
    )


def downgrade() -> None:
    op.drop_table("vault_keys")
    with op.batch_alter_table("vault_secrets", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_vault_secrets_identity_id"))

    op.drop_table("vault_secrets")
    with op.batch_alter_table("wallet_transfers", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_wallet_transfers_target_wallet_id"))
        batch_op.drop_index(batch_op.f("ix_wallet_transfers_source_wallet_id"))

    op.drop_table("wallet_transfers")
    with op.batch_alter_table("ledger", schema=None) as batch_op:
        batch_op.drop_index("ix_ledger_wallet_created")
