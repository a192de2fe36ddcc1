"""An independent IPFS client fetches a block hearth published and verifies it:
``@helia/verified-fetch`` (npm), with the service as its only trustless gateway and no router,
and ``@ipld/car`` reading the gateway's CAR of the same block (tests/support/js/)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from hearth.adds import cid_for_bytes
from tests.support.agents import register
from tests.support.live import live_service, sqlite_settings
from tests.support.npm_tools import npm_prefix

SCRIPT = Path(__file__).resolve().parents[1] / "support" / "js" / "verified_fetch.mjs"
PACKAGES = {
    "@helia/verified-fetch": "8.0.4",
    "@helia/http": "4.0.7",
    "@helia/fallback-router": "1.1.1",
    "helia": "7.1.15",
    "@ipld/car": "5.4.7",
}
# undici 8 (through @libp2p/http) needs Node 22; 7 runs on the machine's Node 20.
OVERRIDES = {"undici": "7.30.2"}


def test_verified_fetch_reads_a_block_through_the_gateway(tmp_path: Path) -> None:
    prefix = npm_prefix("verified-fetch", PACKAGES, OVERRIDES)
    block = bytes(range(256)) * 300  # ciphertext-like, and more than one read's worth
    cid = cid_for_bytes(block)
    with live_service(sqlite_settings(tmp_path)) as live:
        with live.client(register(live)[1]["project"]["api_key"]) as client:
            stored = client.put(
                f"/v1/adds/blocks/{cid}",
                content=block,
                headers={"Content-Type": "application/octet-stream"},
            )
            assert stored.status_code == 201, stored.text
        # The script sits beside node_modules so that its imports resolve there.
        script = prefix / SCRIPT.name
        shutil.copyfile(SCRIPT, script)
        node = shutil.which("node")
        assert node is not None  # npm_prefix skipped otherwise
        done = subprocess.run(
            [node, str(script), live.base_url, cid],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["status"] == 200
    assert bytes.fromhex(seen["hex"]) == block
    assert seen["car_version"] == 1
    assert seen["car_roots"] == [cid]
    assert seen["car_blocks"] == [{"cid": cid, "hex": block.hex()}]
