"""console sessions: the signed-in browsers of the console

One row per session (docs/console.md, "Sessions"): the SHA-256 of the random id its cookie
carries, the project key it was opened with (its revocation ends the session), the session's
form token, and when it expires.

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-28 04:30:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "console_sessions",
        sa.Column("id_hash", sa.String(length=64), nullable=False),
        sa.Column("api_key_id", sa.String(length=36), nullable=False),
        sa.Column("project_id", sa.String(length=36), nullable=False),
        sa.Column("csrf_token", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("expires_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["api_key_id"], ["api_keys.id"], name=op.f("fk_console_sessions_api_key_id_api_keys")
        ),
        sa.ForeignKeyConstraint(
            ["project_id"], ["projects.id"], name=op.f("fk_console_sessions_project_id_projects")
        ),
        sa.PrimaryKeyConstraint("id_hash", name=op.f("pk_console_sessions")),
    )
    op.create_index(
        op.f("ix_console_sessions_api_key_id"), "console_sessions", ["api_key_id"], unique=False
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_console_sessions_api_key_id"), table_name="console_sessions")
    op.drop_table("console_sessions")
