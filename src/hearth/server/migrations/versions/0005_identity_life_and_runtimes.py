"""identity life and runtimes: templates and purchases, attestations, runtimes with their event
log, strands, ciphertext thoughts and the inbox

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-21 01:59:09.523689
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "attestations",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("project_id", sa.String(length=36), nullable=False),
        sa.Column("subject_identity_id", sa.String(length=36), nullable=False),
        sa.Column("attester_did", sa.String(length=200), nullable=False),
        sa.Column("attester_identity_id", sa.String(length=36), nullable=True),
        sa.Column("signing_key_id", sa.String(length=200), nullable=False),
        sa.Column("public_key", sa.String(length=44), nullable=False),
        sa.Column("context", sa.String(length=40), nullable=False),
        sa.Column("claim", sa.String(length=64), nullable=False),
        sa.Column("evidence", sa.JSON(), nullable=True),
        sa.Column("signature", sa.String(length=88), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["attester_identity_id"],
            ["identities.id"],
            name=op.f("fk_attestations_attester_identity_id_identities"),
        ),
        sa.ForeignKeyConstraint(
            ["project_id"], ["projects.id"], name=op.f("fk_attestations_project_id_projects")
        ),
        sa.ForeignKeyConstraint(
            ["subject_identity_id"],
            ["identities.id"],
            name=op.f("fk_attestations_subject_identity_id_identities"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_attestations")),
    )
    with op.batch_alter_table("attestations", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_attestations_project_id"), ["project_id"], unique=False
        )
        batch_op.create_index(
            "ix_attestations_subject_created",
            ["subject_identity_id", "created_at", "id"],
            unique=False,
        )

    op.create_table(
        "runtimes",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("project_id", sa.String(length=36), nullable=False),
        sa.Column("identity_id", sa.String(length=36), nullable=True),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("mode", sa.String(length=20), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("region", sa.String(length=20), nullable=False),
        sa.Column("llm", sa.JSON(), nullable=True),
        sa.Column("bridge", sa.JSON(), nullable=True),
        sa.Column("metadata", sa.JSON(), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("control_token_hash", sa.String(length=64), nullable=True),
        sa.Column("key_material", sa.LargeBinary(), nullable=True),
        sa.Column("bridge_connected", sa.Boolean(), nullable=False),
        sa.Column("last_seen_at", sa.DateTime(), nullable=True),
        sa.Column("last_thought_at", sa.DateTime(), nullable=True),
        sa.Column("last_work_at", sa.DateTime(), nullable=True),
        sa.Column("status_changed_at", sa.DateTime(), nullable=False),
        sa.Column("lease_owner", sa.String(length=64), nullable=True),
        sa.Column("lease_until", sa.BigInteger(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.Column("deleted_at", sa.DateTime(), nullable=True),
        sa.CheckConstraint("mode in ('self', 'bridged', 'trusted')", name=op.f("ck_runtimes_mode")),
        sa.ForeignKeyConstraint(
            ["identity_id"], ["identities.id"], name=op.f("fk_runtimes_identity_id_identities")
        ),
        sa.ForeignKeyConstraint(
            ["project_id"], ["projects.id"], name=op.f("fk_runtimes_project_id_projects")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_runtimes")),
    )
    with op.batch_alter_table("runtimes", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_runtimes_identity_id"), ["identity_id"], unique=False)
        batch_op.create_index(
            "ix_runtimes_project_created", ["project_id", "created_at", "id"], unique=False
        )
        batch_op.create_index("ix_runtimes_status_lease", ["status", "lease_until"], unique=False)

    op.create_table(
        "inbox_messages",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("project_id", sa.String(length=36), nullable=False),
        sa.Column("identity_id", sa.String(length=36), nullable=False),
        sa.Column("sender", sa.String(length=200), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("taken_by", sa.String(length=36), nullable=True),
        sa.Column("taken_at", sa.DateTime(), nullable=True),
        sa.Column("done_at", sa.DateTime(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["identity_id"],
            ["identities.id"],
            name=op.f("fk_inbox_messages_identity_id_identities"),
        ),
        sa.ForeignKeyConstraint(
            ["project_id"], ["projects.id"], name=op.f("fk_inbox_messages_project_id_projects")
        ),
        sa.ForeignKeyConstraint(
            ["taken_by"], ["runtimes.id"], name=op.f("fk_inbox_messages_taken_by_runtimes")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_inbox_messages")),
    )
    with op.batch_alter_table("inbox_messages", schema=None) as batch_op:
        batch_op.create_index(
            "ix_inbox_identity_status_created",
            ["identity_id", "status", "created_at", "id"],
            unique=False,
        )
        batch_op.create_index(
            "ix_inbox_project_created", ["project_id", "created_at", "id"], unique=False
        )

    op.create_table(
        "runtime_events",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("runtime_id", sa.String(length=36), nullable=False),
        sa.Column("event", sa.String(length=40), nullable=False),
        sa.Column("details", sa.JSON(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["runtime_id"], ["runtimes.id"], name=op.f("fk_runtime_events_runtime_id_runtimes")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_runtime_events")),
    )
    with op.batch_alter_table("runtime_events", schema=None) as batch_op:
        batch_op.create_index("ix_runtime_events_runtime_id", ["runtime_id", "id"], unique=False)

    op.create_table(
        "strands",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("project_id", sa.String(length=36), nullable=False),
        sa.Column("identity_id", sa.String(length=36), nullable=True),
        sa.Column("runtime_id", sa.String(length=36), nullable=True),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("next_seq", sa.BigInteger(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["identity_id"], ["identities.id"], name=op.f("fk_strands_identity_id_identities")
        ),
        sa.ForeignKeyConstraint(
            ["project_id"], ["projects.id"], name=op.f("fk_strands_project_id_projects")
        ),
        sa.ForeignKeyConstraint(
            ["runtime_id"], ["runtimes.id"], name=op.f("fk_strands_runtime_id_runtimes")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_strands")),
    )
    with op.batch_alter_table("strands", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_strands_identity_id"), ["identity_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_strands_project_id"), ["project_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_strands_runtime_id"), ["runtime_id"], unique=False)

    op.create_table(
        "templates",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("expression", sa.JSON(), nullable=False),
        sa.Column("price", sa.BigInteger(), nullable=False),
        sa.Column("publisher_project_id", sa.String(length=36), nullable=True),
        sa.Column("publisher_wallet_id", sa.String(length=36), nullable=True),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.CheckConstraint("price >= 0", name=op.f("ck_templates_price_non_negative")),
        sa.ForeignKeyConstraint(
            ["publisher_project_id"],
            ["projects.id"],
            name=op.f("fk_templates_publisher_project_id_projects"),
        ),
        sa.ForeignKeyConstraint(
            ["publisher_wallet_id"],
            ["wallets.id"],
            name=op.f("fk_templates_publisher_wallet_id_wallets"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_templates")),
    )
    with op.batch_alter_table("templates", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_templates_publisher_project_id"), ["publisher_project_id"], unique=False
        )
        batch_op.create_index(
            "ix_templates_status_created", ["status", "created_at", "id"], unique=False
        )

    op.create_table(
        "template_purchases",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("template_id", sa.String(length=36), nullable=False),
        sa.Column("project_id", sa.String(length=36), nullable=False),
        sa.Column("wallet_id", sa.String(length=36), nullable=False),
        sa.Column("price", sa.BigInteger(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("used_at", sa.DateTime(), nullable=True),
        sa.Column("used_by_identity_id", sa.String(length=36), nullable=True),
        sa.ForeignKeyConstraint(
            ["project_id"], ["projects.id"], name=op.f("fk_template_purchases_project_id_projects")
        ),
        sa.ForeignKeyConstraint(
            ["template_id"],
            ["templates.id"],
            name=op.f("fk_template_purchases_template_id_templates"),
        ),
        sa.ForeignKeyConstraint(
            ["used_by_identity_id"],
            ["identities.id"],
            name=op.f("fk_template_purchases_used_by_identity_id_identities"),
        ),
        sa.ForeignKeyConstraint(
            ["wallet_id"], ["wallets.id"], name=op.f("fk_template_purchases_wallet_id_wallets")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_template_purchases")),
    )
    with op.batch_alter_table("template_purchases", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_template_purchases_project_id"), ["project_id"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_template_purchases_template_id"), ["template_id"], unique=False
        )

    op.create_table(
        "thoughts",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("strand_id", sa.String(length=36), nullable=False),
        sa.Column("project_id", sa.String(length=36), nullable=False),
        sa.Column("runtime_id", sa.String(length=36), nullable=True),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("ciphertext", sa.LargeBinary(), nullable=False),
        sa.Column("nonce", sa.LargeBinary(), nullable=False),
        sa.Column("signature", sa.String(length=88), nullable=True),
        sa.Column("signing_key_id", sa.String(length=200), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["project_id"], ["projects.id"], name=op.f("fk_thoughts_project_id_projects")
        ),
        sa.ForeignKeyConstraint(
            ["runtime_id"], ["runtimes.id"], name=op.f("fk_thoughts_runtime_id_runtimes")
        ),
        sa.ForeignKeyConstraint(
            ["strand_id"], ["strands.id"], name=op.f("fk_thoughts_strand_id_strands")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_thoughts")),
        sa.UniqueConstraint("strand_id", "seq", name="uq_thoughts_strand_seq"),
    )
    with op.batch_alter_table("thoughts", schema=None) as batch_op:
        batch_op.create_index(
            "ix_thoughts_runtime_created", ["runtime_id", "created_at"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("thoughts", schema=None) as batch_op:
        batch_op.drop_index("ix_thoughts_runtime_created")

    op.drop_table("thoughts")
    with op.batch_alter_table("template_purchases", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_template_purchases_template_id"))
        batch_op.drop_index(batch_op.f("ix_template_purchases_project_id"))

    op.drop_table("template_purchases")
    with op.batch_alter_table("templates", schema=None) as batch_op:
        batch_op.drop_index("ix_templates_status_created")
        batch_op.drop_index(batch_op.f("ix_templates_publisher_project_id"))

    op.drop_table("templates")
    with op.batch_alter_table("strands", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_strands_runtime_id"))
        batch_op.drop_index(batch_op.f("ix_strands_project_id"))
        batch_op.drop_index(batch_op.f("ix_strands_identity_id"))

    op.drop_table("strands")
    with op.batch_alter_table("runtime_events", schema=None) as batch_op:
        batch_op.drop_index("ix_runtime_events_runtime_id")

    op.drop_table("runtime_events")
    with op.batch_alter_table("inbox_messages", schema=None) as batch_op:
        batch_op.drop_index("ix_inbox_project_created")
        batch_op.drop_index("ix_inbox_identity_status_created")

    op.drop_table("inbox_messages")
    with op.batch_alter_table("runtimes", schema=None) as batch_op:
        batch_op.drop_index("ix_runtimes_status_lease")
        batch_op.drop_index("ix_runtimes_project_created")
        batch_op.drop_index(batch_op.f("ix_runtimes_identity_id"))

    op.drop_table("runtimes")
    with op.batch_alter_table("attestations", schema=None) as batch_op:
        batch_op.drop_index("ix_attestations_subject_created")
        batch_op.drop_index(batch_op.f("ix_attestations_project_id"))

    op.drop_table("attestations")
