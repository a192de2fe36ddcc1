"""Key backups: opaque client-side ciphertext, stored verbatim; the service never opens it."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from sqlalchemy import RowMapping, select

from hearth.proofs import EncodingError, b64_decode

from ..db.engine import Database, utcnow
from ..db.ids import new_id
from ..db.tables import backups
from ..errors import ApiError, not_found
from ..json_types import JsonObject
from ..models import KDF_PATTERN, BackupCreate
from . import identities
from .times import iso

_KDF = re.compile(KDF_PATTERN)


def _view(row: RowMapping | Mapping[str, Any]) -> JsonObject:
    """A backup's answer, from its row (or the values just inserted)."""
    return {
        "id": row["id"],
        "agent_id": row["agent_id"],
        "blob_base64": row["blob_base64"],
        "key_derivation": row["key_derivation"],
        "label": row["label"],
        "created_at": iso(row["created_at"]),
    }


async def store(db: Database, project_id: str, body: BackupCreate) -> JsonObject:
    try:
        b64_decode(body.blob_base64, what="blob_base64")
    except EncodingError as exc:
        raise ApiError(422, "invalid_blob", str(exc)) from None
    if not _KDF.fullmatch(body.key_derivation):
        raise ApiError(
            422,
            "invalid_key_derivation",
            "key_derivation must be text without control or invisible formatting characters.",
        )
    async with db.write() as conn:
        identity = await conn.run_sync(identities.find, project_id, body.agent_id)
        row = {
            "id": new_id(),
            "project_id": project_id,
            "agent_id": identity.id,
            "blob_base64": body.blob_base64,
            "key_derivation": body.key_derivation,
            "label": body.label,
            "created_at": utcnow(),
        }
        await conn.execute(backups.insert().values(**row))
    return _view(row)


async def latest(db: Database, project_id: str, agent_ref: str) -> JsonObject:
    async with db.read() as conn:
        identity = await conn.run_sync(identities.find, project_id, agent_ref)
        row = (
            await conn.execute(
                select(backups)
                .where(backups.c.agent_id == identity.id, backups.c.project_id == project_id)
                .order_by(backups.c.created_at.desc(), backups.c.id.desc())
                .limit(1)
            )
        ).first()
    if row is None:
        raise not_found("Backup")
    return _view(row._mapping)
