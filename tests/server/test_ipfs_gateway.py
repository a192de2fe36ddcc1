"""The provider node as an IPFS trustless gateway, over real HTTP: raw blocks and one-block CARs,
their headers, format negotiation, and the refusals (docs/service.md, "The IPFS trustless
gateway"). An independent client checks the same answers in test_ipfs_verified_fetch.py.

The ``conformance`` tests below are the cases of the IPFS gateway-conformance suite
(ipfs/gateway-conformance, Go) that apply to a gateway of raw blocks, restated against a block
this service holds: its ``TestTrustlessRaw`` cases, and its trustless CAR cases with a raw block
as the root (docs/service.md, "Gateway conformance", says which apply and why the suite itself
does not run here)."""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Iterator

import httpx2
import pytest

from hearth.adds import cid_for_bytes
from hearth.server.services.ipfs_gateway import car_of_block, car_size
from tests.support.agents import register
from tests.support.live import Live, live_service, sqlite_settings

BLOCK = b"ciphertext, as far as the gateway can tell"
IMMUTABLE = "public, max-age=29030400, immutable"
CAR_TYPE = "application/vnd.ipld.car; version=1; order=dfs; dups=n"


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    tmp = tmp_path_factory.mktemp("ipfs_gateway")
    with live_service(sqlite_settings(tmp)) as service:
        bearer = register(service)[1]["project"]["api_key"]
        with service.client(bearer) as client:
            stored = client.put(
                f"/v1/adds/blocks/{cid_for_bytes(BLOCK)}",
                content=BLOCK,
                headers={"Content-Type": "application/octet-stream"},
            )
            assert stored.status_code == 201, stored.text
        yield service


@pytest.fixture
def anonymous(live: Live) -> Iterator[httpx2.Client]:
    with live.client() as client:  # no bearer: an IPFS client carries none
        yield client


def test_a_raw_block_by_format_or_by_accept(anonymous: httpx2.Client) -> None:
    cid = cid_for_bytes(BLOCK)
    by_query = anonymous.get(f"/ipfs/{cid}", params={"format": "raw"})
    by_accept = anonymous.get(f"/ipfs/{cid}", headers={"Accept": "application/vnd.ipld.raw"})
    for answer in (by_query, by_accept):
        assert answer.status_code == 200, answer.text
        assert answer.content == BLOCK
        assert hashlib.sha256(answer.content).digest() == bytes.fromhex(_digest_hex(cid))
        assert answer.headers["content-type"] == "application/vnd.ipld.raw"
        assert answer.headers["cache-control"] == IMMUTABLE
        assert answer.headers["x-content-type-options"] == "nosniff"
        assert answer.headers["content-disposition"] == f'attachment; filename="{cid}.bin"'
        assert answer.headers["etag"] == f'"{cid}.raw"'
        assert answer.headers["x-ipfs-path"] == f"/ipfs/{cid}"


def test_a_car_holding_the_block(anonymous: httpx2.Client) -> None:
    cid = cid_for_bytes(BLOCK)
    by_query = anonymous.get(f"/ipfs/{cid}?format=car")
    by_accept = anonymous.get(
        f"/ipfs/{cid}", headers={"Accept": "application/vnd.ipld.car; version=1"}
    )
    for answer in (by_query, by_accept):
        assert answer.status_code == 200, answer.text
        assert answer.headers["content-type"] == CAR_TYPE
        assert answer.headers["content-disposition"] == f'attachment; filename="{cid}.car"'
        assert answer.headers["cache-control"] == IMMUTABLE
        assert answer.headers["x-content-type-options"] == "nosniff"
        assert answer.content == car_of_block(cid, BLOCK)
        roots, blocks = _read_car(answer.content)
        assert roots == [cid]
        assert blocks == [(cid, BLOCK)]


def test_format_takes_precedence_over_accept(anonymous: httpx2.Client) -> None:
    cid = cid_for_bytes(BLOCK)
    answer = anonymous.get(
        f"/ipfs/{cid}?format=raw", headers={"Accept": "application/vnd.ipld.car"}
    )
    assert answer.headers["content-type"] == "application/vnd.ipld.raw"
    # Accept's preference by quality: the CAR is preferred here.
    answer = anonymous.get(
        f"/ipfs/{cid}",
        headers={"Accept": "application/vnd.ipld.raw;q=0.5, application/vnd.ipld.car"},
    )
    assert answer.headers["content-type"] == CAR_TYPE


