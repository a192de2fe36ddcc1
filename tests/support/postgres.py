"""A new, empty PostgreSQL database on a server, dropped afterwards: the tests' databases of
their own (``databases.fresh_postgres_database``) and the benches' per measurement.

A module of its own, importing asyncpg alone, so that a bench which measures its children's
peak RSS (bench/export.py) can make one without importing the service or pytest: a child
started by vfork reports the parent's RSS as its own peak.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import asyncpg


@contextmanager
def fresh_database(server_url: str, *, prefix: str = "hearth_bench") -> Iterator[str]:
    """A new PostgreSQL database on the server ``server_url`` names (a SQLAlchemy or plain
    URL), as a SQLAlchemy asyncpg URL; dropped afterwards, whoever is still connected."""
    plain = server_url.replace("postgresql+asyncpg://", "postgresql://")
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"

    async def run(sql: str) -> None:
        conn = await asyncpg.connect(plain)
        try:
            await conn.execute(sql)
        finally:
            await conn.close()

    asyncio.run(run(f'CREATE DATABASE "{name}"'))
    head = plain.rsplit("/", 1)[0]
    try:
        yield f"{head}/{name}".replace("postgresql://", "postgresql+asyncpg://", 1)
    finally:
        asyncio.run(run(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
