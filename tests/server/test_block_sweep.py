"""The temp files crashed uploads leave in the block store are swept by the live service: at
start and periodically, only once older than ``blocks_sweep_age_seconds`` (another worker may be
writing a younger one), never making a block store where there is none, and never in the way
of a real upload."""

from __future__ import annotations

import asyncio
import os
import secrets
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import structlog.testing

from hearth.adds import cid_for_bytes
from hearth.blockstore import FileBlockStore
from hearth.blockstore.fs import TEMP_PREFIX, shard_of
from hearth.server.db import Database
from hearth.server.observability import configure_logging
from hearth.server.services.adds_node import AddsNode
from hearth.server.services.block_sweep import BlockSweeper
from tests.support.agents import register
from tests.support.live import Live, live_on, sqlite_settings

HOUR = 3600.0
DEADLINE_S = 30.0  # generous: guards against a hang, never measures speed


def plant(directory: Path, *, age_s: float) -> Path:
    """A leftover temp file as a crashed upload leaves it, last changed ``age_s`` ago."""
    directory.mkdir(exist_ok=True)  # the upload made its shard (a store makes one on first use)
    path = directory / f"{TEMP_PREFIX}{secrets.token_hex(12)}"
    moment = time.time() - age_s
    with path.open("wb") as leftover:
        leftover.write(b"half a block")
        leftover.flush()
        # Aged through the open file: a sweep running every millisecond may unlink the name the
        # moment it appears, and the file itself is still there to age.
        os.utime(leftover.fileno(), (moment, moment))
    return path


def made_store(root: Path) -> Path:
    """A block store holding one block, as a service that has stored a block leaves it."""
    with FileBlockStore(root, fsync=False) as store:
        data = b"an acknowledged block"
        store.put(cid_for_bytes(data), data)
    return root / "blocks"


def wait_for(condition: Callable[[], bool]) -> bool:
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


def upload(live: Live, bearer: str, data: bytes) -> int:
    with live.client(bearer) as client:
        response = client.put(
            f"/v1/adds/blocks/{cid_for_bytes(data)}",
            content=data,
            headers={"Content-Type": "application/octet-stream"},
        )
        return response.status_code


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_the_service_sweeps_old_temp_files_when_it_starts(kind: str, tmp_path: Path) -> None:
    blocks = made_store(tmp_path / "blocks")
    shards = ["aa", "q7", "zz"]
    old = [plant(blocks / shard, age_s=2 * HOUR) for shard in shards]
    old.append(plant(blocks, age_s=2 * HOUR))  # outside a shard too
    young = plant(blocks / "aa", age_s=60)  # may be another worker's upload in progress
    # The interval is long: whatever is gone was swept by the start.
    with live_on(kind, tmp_path, blocks_sweep_age_seconds=HOUR) as live:
        assert [path for path in old if path.exists()] == []
        assert young.exists(), "a temp file younger than the age was removed"
        # The store itself is untouched, and serves on.
        _, reg = register(live)
        assert upload(live, reg["project"]["api_key"], b"after the sweep") == 201
    assert young.exists()


def test_a_service_that_never_stored_a_block_makes_no_block_directory(tmp_path: Path) -> None:
    with live_on("sqlite", tmp_path, blocks_sweep_interval_seconds=0.01) as live:
        assert live.settings.blocks_dir == tmp_path / "blocks"
        register(live)  # requests come and go, periodic sweeps with them
    assert not (tmp_path / "blocks").exists()


def test_the_node_sweeps_nothing_without_a_store_and_never_makes_one(tmp_path: Path) -> None:
    async def run() -> int | None:
        settings = sqlite_settings(tmp_path)
        db = Database(settings.database_url)
        node = AddsNode(settings, db)
        try:
            return await node.sweep(0)
        finally:
            node.close()
            await db.dispose()

    assert asyncio.run(run()) is None
    assert not (tmp_path / "blocks").exists()


def test_a_temp_file_planted_while_running_is_swept(tmp_path: Path) -> None:
    blocks = made_store(tmp_path / "blocks")
    with live_on(
        "sqlite", tmp_path, blocks_sweep_interval_seconds=0.05, blocks_sweep_age_seconds=HOUR
    ):
        young = plant(blocks / "m4", age_s=60)
        old = plant(blocks / "m4", age_s=2 * HOUR)
        assert wait_for(lambda: not old.exists()), "the periodic sweep never removed it"
        # The sweep that removed the old file listed the young one too, and kept it.
        assert young.exists()


def test_uploads_succeed_while_sweeps_run_without_an_age(tmp_path: Path) -> None:
    # An age of 0 removes every temp file not being written by this process, as often as the
    # loop allows: this process's uploads in flight must still never lose theirs.
    with live_on(
        "sqlite", tmp_path, blocks_sweep_interval_seconds=0.001, blocks_sweep_age_seconds=0
    ) as live:
        _, reg = register(live)
        bearer = reg["project"]["api_key"]
        blocks = [secrets.token_bytes(64 * 1024) for _ in range(64)]
        with ThreadPoolExecutor(8) as pool:
            statuses = list(pool.map(lambda data: upload(live, bearer, data), blocks))
        assert statuses == [201] * len(blocks)
        with live.client(bearer) as client:
            for data in blocks:
                assert client.get(f"/v1/adds/blocks/{cid_for_bytes(data)}").content == data
        leftover = plant(
            tmp_path / "blocks" / "blocks" / shard_of(cid_for_bytes(blocks[0])), age_s=0
        )
        assert wait_for(lambda: not leftover.exists())


class CountingNode:
    """A provider node whose sweeps are counted, each finding two leftovers; ``fail`` makes
    them raise."""

    def __init__(self, *, fail: bool = False) -> None:
        self.calls: list[float] = []
        self.fail = fail

    async def sweep(self, older_than: float) -> int | None:
        self.calls.append(older_than)
        if self.fail:
            raise OSError("the disk went away")
        return 2


def test_the_sweeper_sweeps_at_start_then_periodically_and_stops_cleanly() -> None:
    async def run(node: CountingNode) -> None:
        sweeper = BlockSweeper(node, interval=0.001, age=123.0)
        await sweeper.start()
        assert node.calls == [123.0], "the start sweep is done before start returns"
        for _ in range(10_000):
            if len(node.calls) >= 5:
                break
            await asyncio.sleep(0.001)
        assert len(node.calls) >= 5
        assert sweeper.running
        await sweeper.stop()
        assert not sweeper.running
        stopped_at = len(node.calls)
        await asyncio.sleep(0.01)
        assert len(node.calls) == stopped_at, "a sweep ran after stop"
        await sweeper.stop()  # stopping twice is harmless

    configure_logging("json", "info")
    with structlog.testing.capture_logs() as logs:
        asyncio.run(run(CountingNode()))
    swept = [entry for entry in logs if entry["event"] == "blocks_swept"]
    assert swept[0] == {
        "event": "blocks_swept",
        "log_level": "info",
        "when": "start",
        "removed": 2,
        "older_than_s": 123.0,
    }
    assert {entry["when"] for entry in swept[1:]} == {"periodic"}
    assert all(entry["removed"] == 2 for entry in swept)

    # A failing sweep is logged and retried at the next interval; it never ends the loop.
    failing = CountingNode(fail=True)
    with structlog.testing.capture_logs() as logs:
        asyncio.run(run(failing))
    assert all(age == 123.0 for age in failing.calls)
    failures = [entry for entry in logs if entry["event"] == "blocks_sweep_failed"]
    assert len(failures) == len(failing.calls)
    assert failures[0]["error"] == "the disk went away"
