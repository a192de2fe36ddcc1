"""Persistence: SQLAlchemy Core tables, the async engine, and Alembic migrations."""

from .engine import Database, dialect_insert, utcnow
from .tables import metadata

__all__ = ["Database", "dialect_insert", "metadata", "utcnow"]
