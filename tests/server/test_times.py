"""``iso`` spells every stored time as ``format_timestamp`` does, naive (UTC) or aware."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from hearth.proofs import format_timestamp
from hearth.server.services.times import iso

# Years from 1000: strftime writes year 999 as "999", which no stored time is.
MOMENTS = st.datetimes(min_value=datetime(1000, 1, 2), max_value=datetime(9999, 12, 30))


@given(MOMENTS)
def test_a_naive_time_is_utc(moment: datetime) -> None:
    assert iso(moment) == format_timestamp(moment.replace(tzinfo=UTC))


@given(MOMENTS, st.integers(min_value=-14 * 60, max_value=14 * 60))
def test_an_aware_time_is_spelled_in_utc(moment: datetime, offset_minutes: int) -> None:
    aware = moment.replace(tzinfo=timezone(timedelta(minutes=offset_minutes)))
    assert iso(aware) == format_timestamp(aware)


def test_none_stays_none() -> None:
    assert iso(None) is None


def test_the_spelling() -> None:
    assert iso(datetime(2026, 11, 25, 3, 4, 5, 678_901)) == "2026-11-25T03:04:05.678Z"
