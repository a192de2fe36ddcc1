"""memory embeddings: the semantic leg of memory search

One unit vector per memory (``memory_embeddings``), under the model that made it, numbered in
the order written (``seq``: a process keeping a project's vectors in memory reads the new ones
only), written by the service when it
stores a memory and by its catch-up pass for memories written around it, when semantic search
is on (docs/memory.md, "Semantic search"). A memory deleted for good takes its vector with it
(the foreign key); when a memory's content is erased (a tombstone) or changed, a trigger deletes
its vector, since a vector says what the text said.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-28 01:50:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

# Frozen here, as this revision made them.
_SQLITE_TRIGGER = (
    "CREATE TRIGGER hearth_embedding_forget AFTER UPDATE OF content ON memories"
    " WHEN OLD.content IS NOT NEW.content"
    " BEGIN DELETE FROM memory_embeddings WHERE memory_id = OLD.id; END"
)
_POSTGRESQL_TRIGGER = (
    "CREATE FUNCTION hearth_embedding_forget() RETURNS trigger LANGUAGE plpgsql AS $$"
    " BEGIN DELETE FROM memory_embeddings WHERE memory_id = OLD.id; RETURN NULL; END $$",
    "CREATE TRIGGER hearth_embedding_forget AFTER UPDATE OF content ON memories"
    " FOR EACH ROW WHEN (OLD.content IS DISTINCT FROM NEW.content)"
    " EXECUTE FUNCTION hearth_embedding_forget()",
)


def upgrade() -> None:
    op.create_table(
        "memory_embeddings",
        sa.Column("seq", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("memory_id", sa.String(length=36), nullable=False),
        sa.Column("project_id", sa.String(length=36), nullable=False),
        sa.Column("model", sa.String(length=64), nullable=False),
        sa.Column("vector", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(
            ["memory_id"],
            ["memories.id"],
            name=op.f("fk_memory_embeddings_memory_id_memories"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("seq", name=op.f("pk_memory_embeddings")),
        sa.UniqueConstraint("memory_id", name=op.f("uq_memory_embeddings_memory_id")),
    )
    op.create_index(
        "ix_memory_embeddings_project_seq",
        "memory_embeddings",
        ["project_id", "model", "seq"],
        unique=False,
    )
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        for statement in _POSTGRESQL_TRIGGER:
            bind.exec_driver_sql(statement)
    else:
        bind.exec_driver_sql(_SQLITE_TRIGGER)


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        bind.exec_driver_sql("DROP FUNCTION IF EXISTS hearth_embedding_forget() CASCADE")
    else:
        bind.exec_driver_sql("DROP TRIGGER IF EXISTS hearth_embedding_forget")
    op.drop_table("memory_embeddings")
