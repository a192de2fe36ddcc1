"""Blocks on an S3-compatible object store (SeaweedFS, a real server): two ``hearth serve``
processes on one PostgreSQL database share one bucket, so a file published through one opens
through the other; a corrupted object is refused by the CID check; the store going away in the
middle of a publish is a clear 503, with nothing half-visible (docs/blockstore.md); and
``/readyz`` reports the object store, ready while it answers and not once it is gone."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx2
import obstore
import pytest
from obstore.store import S3Store

from hearth.adds import Published, cid_for_bytes
from hearth.adds.objects import open_object, publish
from hearth.blockstore import BlockStoreError, HttpBlockStore
from hearth.blockstore.s3 import S3BlockStore
from tests.support.adds_objects import ALICE, BOB, BOXES, NOW, SIGNING, grant_for
from tests.support.agents import Agent
from tests.support.databases import fresh_postgres_database
from tests.support.live import free_port
from tests.support.seaweedfs import SeaweedS3, seaweedfs
from tests.support.served import Served, hearth_serve, serve_env

PREFIX = "shared"
CHUNK = 256 * 1024


@dataclass
class Pair:
    s3: SeaweedS3
    a: Served
    b: Served
    bearer: str
    tmp: Path


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    tmp = tmp_path_factory.mktemp("s3_blocks")
    with seaweedfs(tmp / "seaweedfs") as s3, fresh_postgres_database() as database_url:
        servers = []
        for name in ("a", "b"):
            port = free_port()
            home = tmp / name
            home.mkdir()
            env = serve_env(home, database_url, port, BLOCKSTORE_URL=f"s3://{s3.bucket}/{PREFIX}")
            servers.append((home, env | s3.env(), port))
        (home_a, env_a, port_a), (home_b, env_b, port_b) = servers
        # One after the other: the first migrates the new database.
        with hearth_serve(home_a, env_a, port_a) as a, hearth_serve(home_b, env_b, port_b) as b:
            yield Pair(s3, a, b, _register(a), tmp)


def _register(served: Served) -> str:
    import httpx2  # noqa: PLC0415

    agent = Agent.new()
    response = httpx2.post(
        f"{served.base_url}/v1/register/agent", json=agent.registration(difficulty=8), timeout=30
    )
    assert response.status_code == 201, response.text
    return str(response.json()["project"]["api_key"])


def _publish(data: bytes, sink: HttpBlockStore, object_id: str) -> Published:
    return publish(
        data,
        sink,
        key=SIGNING[ALICE],
        publisher_id=ALICE,
        object_id=object_id,
        created_at=NOW,
        chunk_size=CHUNK,
    )


def test_published_through_one_opens_through_the_other(pair: Pair) -> None:
    data = os.urandom(5 * CHUNK + 17)
    with (
        HttpBlockStore(pair.a.base_url, bearer=pair.bearer) as a,
        HttpBlockStore(pair.b.base_url, bearer=pair.bearer) as b,
    ):
        published = _publish(data, a, "across")
        grant = grant_for(published)
        opened = open_object(published.manifest, grant, BOXES[BOB], b, now=NOW)
        assert b"".join(opened) == data
    # The blocks are in the bucket, not in either process's BLOCKS_DIR.
    bucket = S3BlockStore(f"s3://{pair.s3.bucket}/{PREFIX}", config=pair.s3.config())
    assert len(set(bucket.cids())) >= 6
    assert not (pair.tmp / "a" / "blocks").exists()
    assert not (pair.tmp / "b" / "blocks").exists()


def test_a_corrupted_object_is_refused(pair: Pair) -> None:
    block = b"a block the bucket will damage"
    cid = cid_for_bytes(block)
    headers = {"Authorization": f"Bearer {pair.bearer}"}
    stored = httpx2.put(f"{pair.a.base_url}/v1/adds/blocks/{cid}", content=block, headers=headers)
    assert stored.status_code == 201, stored.text
    raw = S3Store(pair.s3.bucket, **pair.s3.config(), client_options={"allow_http": True})
    obstore.put(raw, f"{PREFIX}/{cid}", b"a block the bucket will damagE")
    answer = httpx2.get(f"{pair.b.base_url}/v1/adds/blocks/{cid}", headers=headers)
    assert answer.status_code == 500
    assert b"damagE" not in answer.content
    gateway = httpx2.get(f"{pair.b.base_url}/ipfs/{cid}?format=raw")
    assert gateway.status_code == 500
    assert b"damagE" not in gateway.content


def test_readyz_reports_the_object_store(pair: Pair) -> None:
    answer = httpx2.get(f"{pair.a.base_url}/readyz", timeout=30)
    assert answer.status_code == 200, answer.text
    assert answer.json()["checks"]["blocks"] == {"ok": True, "store": "object_store"}


def test_the_store_going_away_mid_publish_is_a_clear_error(pair: Pair) -> None:
    """Last in the module: it stops the object store."""

    tried: list[str] = []

    class StopsAfterTwo(HttpBlockStore):
        def put(self, cid: str, data: bytes) -> None:
            if len(tried) == 2:
                pair.s3.process.terminate()  # the store goes away between two blocks
                pair.s3.process.wait(timeout=30)
            tried.append(cid)
            super().put(cid, data)

    data = os.urandom(4 * CHUNK)
    with StopsAfterTwo(pair.a.base_url, bearer=pair.bearer) as sink:
        with pytest.raises(BlockStoreError) as caught:
            _publish(data, sink, "interrupted")
        listing = sink.cids()
        held = set(listing)
    assert caught.value.status == 503
    assert caught.value.code == "block_store_unavailable"
    assert "block store" in str(caught.value)
    # The two acknowledged blocks are recorded; the third, refused, is not.
    assert len(tried) == 3
    assert set(tried[:2]) <= held
    assert tried[2] not in held


def test_readyz_is_not_ready_once_the_object_store_is_gone(pair: Pair) -> None:
    """After the store was stopped (the test above): its endpoint refuses connections."""
    assert pair.s3.process.poll() is not None
    answer = httpx2.get(f"{pair.b.base_url}/readyz", timeout=30)
    assert answer.status_code == 503, answer.text
    body = answer.json()
    assert body["error"] == "not_ready"
    blocks = body["details"]["checks"]["blocks"]
    assert blocks["ok"] is False
    assert blocks["store"] == "object_store"
    assert blocks["problem"].startswith("the object store does not answer")
    # Nothing that names the store: not its endpoint, not its bucket.
    assert pair.s3.endpoint.split("//")[1] not in answer.text
    assert pair.s3.bucket not in answer.text
    assert body["details"]["checks"]["database"]["ok"] is True
