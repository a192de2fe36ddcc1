"""Alembic environment: always handed a live connection by ``hearth.server.db.migrate``."""

from __future__ import annotations

from alembic import context

from hearth.server.db.tables import metadata

connection = context.config.attributes.get("connection")
if connection is None:  # pragma: no cover - only reachable by running alembic by hand
    raise RuntimeError("run migrations through `hearth db upgrade` or hearth.server.db.migrate")

context.configure(
    connection=connection,
    target_metadata=metadata,
    # SQLite cannot ALTER most things in place; batch mode rebuilds tables when needed.
    render_as_batch=connection.dialect.name == "sqlite",
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
