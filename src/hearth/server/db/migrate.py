"""Run Alembic migrations on the async engine (no second, synchronous driver needed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine

MIGRATIONS = Path(__file__).resolve().parent.parent / "migrations"


def alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    return config


async def upgrade(engine: AsyncEngine, revision: str = "head") -> None:
    await _run(engine, command.upgrade, revision)


async def downgrade(engine: AsyncEngine, revision: str = "base") -> None:
    await _run(engine, command.downgrade, revision)


async def current(engine: AsyncEngine) -> str | None:
    def _current(conn: Connection) -> str | None:
        return MigrationContext.configure(conn).get_current_revision()

    async with engine.connect() as conn:
        return await conn.run_sync(_current)


def head() -> str | None:
    return ScriptDirectory.from_config(alembic_config()).get_current_head()


async def _run(engine: AsyncEngine, action: Any, revision: str) -> None:
    config = alembic_config()

    def _apply(conn: Connection) -> None:
        config.attributes["connection"] = conn
        action(config, revision)

    async with engine.connect() as conn:
        await conn.run_sync(_apply)
        await conn.commit()
