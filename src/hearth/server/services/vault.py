"""The vault: a project's named secrets (LLM provider keys and the like), sealed at rest.

Values are sealed with AES-256-GCM (``hearth.proofs.sealing``) and never leave the service over
HTTP: the routes answer names and metadata only. ``read_secret`` is for the service's own use
(a hosted runtime reads its provider key by the name in ``llm.vault_key``).

Which key seals a value is kept per row, in ``sealing``:

- ``aes-256-gcm/kms-hkdf-sha256/v1``: with ``SERVICE_KMS_MASTER_KEY`` set, a key derived from it
  (HKDF-SHA256, info ``hearth/vault/v1``). The database alone cannot open these values.
- ``aes-256-gcm/local/v1``: without it, the installation's vault key, 32 random bytes generated
  once and kept in ``vault_keys``. Values are then never stored in plaintext (not in a dump of
  the table, a log or a backup of the rows), but whoever reads the whole database can open them:
  production sets the master key.

A value is written under the master key whenever it is set; values sealed earlier under the
installation key stay readable. The associated data binds a ciphertext to its project and name.

Names: 1 to 200 characters of ``A-Z a-z 0-9 _ . : -``, starting with a letter or digit, unique
per project. A name ``<identity uuid>:<key>`` (for example ``<agent_id>:config``) is in that
identity's namespace: the identity must be one of the project's.
"""

from __future__ import annotations

import os
import re
import uuid
from typing import Any

from sqlalchemy import Connection, RowMapping, Select, bindparam, delete, select
from sqlalchemy.dialects import postgresql, sqlite

from hearth.proofs.sealing import (
    KEY_BYTES,
    SealError,
    associated_data,
    derive_key,
    open_sealed,
    seal,
)

from ..db.engine import utcnow
from ..db.ids import new_id
from ..db.tables import vault_keys, vault_secrets
from ..errors import ApiError, not_found
from ..json_types import JsonObject
from . import identities
from .cursors import invalid_cursor
from .times import iso

KMS = "aes-256-gcm/kms-hkdf-sha256/v1"
LOCAL = "aes-256-gcm/local/v1"
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,199}$"
MAX_VALUE_CHARS = 65_536
_NAME = re.compile(NAME_PATTERN)
_KMS_INFO = b"hearth/vault/v1"
_AAD_CONTEXT = b"hearth-vault/v1"
_LOCAL_KEY_ID = "primary"


class VaultUnavailable(Exception):
    """A stored value cannot be opened: sealed under a master key that is missing or different,
    or its installation key is gone. The message never carries the value."""


# --- keys ---------------------------------------------------------------------------------------


def _aad(project_id: str, name: str) -> bytes:
    return associated_data(_AAD_CONTEXT, project_id.encode("ascii"), name.encode("ascii"))


def _local_key(conn: Connection, *, create: bool) -> bytes | None:
    row = conn.execute(_READ_KEY).first()
    if row is None and create:
        conn.execute(
            _INSERT_KEY[conn.dialect.name],
            {"id": _LOCAL_KEY_ID, "key": os.urandom(KEY_BYTES), "created_at": utcnow()},
        )
        # Of two first writers one inserts; both read the one row that won.
        row = conn.execute(_READ_KEY).first()
    return bytes(row.key) if row is not None else None


def _sealing_key(conn: Connection, master_key: str | None) -> tuple[str, bytes]:
    if master_key:
        return KMS, derive_key(master_key, _KMS_INFO)
    key = _local_key(conn, create=True)
    assert key is not None
    return LOCAL, key


def _opening_key(conn: Connection, sealing: str, master_key: str | None) -> bytes:
    if sealing == KMS:
        if not master_key:
            raise VaultUnavailable("sealed under SERVICE_KMS_MASTER_KEY, which is not set")
        return derive_key(master_key, _KMS_INFO)
    if sealing == LOCAL:
        key = _local_key(conn, create=False)
        if key is None:
            raise VaultUnavailable("the installation's vault key is missing")
        return key
    raise VaultUnavailable(f"unknown sealing {sealing!r}")


# --- names --------------------------------------------------------------------------------------


def namespace_of(conn: Connection, project_id: str, name: str) -> str | None:
    """The identity whose namespace ``name`` is in (``<identity uuid>:<key>``), or None for a
    project-level name. 404 when the identity is not the project's; 422 for a bad spelling."""
    if not _NAME.match(name):
        raise _invalid_name()
    prefix, colon, rest = name.partition(":")
    if not colon or len(prefix) != 36:
        return None
    try:
        canonical = str(uuid.UUID(prefix))
    except ValueError:
        return None
    if canonical != prefix or not rest:
        raise _invalid_name()
    return str(identities.find(conn, project_id, canonical).id)


def _invalid_name() -> ApiError:
    return ApiError(
        422,
        "invalid_vault_name",
        "A vault name is 1 to 200 of A-Z a-z 0-9 _ . : - and starts with a letter or digit; "
        "an identity's namespace is `<identity id, lower-case UUID>:<key>`.",
    )


# --- writes -------------------------------------------------------------------------------------


def put_secret(
    conn: Connection,
    project_id: str,
    name: str,
    value: str,
    *,
    description: str | None = None,
    master_key: str | None,
) -> tuple[JsonObject, bool]:
    """Store or replace ``name``'s value, sealed; (metadata, created). For use inside any
    transaction (bootstrap elevation's vault namespace, the PUT route)."""
    identity_id = namespace_of(conn, project_id, name)
    if not value or len(value) > MAX_VALUE_CHARS:
        raise ValueError("a vault value is 1 to 65536 characters")
    sealing, key = _sealing_key(conn, master_key)
    now = utcnow()
    row = conn.execute(
        _UPSERT[conn.dialect.name],
        {
            "id": new_id(),
            "project_id": project_id,
            "identity_id": identity_id,
            "name": name,
            "description": description,
            "sealing": sealing,
            "ciphertext": seal(key, value.encode("utf-8"), _aad(project_id, name)),
            "version": 1,
            "created_at": now,
            "updated_at": now,
        },
    ).one()
    return secret_view(row._mapping), row.version == 1


