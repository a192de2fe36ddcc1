"""Times on the wire: RFC 3339 UTC with milliseconds, from the naive UTC values stored."""

from __future__ import annotations

from datetime import UTC, datetime

from hearth.proofs import format_timestamp


def iso(moment: datetime | None) -> str | None:
    if moment is None:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return format_timestamp(moment)
