"""Alembic migrations (the same scripts serve SQLite and PostgreSQL)."""