def delete_secret(conn: Connection, project_id: str, name: str) -> bool:
    return conn.execute(_DELETE, {"project": project_id, "name": name}).rowcount == 1


# --- reads --------------------------------------------------------------------------------------


def read_secret(conn: Connection, project_id: str, name: str, *, master_key: str | None) -> str:
    """The value of ``name`` in the project, for the service's own use only: never answered over
    HTTP, never logged. 404 when there is none; ``VaultUnavailable`` when it cannot be opened."""
    row = conn.execute(_READ_VALUE, {"project": project_id, "name": name}).first()
    if row is None:
        raise not_found("Vault secret")
    key = _opening_key(conn, row.sealing, master_key)
    try:
        return open_sealed(key, bytes(row.ciphertext), _aad(project_id, name)).decode("utf-8")
    except SealError:
        raise VaultUnavailable(
            f"the vault secret {name!r} does not open under the configured key"
        ) from None


def metadata_of(conn: Connection, project_id: str, name: str) -> JsonObject:
    row = conn.execute(_READ_META, {"project": project_id, "name": name}).first()
    if row is None:
        raise not_found("Vault secret")
    return secret_view(row._mapping)


def list_secrets(
    conn: Connection,
    project_id: str,
    *,
    identity_id: str | None,
    cursor: str | None,
    limit: int,
) -> JsonObject:
    """Names and metadata, by name; ``identity_id`` keeps one identity's namespace."""
    params: dict[str, Any] = {"project": project_id, "limit": limit + 1}
    if identity_id is not None:
        params["identity"] = identities.find(conn, project_id, identity_id).id
    if cursor is not None:
        params["after"] = _decode_cursor(cursor)
    statement = _LIST[(identity_id is not None, cursor is not None)]
    rows = conn.execute(statement, params).all()
    more = len(rows) > limit
    rows = rows[:limit]
    return {
        "items": [secret_view(r._mapping) for r in rows],
        "next_cursor": rows[-1].name if more and rows else None,
    }


def _list_statement(in_namespace: bool, after: bool) -> Select[Any]:
    statement = select(*_META_COLUMNS).where(vault_secrets.c.project_id == bindparam("project"))
    if in_namespace:
        statement = statement.where(vault_secrets.c.identity_id == bindparam("identity"))
    if after:
        statement = statement.where(vault_secrets.c.name > bindparam("after"))
    return statement.order_by(vault_secrets.c.name).limit(bindparam("limit"))


def _decode_cursor(cursor: str) -> str:
    """A vault cursor is the last name of the previous page: any name (``NAME_PATTERN``) is a
    position in the listing, which runs by name."""
    if not _NAME.fullmatch(cursor):
        raise invalid_cursor()
    return cursor


def secret_view(row: RowMapping) -> JsonObject:
    """What the routes may say about a secret: never its value or ciphertext."""
    return {
        "name": row["name"],
        "identity_id": row["identity_id"],
        "description": row["description"],
        "version": row["version"],
        "sealing": row["sealing"],
        "created_at": iso(row["created_at"]),
        "updated_at": iso(row["updated_at"]),
    }


# Built once: a statement built per call costs more than executing it.
_META_COLUMNS = (
    vault_secrets.c.name,
    vault_secrets.c.identity_id,
    vault_secrets.c.description,
    vault_secrets.c.version,
    vault_secrets.c.sealing,
    vault_secrets.c.created_at,
    vault_secrets.c.updated_at,
)
_BY_NAME = (
    vault_secrets.c.project_id == bindparam("project"),
    vault_secrets.c.name == bindparam("name"),
)
_READ_META = select(*_META_COLUMNS).where(*_BY_NAME)


# Built once, keyed by (one identity's namespace, after a cursor): a statement built per call
# costs more than executing it.
_LIST = {
    (in_namespace, after): _list_statement(in_namespace, after)
    for in_namespace in (False, True)
    for after in (False, True)
}

_READ_VALUE = select(vault_secrets.c.sealing, vault_secrets.c.ciphertext).where(*_BY_NAME)
_DELETE = delete(vault_secrets).where(*_BY_NAME)
_READ_KEY = select(vault_keys.c.key).where(vault_keys.c.id == _LOCAL_KEY_ID)


def _upsert(insert: Any) -> Any:
    statement = insert(vault_secrets)
    return statement.on_conflict_do_update(
        index_elements=["project_id", "name"],
        set_={
            "identity_id": statement.excluded.identity_id,
            "description": statement.excluded.description,
            "sealing": statement.excluded.sealing,
            "ciphertext": statement.excluded.ciphertext,
            "version": vault_secrets.c.version + 1,
            "updated_at": statement.excluded.updated_at,
        },
    ).returning(*_META_COLUMNS)


_UPSERT = {"postgresql": _upsert(postgresql.insert), "sqlite": _upsert(sqlite.insert)}
_INSERT_KEY = {
    "postgresql": postgresql.insert(vault_keys).on_conflict_do_nothing(index_elements=["id"]),
    "sqlite": sqlite.insert(vault_keys).on_conflict_do_nothing(index_elements=["id"]),
}

__all__ = [
    "KMS",
    "LOCAL",
    "MAX_VALUE_CHARS",
    "NAME_PATTERN",
    "VaultUnavailable",
    "delete_secret",
    "list_secrets",
    "metadata_of",
    "namespace_of",
    "put_secret",
    "read_secret",
]
