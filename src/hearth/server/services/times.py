"""Times on the wire: RFC 3339 UTC with milliseconds, from the naive UTC values stored."""

from __future__ import annotations

from datetime import UTC, datetime


def iso(moment: datetime | None) -> str | None:
    """``hearth.proofs.format_timestamp``'s spelling (UTC, milliseconds, ``Z``), for naive UTC.

    Every listing calls this for each time of each row (a wake about 240 times). A naive value
    goes straight to ``isoformat``, in C, without the ``astimezone`` and ``strftime`` of the
    general recipe (tests/server/test_times.py holds the two spellings equal).
    """
    if moment is None:
        return None
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC).replace(tzinfo=None)
    return moment.isoformat(timespec="milliseconds") + "Z"


def naive_utc(moment: datetime | None) -> datetime | None:
    """A time from the wire as the naive UTC the tables store: one with an offset is converted,
    one without is read as UTC. A time whose UTC falls outside the years 1 to 9999 (the first
    hours of year 1 east of Greenwich, the last of 9999 west of it) is the earliest or latest
    time there is: as a bound of a filter it means the same, and it is not an error."""
    if moment is None or moment.tzinfo is None:
        return moment
    try:
        return moment.astimezone(UTC).replace(tzinfo=None)
    except OverflowError:
        return datetime.min if moment.year == 1 else datetime.max
