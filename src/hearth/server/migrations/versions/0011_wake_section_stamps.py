"""wake section stamps: per section of the wake, the stamp of the last change that touched it

A write used to throw away the whole cached wake of its project, so nearly every wake under a
mixed load was a full build. Each mutation now records, beside the project's change stamp, the
stamp of its change in every section of the wake whose tables it wrote
(services/wake_sections.py); a wake built earlier keeps the sections no later change touched.
Existing rows start at 0: no section has changed since any wake a new process can hold.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-25 05:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

SECTIONS = ("identities", "agents", "greeted", "runtimes", "owned", "kept", "remembered", "bonds")


def upgrade() -> None:
    for section in SECTIONS:
        op.add_column(
            "change_stamps",
            sa.Column(f"{section}_stamp", sa.BigInteger(), nullable=False, server_default="0"),
        )


def downgrade() -> None:
    with op.batch_alter_table("change_stamps") as batch:
        for section in SECTIONS:
            batch.drop_column(f"{section}_stamp")
