"""The bridge hub of bridged custody (docs/bridge.md): the WebSocket at
``/v1/runtimes/{id}/bridge`` and the hosted orchestrator's ``decrypt``/``encrypt``.

The orchestrator reaches the hub of its app with ``hub_for(app)``.
"""

from .hub import (
    BridgeError,
    BridgeHub,
    BridgeRefused,
    BridgeReplyInvalid,
    BridgeTimeout,
    BridgeUnavailable,
    Session,
    hub_for,
)

__all__ = [
    "BridgeError",
    "BridgeHub",
    "BridgeRefused",
    "BridgeReplyInvalid",
    "BridgeTimeout",
    "BridgeUnavailable",
    "Session",
    "hub_for",
]