def test_head_gives_the_headers_and_the_length(anonymous: httpx2.Client) -> None:
    cid = cid_for_bytes(BLOCK)
    raw = anonymous.head(f"/ipfs/{cid}?format=raw")
    car = anonymous.head(f"/ipfs/{cid}?format=car")
    assert (raw.status_code, raw.content) == (200, b"")
    assert raw.headers["content-length"] == str(len(BLOCK))
    assert raw.headers["content-type"] == "application/vnd.ipld.raw"
    assert car.headers["content-length"] == str(len(car_of_block(cid, BLOCK)))
    assert car.headers["content-type"] == CAR_TYPE
    assert anonymous.head(f"/ipfs/{cid_for_bytes(b'absent')}?format=raw").status_code == 404


def test_refusals(anonymous: httpx2.Client) -> None:
    cid = cid_for_bytes(BLOCK)
    absent = anonymous.get(f"/ipfs/{cid_for_bytes(b'never stored')}?format=raw")
    assert absent.status_code == 404
    assert absent.json()["error"] == "not_found"
    # CIDs it cannot serve: CIDv0, dag-pb CIDv1, another base.
    for other in (
        "QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG",
        "bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi",
        "zb2rhe5P4gXftAwvA4eXQ5HJwsER2owDyS9sKaQRRVQPn93bA",
    ):
        refused = anonymous.get(f"/ipfs/{other}?format=raw")
        assert refused.status_code == 400
        assert refused.json()["error"] == "invalid_cid"
    # No verifiable format asked for: this gateway answers no deserialized content.
    for headers, query in (({}, ""), ({"Accept": "*/*"}, ""), ({}, "?format=dag-json")):
        refused = anonymous.get(f"/ipfs/{cid}{query}", headers=headers)
        assert refused.status_code == 400
        assert refused.json()["error"] == "gateway_format_required"
    # A document is not a block: the gateway serves only what the block routes serve.
    assert anonymous.get(f"/ipfs/{cid}/a/path?format=raw").status_code == 404


def test_car_encoding_is_pinned() -> None:
    # Golden: the CARv1 of the block b"hearth" (header {"roots": [cid], "version": 1}).
    cid = cid_for_bytes(b"hearth")
    car = car_of_block(cid, b"hearth")
    assert (
        car.hex()
        == (
            "3a"  # header length 58
            "a265726f6f747381d82a58250001551220" + _digest_hex(cid) + "6776657273696f6e01"
            "2a"  # section length: 36-byte CID + 6 bytes
            "01551220" + _digest_hex(cid) + b"hearth".hex()
        )
    )
    for size in (0, 1, 91, 92, 127, 128, 16_383, 16_384, 16 * 1024 * 1024 + 16):
        assert car_size(size) == len(car_of_block(cid, bytes(size)))


# --- the gateway-conformance cases that apply to raw blocks ---------------------------------


def test_conformance_trustless_raw(anonymous: httpx2.Client) -> None:
    """TestTrustlessRaw: by ?format=raw and by Accept; the response headers; ?filename=; the
    caching headers (public, immutable, max-age of at least 29030400)."""
    cid = cid_for_bytes(BLOCK)
    raw = "application/vnd.ipld.raw"
    by_query = anonymous.get(f"/ipfs/{cid}", params={"format": "raw"})
    by_accept = anonymous.get(f"/ipfs/{cid}", headers={"Accept": raw})
    for answer in (by_query, by_accept):
        assert (answer.status_code, answer.content) == (200, BLOCK)
        assert answer.headers["content-type"] == raw
        assert answer.headers["content-length"] == str(len(BLOCK))
        assert re.fullmatch(
            r'attachment;\s*filename=".*\.bin"', answer.headers["content-disposition"]
        )
        assert answer.headers["x-content-type-options"] == "nosniff"
        assert answer.headers["etag"]
        assert answer.headers["x-ipfs-path"] == f"/ipfs/{cid}"
        assert cid in answer.headers["x-ipfs-roots"]
        directives = dict(
            ([*part.split("=", 1), ""])[:2]
            for part in answer.headers["cache-control"].replace(" ", "").split(",")
        )
        assert "public" in directives
        assert "immutable" in directives
        assert int(directives["max-age"]) >= 29030400
    named = anonymous.get(f"/ipfs/{cid}?filename=foobar.bin", headers={"Accept": raw})
    assert re.match(r'attachment;\s*filename="foobar\.bin', named.headers["content-disposition"])
    # A name that would need quoting is refused, not written into the header.
    refused = anonymous.get(f"/ipfs/{cid}", params={"format": "raw", "filename": 'a"b.bin'})
    assert refused.status_code == 422


