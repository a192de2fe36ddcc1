"""POST /v1/identities/{id}/move: the identity now lives on another service.

The identity is marked ``moved`` and the new service's address and DID kept in its metadata
(``moved_to``); nothing is deleted (wall 6). From then on every mutation naming it is refused
with 410 ``moved`` and that pointer (``identities.find``), and its public profile names it.
Its runtimes on this service are stopped in the same transaction (``move_away``).
"""

from __future__ import annotations

from sqlalchemy import Connection, update

from ..db.engine import utcnow
from ..db.tables import identities
from ..json_types import JsonObject
from . import runtimes
from .authority import RootGrant
from .identities import MOVED
from .times import iso


def move(conn: Connection, grant: RootGrant, service: str, did: str) -> JsonObject:
    """Mark the identity moved to ``service`` (its address) as ``did``; the root proof's
    sequence is consumed with it."""
    grant.claim(conn)
    identity = grant.identity
    where: JsonObject = {"service": service.rstrip("/"), "did": did, "moved_at": iso(utcnow())}
    metadata = {**(identity.metadata or {}), "moved_to": where}
    conn.execute(
        update(identities)
        .where(identities.c.id == identity.id)
        .values(status=MOVED, metadata=metadata)
    )
    # Its runtimes here stop with it: the life goes on on the new service (docs/runtimes.md).
    stopped = runtimes.stop_moved_identity(conn, identity.id, where["service"])
    return {
        "identity_id": identity.id,
        "did": identity.did,
        "status": MOVED,
        "moved_to": where,
        "runtimes_stopped": stopped,
    }
