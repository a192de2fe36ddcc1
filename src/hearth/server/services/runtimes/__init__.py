"""Runtimes: the service that owns every read and write of a runtime's record (docs/runtimes.md).

The modules, by what each owns:

- ``records``: finding a runtime (in a project, or by id) and its views;
- ``provisioning``: ``create`` under a custody tier and the changes a PATCH may make;
- ``moves``: every status and liveness write: ``move`` (one move of ``runtime_states``' table,
  a conditional UPDATE on the status the caller saw, and its event in the same transaction),
  restart, soft delete, the ``last_seen_at``/``last_work_at``/``last_thought_at`` stamps and
  ``bridge_connected``;
- ``leases``: which orchestrator worker runs which hosted runtime (the lease columns);
- ``events``: the append-only event log;
- ``custody_keys``: the control token of a bridged runtime, the signing key of a trusted one
  (their recipes are ``hearth.proofs.runtime_keys``') and the stored ``key_material``;
- ``self_custody``: the heartbeats of a ``self`` runtime's loop;
- ``refusals``: the ways a runtime request is turned down.

Every write of the ``runtimes`` table is made here (tests/server/test_runtime_writes.py holds
the rest of the tree to it); status moves are applied by ``move`` only. Secrets (the control
token, key material) are never in a view, an event or a log line. Callers use the names below,
and the ``leases`` module by name (``from hearth.server.services.runtimes import leases``).
"""

from .custody_keys import (
    control_token_matches,
    keep_key_material,
    rotate_control_token,
    unwrap_runtime_key,
)
from .events import EVENTS_CURSOR_PATTERN, append_event, events
from .moves import (
    mark_bridge_connected,
    mark_bridge_disconnected,
    move,
    restart,
    soft_delete,
    stamp_seen,
    stamp_thought,
    stamp_work,
    stop_moved_identity,
)
from .provisioning import HOSTED_PROVIDERS, create, update_runtime
from .records import find, listing, read, row_by_id, view
from .refusals import CustodyRefusal, IllegalMove, MoveRefused, StaleMove, kms_missing
from .self_custody import has_pending, heartbeat, not_live, self_move, self_runtime

__all__ = [
    "EVENTS_CURSOR_PATTERN",
    "HOSTED_PROVIDERS",
    "CustodyRefusal",
    "IllegalMove",
    "MoveRefused",
    "StaleMove",
    "append_event",
    "control_token_matches",
    "create",
    "events",
    "find",
    "has_pending",
    "heartbeat",
    "keep_key_material",
    "kms_missing",
    "listing",
    "mark_bridge_connected",
    "mark_bridge_disconnected",
    "move",
    "not_live",
    "read",
    "restart",
    "rotate_control_token",
    "row_by_id",
    "self_move",
    "self_runtime",
    "soft_delete",
    "stamp_seen",
    "stamp_thought",
    "stamp_work",
    "stop_moved_identity",
    "unwrap_runtime_key",
    "update_runtime",
    "view",
]