def test_conformance_trustless_car_of_a_raw_block(anonymous: httpx2.Client) -> None:
    """TestTrustlessCarDagScope{Block,Entity,All} and TestTrustlessCarEntityBytes with a raw
    block as the root: a raw block has no links, so every scope and every byte range is that
    block alone, exactly; a path below a raw block is 404 (TestTrustlessCarPathing allows 404
    for a path that does not exist)."""
    cid = cid_for_bytes(BLOCK)
    for params in (
        {"dag-scope": "block"},
        {"dag-scope": "entity"},
        {"dag-scope": "all"},
        {"dag-scope": "entity", "entity-bytes": "0:*"},
        {"dag-scope": "entity", "entity-bytes": "0:0"},
        {"dag-scope": "entity", "entity-bytes": "-5:*"},
    ):
        answer = anonymous.get(f"/ipfs/{cid}", params={"format": "car", **params})
        assert answer.status_code == 200, (params, answer.text)
        assert _read_car(answer.content)[1] == [(cid, BLOCK)], params
    for path in ("subdir/ascii.txt", "i-do-not-exist"):
        assert anonymous.get(f"/ipfs/{cid}/{path}?format=car").status_code == 404


def test_conformance_trustless_car_order_and_duplicates(anonymous: httpx2.Client) -> None:
    """TestTrustlessCarOrderAndDuplicates (IPIP-412): the order and dups asked for in Accept
    are said back in Content-Type (order=unk gets an explicit order), also when ?format=car is
    given too; the body is the one block either way. Its identity-CID case does not apply:
    only sha2-256 raw CIDs are served (400 invalid_cid, test_refusals)."""
    cid = cid_for_bytes(BLOCK)
    car = "application/vnd.ipld.car"
    for accept, query, wanted in (
        (f"{car}; version=1; order=dfs; dups=y", "", ("order=dfs", "dups=y")),
        (f"{car}; version=1; order=dfs; dups=n", "", ("order=dfs", "dups=n")),
        (f"{car}; version=1; order=unk", "", ("order=",)),
        (f"{car}; version=1; order=dfs; dups=y", "?format=car", ("order=dfs", "dups=y")),
    ):
        answer = anonymous.get(f"/ipfs/{cid}{query}", headers={"Accept": accept})
        assert answer.status_code == 200, answer.text
        content_type = answer.headers["content-type"]
        assert car in content_type
        assert all(part in content_type for part in wanted), (accept, content_type)
        assert _read_car(answer.content)[1] == [(cid, BLOCK)]
    head = anonymous.head(f"/ipfs/{cid}", headers={"Accept": f"{car}; dups=y"})
    assert "dups=y" in head.headers["content-type"]


def _digest_hex(cid: str) -> str:
    return base64.b32decode(cid[1:].upper() + "======")[4:].hex()


def _read_car(car: bytes) -> tuple[list[str], list[tuple[str, bytes]]]:
    """A minimal CARv1 reader for one-root, raw-block CARs (a second reading of the format)."""

    def varint(at: int) -> tuple[int, int]:
        value = shift = 0
        while True:
            byte = car[at]
            value |= (byte & 0x7F) << shift
            at += 1
            if not byte & 0x80:
                return value, at
            shift += 7

    def text(binary: bytes) -> str:
        return "b" + base64.b32encode(binary).decode().lower().rstrip("=")

    length, at = varint(0)
    header = car[at : at + length]
    at += length
    start = header.index(b"\xd8\x2a\x58\x25\x00") + 5
    roots = [text(header[start : start + 36])]
    assert header.endswith(b"\x67version\x01")
    blocks = []
    while at < len(car):
        length, at = varint(at)
        blocks.append((text(car[at : at + 36]), car[at + 36 : at + length]))
        at += length
    return roots, blocks
