"""PostgreSQL's bulk writes: wake counts per statement, thoughts stored as they are

Two changes on PostgreSQL only (SQLite's schema is unchanged), both found by an import's
writes (docs/performance.md, "Import on PostgreSQL").

The wake's counters (``db/counters.py``, migration 0010) were kept on PostgreSQL by row
triggers: each inserted memory updated its (project, identity, tier) counter row. Within one
transaction every such update is a new version of that row, which the next update reaches
through the versions before it, so a transaction writing n rows of one counter cost O(n^2): an
import's 8,000 memories spent 92 µs a row in the trigger, against 35 µs at 2,000
(docs/performance.md). Inserts and deletes are now counted once per statement, grouped, from
the statement's transition table; updates stay per row (PostgreSQL allows no transition table
on a trigger with a column list). The counts themselves do not change. SQLite keeps its row
triggers: its updates of one row in a transaction are made in place.

A thought's ciphertext (2 to 3 KB as a runtime writes it) is stored inline and never
compressed: PostgreSQL tried to compress every row over 2 KB (its default
``toast_tuple_target``) and moved it to the TOAST table, and ciphertext does not compress; 20,000
such rows went in at 43,000 a second that way and at 90,000 with the row kept whole
(``toast_tuple_target`` 8160). A larger ciphertext still goes out of line, uncompressed
(``STORAGE EXTERNAL``).

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-28 08:45:00.000000
"""

from __future__ import annotations

from alembic import op

from hearth.server.db import counters

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def _recreate(per_statement: bool) -> None:
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return
    for statement in counters.drop_statements("postgresql"):
        bind.exec_driver_sql(statement)
    for statement in counters.create_statements("postgresql", per_statement=per_statement):
        bind.exec_driver_sql(statement)


def upgrade() -> None:
    _recreate(per_statement=True)
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE thoughts SET (toast_tuple_target = 8160)")
        op.execute("ALTER TABLE thoughts ALTER COLUMN ciphertext SET STORAGE EXTERNAL")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE thoughts ALTER COLUMN ciphertext SET STORAGE EXTENDED")
        op.execute("ALTER TABLE thoughts RESET (toast_tuple_target)")
    _recreate(per_statement=False)
