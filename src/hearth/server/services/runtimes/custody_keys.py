"""A runtime's secrets as the service handles them: a bridged runtime's control token (checked,
rotated), a trusted runtime's signing key (unwrapped for the hosted loop), and the
``key_material`` a bridged runtime's first handshake stores (sealed by ``bridge.keys``). The
recipes (the token's hash, the key material's format) are ``hearth.proofs.runtime_keys``'; the
secrets are never in a view, an event or a log line."""

from __future__ import annotations

from sqlalchemy import Connection, bindparam, select, update

from hearth.proofs import runtime_keys
from hearth.proofs.key_types import Ed25519PrivateKey

from ...canon import CustodyMode
from ...db.engine import utcnow
from ...db.rows import RuntimeRow
from ...db.tables import runtimes
from ...errors import ApiError
from ...json_types import JsonObject
from ..times import iso
from .events import append_event
from .records import find, row_by_id
from .refusals import runtime_deleted

__all__ = [
    "control_token_matches",
    "keep_key_material",
    "rotate_control_token",
    "unwrap_runtime_key",
]

_FIRST_KEY_MATERIAL = (
    update(runtimes)
    .where(runtimes.c.id == bindparam("runtime"), runtimes.c.key_material.is_(None))
    .values(key_material=bindparam("material"))
)
_KEY_MATERIAL = select(runtimes.c.key_material).where(runtimes.c.id == bindparam("runtime"))


def control_token_matches(runtime: RuntimeRow, token: str) -> bool:
    """Whether ``token`` is the runtime's current control token (constant-time compare)."""
    stored = runtime.control_token_hash
    if stored is None or runtime.deleted_at is not None:
        return False
    return runtime_keys.control_token_matches(stored, token)


def unwrap_runtime_key(runtime: RuntimeRow, master_key: str) -> Ed25519PrivateKey:
    """The trusted runtime's signing key, for the hosted loop (SealError when it does not open
    under ``master_key``)."""
    # A trusted runtime is written with its key material; none left would not open either.
    material = bytes(runtime.key_material or b"")
    return runtime_keys.unwrap_runtime_key(material, runtime.id, master_key)


def rotate_control_token(conn: Connection, project_id: str, runtime_id: str) -> JsonObject:
    """A new control token for a bridged runtime (answered once; the old one stops working at
    once), and the ``control_token_rotated`` event."""
    runtime = find(conn, project_id, runtime_id)
    if runtime.deleted_at is not None:
        raise runtime_deleted(runtime, "given a control token")
    mode: CustodyMode = runtime.mode
    if mode != "bridged":
        raise ApiError(
            409,
            "not_bridged",
            f"Only bridged runtimes have a control token; this one is {runtime.mode}.",
            details={"runtime_id": runtime.id, "mode": runtime.mode},
        )
    token, token_hash = runtime_keys.new_control_token()
    now = utcnow()
    changed = conn.execute(
        update(runtimes)
        .where(runtimes.c.id == runtime.id, runtimes.c.deleted_at.is_(None))
        .values(control_token_hash=token_hash, updated_at=now)
    )
    if changed.rowcount != 1:
        raise runtime_deleted(row_by_id(conn, runtime.id), "changed")
    append_event(conn, runtime.id, "control_token_rotated", None)
    return {"runtime_id": runtime.id, "control_token": token, "rotated_at": iso(now)}


def keep_key_material(conn: Connection, runtime_id: str, candidate: bytes) -> bytes:
    """Store ``candidate`` as the runtime's key material unless it has some already; the
    material stored afterwards. Of two first handshakes (two processes) one UPDATE wins
    (``key_material IS NULL``), and both get the winner's."""
    conn.execute(_FIRST_KEY_MATERIAL, {"runtime": runtime_id, "material": candidate})
    return bytes(conn.execute(_KEY_MATERIAL, {"runtime": runtime_id}).scalar_one())
