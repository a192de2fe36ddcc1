"""One freshness rule for every signed timestamp: key proofs, challenges and root proofs."""

from __future__ import annotations

from datetime import UTC, datetime

from hearth.proofs import EncodingError, is_fresh, parse_timestamp

from ..errors import ApiError


def require_fresh(
    timestamp: str,
    freshness_ms: int,
    *,
    field: str,
    invalid: str,
    stale: str,
    hint: str | None = None,
) -> None:
    """Refuse a malformed timestamp (``invalid``) or one outside the window (``stale``)."""
    try:
        moment = parse_timestamp(timestamp)
    except EncodingError as exc:
        raise ApiError(422, invalid, f"{field}: {exc}") from None
    now = datetime.now(UTC)
    if not is_fresh(moment, now, freshness_ms):
        raise ApiError(
            422,
            stale,
            f"{field} is outside the {freshness_ms} ms freshness window of the server clock.",
            details={"server_time": now.isoformat()},
            hint=hint,
        )
