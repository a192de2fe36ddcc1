"""The block size limit at its exact boundary, over real HTTP: ``max_block_bytes`` bytes are
stored, one more is refused with 413 in the error shape (declared or streamed) and nothing of
it is kept, whether the limit is below or above ``max_body_bytes``; and the default limit is the
number docs/service.md states."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from hearth.adds import cid_for_bytes
from hearth.blockstore import MAX_BLOCK_SIZE
from hearth.blockstore.fs import TEMP_PREFIX, shard_of
from hearth.server.settings import Settings
from tests.support.agents import register
from tests.support.live import Live, live_on

DOCS = Path(__file__).resolve().parents[2] / "docs"
SMALL = 4096


def new_client(live: Live) -> httpx2.Client:
    return live.client(register(live)[1]["project"]["api_key"])


def put(client: httpx2.Client, data: bytes | Iterator[bytes], cid: str) -> httpx2.Response:
    return client.put(
        f"/v1/adds/blocks/{cid}", content=data, headers={"Content-Type": "application/octet-stream"}
    )


def streamed(data: bytes) -> Iterator[bytes]:
    """``data`` sent without a Content-Length (chunked): counted while it streams."""
    piece = max(1024, len(data) // 64)
    for start in range(0, len(data), piece):
        yield data[start : start + piece]


def assert_refused(response: httpx2.Response, limit: int) -> None:
    assert response.status_code == 413, response.text
    body: dict[str, Any] = response.json()
    assert body["error"] == "payload_too_large"
    assert isinstance(body["message"], str)
    assert str(limit) in body["message"], "the refusal names the block limit"


def assert_not_stored(live: Live, client: httpx2.Client, cid: str) -> None:
    assert client.get(f"/v1/adds/blocks/{cid}").status_code == 404
    assert cid not in [item["cid"] for item in client.get("/v1/adds/blocks").json()["items"]]
    blocks = live.settings.blocks_dir / "blocks"
    assert not (blocks / shard_of(cid) / cid).exists()
    assert list(live.settings.blocks_dir.rglob(f"{TEMP_PREFIX}*")) == []


def check_boundary(live: Live, limit: int) -> None:
    with new_client(live) as client:
        exact = b"\x5a" * limit
        stored = put(client, exact, cid_for_bytes(exact))
        assert stored.status_code == 201, stored.text
        assert stored.json()["size"] == limit
        assert client.get(f"/v1/adds/blocks/{cid_for_bytes(exact)}").content == exact

        over = b"\x5b" * (limit + 1)
        cid = cid_for_bytes(over)
        assert_refused(put(client, over, cid), limit)
        chunked = put(client, streamed(over), cid)
        assert "content-length" not in chunked.request.headers
        assert_refused(chunked, limit)
        assert_not_stored(live, client, cid)
        # Only the block at the limit is held.
        items = client.get("/v1/adds/blocks").json()["items"]
        assert items == [{"cid": cid_for_bytes(exact), "size": limit}]


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
@pytest.mark.parametrize(
    "body_limit",
    [1_048_576, 1024],
    ids=["block_limit_below_body_limit", "block_limit_above_body_limit"],
)
def test_a_small_block_limit_is_exact(kind: str, body_limit: int, tmp_path: Path) -> None:
    with live_on(kind, tmp_path, max_block_bytes=SMALL, max_body_bytes=body_limit) as live:
        check_boundary(live, SMALL)
        with new_client(live) as client:
            # Far over both limits: still the block limit that answers.
            huge = b"\x00" * (2 * 1_048_576)
            assert_refused(put(client, huge, cid_for_bytes(huge)), SMALL)


def documented_default(doc: str, setting: str) -> int:
    """The default that ``doc``'s settings line states (``- `NAME`: default 1,234 bytes``)."""
    text = (DOCS / doc).read_text("utf-8")
    line = next(line for line in text.splitlines() if line.startswith(f"  - `{setting}`:"))
    found = re.search(r"default ([0-9][0-9,]*) bytes", line)
    assert found, f"docs/{doc} does not state the default of {setting} in bytes: {line!r}"
    return int(found.group(1).replace(",", ""))


def test_the_documented_default_is_the_settings_default() -> None:
    default = Settings.model_fields["max_block_bytes"].default
    assert documented_default("service.md", "MAX_BLOCK_BYTES") == default
    # The block store client cuts a download off at the same size as the service refuses.
    assert default == MAX_BLOCK_SIZE
    assert f"{default:,} bytes" in (DOCS / "blockstore.md").read_text("utf-8")


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_the_default_block_limit_is_exact(kind: str, tmp_path: Path) -> None:
    default = Settings.model_fields["max_block_bytes"].default
    with live_on(kind, tmp_path) as live:
        assert live.settings.max_block_bytes == default
        check_boundary(live, default)
