"""Row identifiers are UUIDv7: canonical text, version 7, RFC variant, ordered by time."""

from __future__ import annotations

import time
import uuid

from hearth.server.db.ids import new_id, new_uuid


def test_an_identifier_is_a_canonical_version_7_uuid() -> None:
    text = new_id()
    parsed = uuid.UUID(text)
    assert str(parsed) == text
    assert parsed.version == 7
    assert parsed.variant == uuid.RFC_4122


def test_the_leading_48_bits_are_the_unix_time_in_milliseconds() -> None:
    before = time.time_ns() // 1_000_000
    stamp = new_uuid().int >> 80
    after = time.time_ns() // 1_000_000
    assert before <= stamp <= after


def test_identifiers_from_later_milliseconds_sort_after_earlier_ones() -> None:
    first = new_id()
    deadline = time.monotonic() + 1
    later = new_id()
    while later[:13] == first[:13] and time.monotonic() < deadline:  # same millisecond
        later = new_id()
    assert later > first  # text order is time order across milliseconds


def test_identifiers_do_not_repeat_within_a_millisecond() -> None:
    many = [new_id() for _ in range(10_000)]
    assert len(set(many)) == len(many)
