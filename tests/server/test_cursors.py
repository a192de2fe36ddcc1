"""Cursors and CIDs: the pattern the OpenAPI document shows is exactly what the service takes.

Every string a cursor pattern matches is a position (so a generator that follows the document
gets an answer, not a 400), anything else is a 400 ``invalid_cursor``, and a cursor the service
hands out decodes to the row it was made from. The same for CIDs: the pattern of the ``cid``
parameters is the canonical form ``hearth.adds.cid`` accepts.
"""

from __future__ import annotations

import re
import uuid
from datetime import datetime

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from hearth.adds.cid import cid_for_bytes, cid_problem
from hearth.server.errors import ApiError
from hearth.server.models import CID_PATTERN
from hearth.server.services import adds_store, cursors, runtimes, vault

times = st.datetimes(min_value=datetime(1970, 1, 1), max_value=datetime(9999, 12, 31))


def refused(decode: object, text: str) -> None:
    with pytest.raises(ApiError) as caught:
        decode(text)  # type: ignore[operator]
    assert (caught.value.status, caught.value.error) == (400, "invalid_cursor")


@given(times, st.uuids())
def test_a_cursor_names_its_row(created_at: datetime, row_id: uuid.UUID) -> None:
    cursor = cursors.encode_cursor(created_at, str(row_id))
    assert re.fullmatch(cursors.PATTERN, cursor)
    assert cursors.decode_cursor(cursor) == (created_at, str(row_id))


@given(st.from_regex(cursors.PATTERN, fullmatch=True))
def test_every_cursor_of_the_pattern_is_a_position(text: str) -> None:
    created_at, row_id = cursors.decode_cursor(text)
    assert created_at >= datetime(1970, 1, 1)
    assert str(uuid.UUID(row_id)) == row_id


@given(st.text(max_size=60))
def test_any_other_cursor_is_refused(text: str) -> None:
    assume(re.fullmatch(cursors.PATTERN, text) is None)
    refused(cursors.decode_cursor, text)


def test_cursors_that_look_close_are_refused() -> None:
    good = cursors.encode_cursor(datetime(2026, 1, 2, 3, 4, 5, 6), str(uuid.uuid4()))
    for text in (good[:-1], good + "A", good + "\n", "bm9wZQ", good.replace(good[3], "+")):
        refused(cursors.decode_cursor, text)


@given(times, st.binary(min_size=1, max_size=64))
def test_an_adds_cursor_names_its_row(created_at: datetime, block: bytes) -> None:
    cid = cid_for_bytes(block)
    cursor = adds_store.encode_cursor(created_at, cid)
    assert re.fullmatch(adds_store.CURSOR_PATTERN, cursor)
    assert adds_store.decode_cursor(cursor) == (created_at, cid)


@given(st.from_regex(adds_store.CURSOR_PATTERN, fullmatch=True))
def test_every_adds_cursor_of_the_pattern_is_a_position(text: str) -> None:
    _, cid = adds_store.decode_cursor(text)
    assert cid_problem(cid) is None


@given(st.text(max_size=60))
def test_any_other_adds_cursor_is_refused(text: str) -> None:
    assume(re.fullmatch(adds_store.CURSOR_PATTERN, text) is None)
    refused(adds_store.decode_cursor, text)


@given(st.text(max_size=30))
def test_a_vault_cursor_is_any_name(text: str) -> None:
    if re.fullmatch(vault.NAME_PATTERN, text):
        assert vault._decode_cursor(text) == text
    else:
        refused(vault._decode_cursor, text)


def test_an_events_cursor_is_ascii_digits() -> None:
    pattern = re.compile(runtimes.EVENTS_CURSOR_PATTERN)
    assert pattern.fullmatch("0")
    assert pattern.fullmatch("9" * 18)
    # str.isdigit() takes these, and int() refuses the second: both are outside the pattern.
    for text in ("٣", "²", "1" * 19, "1\n", "-1", ""):
        assert pattern.fullmatch(text) is None


@given(st.from_regex(CID_PATTERN, fullmatch=True))
def test_every_cid_of_the_pattern_is_canonical(text: str) -> None:
    assert cid_problem(text) is None


@given(st.binary(max_size=64))
def test_every_canonical_cid_matches_the_pattern(block: bytes) -> None:
    assert re.fullmatch(CID_PATTERN, cid_for_bytes(block))


@given(st.from_regex(r"b[a-z2-7]{58}", fullmatch=True))
def test_a_cid_outside_the_pattern_is_refused(text: str) -> None:
    assert (cid_problem(text) is None) == (re.fullmatch(CID_PATTERN, text) is not None)
