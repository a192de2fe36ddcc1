"""The runtimes service's refusals: every way a runtime request is turned down, with the
details a caller needs to recover (the current and the allowed states, the field that cannot
change)."""

from __future__ import annotations

from typing import Any

from ... import runtime_states
from ...db.rows import RuntimeRow
from ...errors import DOCS, ApiError
from ..times import iso

__all__ = [
    "CustodyRefusal",
    "IllegalMove",
    "MoveRefused",
    "StaleMove",
    "illegal_move",
    "immutable_field",
    "kms_missing",
    "runtime_deleted",
]


class CustodyRefusal(ApiError):
    """A refusal under wall 1 (``runtime_custody_explicit``): the route records it in the
    chronicle as a ``refusal`` entry after the refused transaction has rolled back."""


class MoveRefused(ApiError):
    """A state move that cannot be applied; 409 with the current and the allowed states."""


class IllegalMove(MoveRefused):
    """The runtime's status is not one the trigger moves from."""


class StaleMove(MoveRefused):
    """The runtime's status changed since the caller read it (another worker moved it)."""


def runtime_deleted(runtime: RuntimeRow, doing: str) -> ApiError:
    return ApiError(
        409,
        "runtime_deleted",
        f"The runtime {runtime.id} was deleted at {iso(runtime.deleted_at)}; it is kept for "
        f"audit and cannot be {doing}.",
        details={"runtime_id": runtime.id, "deleted_at": iso(runtime.deleted_at)},
        hint="Provision a new runtime with POST /v1/runtimes.",
    )


def illegal_move(runtime: RuntimeRow, trigger: str) -> IllegalMove:
    move = runtime_states.move_for(trigger)
    allowed = sorted(move.sources)
    return IllegalMove(
        409,
        "invalid_runtime_state",
        f"The runtime is {runtime.status}; {trigger} moves a runtime to {move.target} only "
        f"from {', '.join(allowed)}.",
        details={
            "runtime_id": runtime.id,
            "current_status": runtime.status,
            "trigger": trigger,
            "allowed_from": allowed,
            "target": move.target,
        },
    )


def immutable_field(field: str, current: Any, requested: Any) -> ApiError:
    custody = field == "mode"
    why = (
        "the custody tier is stamped at provisioning; switching custody needs a new runtime "
        "(POST /v1/runtimes)"
        if custody
        else "a runtime's binding is stamped at provisioning; binding another identity, or "
        "switching custody, needs a new runtime (POST /v1/runtimes)"
        if field == "identity_id"
        else "the bridge's key is stamped at provisioning; another bridge key needs a new "
        "runtime (POST /v1/runtimes)"
    )
    cls = CustodyRefusal if field in {"mode", "identity_id"} else ApiError
    return cls(
        422,
        "immutable_field",
        f"{field} cannot change: {why}.",
        details={"field": field, "current": current, "requested": requested},
        hint="Send the current value or leave the field out; provision a new runtime to change it.",
    )


def kms_missing() -> CustodyRefusal:
    return CustodyRefusal(
        501,
        "kms_master_key_missing",
        "A trusted runtime needs the service's key-management master key "
        "(SERVICE_KMS_MASTER_KEY), and this service has none configured: nothing was "
        "provisioned.",
        details={"mode": "trusted", "setting": "SERVICE_KMS_MASTER_KEY"},
        hint="Use a bridged runtime (your key stays with you) or a self runtime, or ask the "
        "operator to configure SERVICE_KMS_MASTER_KEY.",
        docs=DOCS,
    )
