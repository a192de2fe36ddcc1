"""The service's own signed provider record: signed on writes and at start, never on a read.

What the record says comes from configuration and from the blocks held, never from a request:
the provider id and the endpoints (the block route and the IPFS gateway) from
``SERVICE_PUBLIC_BASE_URL`` (and ``SERVICE_PROVIDER_ID``), the inventory from the 256 most
recently stored blocks. A record is signed (with the next
sequence, superseding the last) only when what it would say differs from the latest stored
record, or when that one is within a day of expiry:
- when the service starts (a restart with a new address or id issues exactly one new record;
  one with nothing changed issues none);
- when a block PUT changes the inventory: at once when no record was signed in the last
  ``provider_record_delay_seconds``, else by the keeper at the end of that delay, so that a
  burst of uploads is one record rather than one per block;
- by the keeper, at least hourly, before a record expires.
``GET /v1/adds/provider-record`` reads the latest stored record and writes nothing (it does not
even make the provider key). Without a public address the service publishes no record.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import anyio
import structlog
from sqlalchemy import Row, select
from sqlalchemy.ext.asyncio import AsyncConnection

from hearth.adds import Endpoint, InventoryItem, Role, build_provider_record

from ..db.engine import Database, dialect_insert, utcnow
from ..db.tables import adds_provider_records
from ..settings import Settings
from . import adds_store
from .provider_key import ProviderKeyring, ProviderKeyUnavailable, public_key_b64url

log = structlog.get_logger("hearth.server")

RECORD_ID = "hearth-blocks"
INVENTORY_LIMIT = 256  # blocks listed in the provider record: a bounded, recent summary
RECORD_TTL_S = 7 * 86_400
RECORD_REFRESH_S = 86_400  # re-signed, unchanged, when less than this is left before expiry
RECORD_CHECK_S = 3_600.0  # the keeper looks at least this often: well inside RECORD_REFRESH_S
RETRY_S = 5.0  # after a failed round (a database away), the keeper tries again after this


def provider_id(settings: Settings, base_url: str) -> str:
    """The configured id, else the host (and port) of the public address."""
    if settings.provider_id:
        return settings.provider_id
    parts = urlsplit(base_url)
    host = parts.hostname or "localhost"
    return f"{host}:{parts.port}" if parts.port else host


def block_endpoint(base_url: str) -> Endpoint:
    transport = "https" if base_url.startswith("https:") else "http"
    return Endpoint(transport=transport, uri_template=f"{base_url}/v1/adds/blocks/{{cid}}")


def gateway_endpoint(base_url: str) -> Endpoint:
    """The IPFS trustless gateway's URL of a raw block (routes/ipfs_gateway.py): public, and
    answering the same bytes as the block route, so any client of the record may use it."""
    transport = "https" if base_url.startswith("https:") else "http"
    return Endpoint(transport=transport, uri_template=f"{base_url}/ipfs/{{cid}}?format=raw")


def endpoints(base_url: str) -> list[Endpoint]:
    """What the record lists, in this order: the ADDS block route (first, as before the gateway
    existed), then the gateway."""
    return [block_endpoint(base_url), gateway_endpoint(base_url)]


@dataclass(frozen=True)
class ProviderRecord:
    cid: str
    canonical: bytes
    sequence: int


def _record(row: Row[Any]) -> ProviderRecord:
    return ProviderRecord(row.cid, bytes(row.canonical), int(row.sequence))


class ProviderRecords:
    """One per app (``AddsNode.records``): reads, signs and keeps the record current."""

    def __init__(self, settings: Settings, db: Database, keyring: ProviderKeyring) -> None:
        self.settings = settings
        self.db = db
        self.keyring = keyring
        self._signed_at = 0.0  # issued_at of the latest record this process knows of
        self._due = asyncio.Event()  # a block was stored and is not in a record yet
        self._task: asyncio.Task[None] | None = None

    async def published(self) -> ProviderRecord | None:
        """The latest signed record; None when there is none. Reads only."""
        key = await self.keyring.existing()
        if key is None:  # no key was ever made: nothing was ever signed
            return None
        async with self.db.read() as conn:
            latest = await _latest(conn, public_key_b64url(key))
        return None if latest is None else _record(latest)

    async def refresh(self) -> ProviderRecord | None:
        """Sign a new record when what it says changed or the latest nears expiry; the current
        record (None while no block is held or no public address is configured).

        The sequence is claimed by the primary key: of two processes signing at once, one
        inserts, and the other answers the winner's record and looks again later (the winner
        may not have seen its block).
        """
        base = self.settings.public_base_url
        if base is None:
            return None
        async with self.db.read() as conn:
            inventory = await adds_store.recent_blocks(conn, INVENTORY_LIMIT)
        if not inventory:
            return None
        key = await self.keyring.key()
        public_key = public_key_b64url(key)
        identity, listed = provider_id(self.settings, base), endpoints(base)
        # One endpoint was hashed bare before the gateway; a list changes every digest once,
        # which re-signs each service's record once, on its first start with the gateway.
        state = hashlib.sha256(
            json.dumps(
                [identity, [e.as_json() for e in listed], inventory],
                separators=(",", ":"),
                sort_keys=True,
            ).encode()
        ).hexdigest()
        now = int(time.time())
        async with self.db.read() as conn:
            latest = await _latest(conn, public_key)
        if latest is not None:
            self._signed_at = max(self._signed_at, float(latest.expires_at - RECORD_TTL_S))
            if latest.state_digest == state and now < latest.expires_at - RECORD_REFRESH_S:
                return _record(latest)
        sequence = int(latest.sequence) + 1 if latest is not None else 1
        record = build_provider_record(
            key=key,
            provider_id=identity,
            record_id=RECORD_ID,
            sequence=sequence,
            issued_at=now,
            expires_at=now + RECORD_TTL_S,
            inventory=[InventoryItem(cid, size, Role.BLOCK) for cid, size in inventory],
            endpoints=listed,
            supersedes=latest.cid if latest is not None else None,
        )
        async with self.db.write() as conn:
            insert = dialect_insert(conn)
            result = await conn.execute(
                insert(adds_provider_records)
                .values(
                    provider_key=public_key,
                    sequence=sequence,
                    cid=record.cid,
                    canonical=record.canonical,
                    state_digest=state,
                    expires_at=now + RECORD_TTL_S,
                    created_at=utcnow(),
                )
                .on_conflict_do_nothing(index_elements=["provider_key", "sequence"])
            )
            if result.rowcount != 1:
                winner = await _latest(conn, public_key)
                assert winner is not None
                self._due.set()
                return _record(winner)
        self._signed_at = float(now)
        log.info("provider_record_signed", sequence=sequence, cid=record.cid)
        return ProviderRecord(record.cid, record.canonical, sequence)

    async def block_stored(self) -> None:
        """After a PUT recorded a block: sign now, or leave it to the keeper within the delay.

        Never fails the PUT: the block is already stored, and an unusable key is the
        operator's to fix (logged; the record's GET answers 503 meanwhile).
        """
        if time.time() - self._signed_at < self.settings.provider_record_delay_seconds:
            self._due.set()
            return
        try:
            await self.refresh()
        except ProviderKeyUnavailable as exc:
            log.error("provider_key_unavailable", reason=str(exc))
        except Exception:
            self._due.set()  # the keeper tries again; the PUT reports what failed
            raise

    async def start(self) -> None:
        """Sign what changed since the last run, then keep the record current."""
        if self.settings.public_base_url is None:
            log.warning(
                "provider_record_unpublished",
                reason="SERVICE_PUBLIC_BASE_URL is not set: no provider record is signed",
            )
            return
        try:
            await self.refresh()
        except ProviderKeyUnavailable as exc:
            log.error("provider_key_unavailable", reason=str(exc))
        self._task = asyncio.create_task(self._keep(), name="hearth-provider-record")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _keep(self) -> None:
        while True:
            with anyio.move_on_after(RECORD_CHECK_S):
                await self._due.wait()
            if self._due.is_set():
                self._due.clear()
                wait = self._signed_at + self.settings.provider_record_delay_seconds - time.time()
                await anyio.sleep(max(wait, 0.0))
            try:
                await self.refresh()
            except ProviderKeyUnavailable as exc:
                log.error("provider_key_unavailable", reason=str(exc))
            except Exception as exc:  # the keeper outlives a failed round and tries again
                log.warning("provider_record_refresh_failed", error=type(exc).__name__)
                self._due.set()
                await anyio.sleep(RETRY_S)


async def _latest(conn: AsyncConnection, public_key: str) -> Row[Any] | None:
    return (
        await conn.execute(
            select(adds_provider_records)
            .where(adds_provider_records.c.provider_key == public_key)
            .order_by(adds_provider_records.c.sequence.desc())
            .limit(1)
        )
    ).first()


__all__ = [
    "ProviderRecord",
    "ProviderRecords",
    "block_endpoint",
    "endpoints",
    "gateway_endpoint",
    "provider_id",
]
