"""Persistence: SQLAlchemy Core tables, the async engine, and Alembic migrations."""

from .engine import Database, utcnow
from .tables import metadata

__all__ = ["Database", "metadata", "utcnow"]
