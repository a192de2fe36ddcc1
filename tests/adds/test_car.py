"""CAR v1 framing (``hearth.adds.car``): written and read back, refusals of broken files, and
read by independent implementations (``multiformats`` here, ``@ipld/car`` through node)."""

from __future__ import annotations

import hashlib
import io
from pathlib import Path

import pytest
from multiformats import CID, varint

from hearth.adds import Right, cid_for_bytes, issue_grant, open_object, publish
from hearth.adds.car import CarError, CarIndex, CarWriter, car_header, encode_varint, read_header
from hearth.adds.keys import generate_key_pair
from tests.support.ipld_car import read_with_ipld_car


def blocks(count: int = 5) -> list[tuple[str, bytes]]:
    made = [hashlib.sha256(b"block %d" % i).digest() * (i + 1) for i in range(count)]
    return [(cid_for_bytes(data), data) for data in made]


def car_of(items: list[tuple[str, bytes]], root: str | None = None) -> bytes:
    out = io.BytesIO()
    writer = CarWriter(out)
    for cid, data in items:
        writer.put(cid, data)
    writer.finish([root or items[0][0]])
    return out.getvalue()


@pytest.mark.parametrize("value", [0, 1, 127, 128, 255, 300, 16384, 2**31, 2**53 - 1])
def test_varint_is_multiformats_unsigned_varint(value: int) -> None:
    assert encode_varint(value) == varint.encode(value)


def test_header_is_the_dag_cbor_map_of_roots_and_version() -> None:
    root = cid_for_bytes(b"root")
    header = car_header([root])
    length, width, _ = varint.decode_raw(io.BytesIO(header))
    assert width + length == len(header)
    binary = bytes(CID.decode(root))
    # {"roots": [42(h'00' + cid)], "version": 1} in DAG-CBOR, by hand: map(2), text(5) "roots",
    # array(1), tag 42, bytes(37), text(7) "version", 1.
    body = b"\xa2eroots\x81\xd8\x2a\x58\x25\x00" + binary + b"gversion\x01"
    assert header[width:] == body
    assert read_header(io.BytesIO(header)) == ([root], len(header))


def test_written_blocks_read_back_with_their_cids(tmp_path: Path) -> None:
    items = blocks()
    data = car_of([*items, items[1]])  # a block put twice is one section
    index = CarIndex.scan(io.BytesIO(data))
    assert index.problems == []
    assert index.roots == [items[0][0]]
    assert list(index) == [cid for cid, _ in items]
    for cid, block in items:
        assert index.get(cid) == block
    # Each section as multiformats reads it: varint length, CIDv1 raw sha2-256, the bytes.
    stream = io.BytesIO(data)
    length, _, _ = varint.decode_raw(stream)
    stream.seek(length, io.SEEK_CUR)
    for cid, block in items:
        size, _, _ = varint.decode_raw(stream)
        section = stream.read(size)
        parsed = CID.decode(section[:36])
        assert (str(parsed.set(base="base32")), parsed.codec.name) == (cid, "raw")
        assert section[36:] == block
    assert stream.read() == b""


def test_a_tampered_block_is_reported_and_not_served() -> None:
    items = blocks(3)
    data = bytearray(car_of(items))
    data[-1] ^= 1  # the last byte of the last block
    index = CarIndex.scan(io.BytesIO(bytes(data)))
    assert [(p.code, p.cid) for p in index.problems] == [("car.hash", items[2][0])]
    assert items[2][0] not in index
    with pytest.raises(KeyError):
        index.get(items[2][0])


def test_a_truncated_file_is_a_framing_problem() -> None:
    data = car_of(blocks(2))
    index = CarIndex.scan(io.BytesIO(data[:-3]))
    assert [p.code for p in index.problems] == ["car.framing"]
    assert len(index) == 1


@pytest.mark.parametrize(
    "data",
    [b"", b"\x05abc", b"\x01\xa0", b"\x0a\xa2eroots\x80gversion\x02", b"\x80\x00"],
    ids=["empty", "short", "empty-map", "version-2", "non-minimal-varint"],
)
def test_broken_headers_are_refused(data: bytes) -> None:
    with pytest.raises(CarError):
        read_header(io.BytesIO(data))


def test_a_writer_refuses_bytes_that_are_not_the_cid() -> None:
    writer = CarWriter(io.BytesIO())
    with pytest.raises(ValueError, match="not"):
        writer.put(cid_for_bytes(b"a"), b"b")


def test_ipld_car_reads_every_block_and_finds_it_under_its_cid(tmp_path: Path) -> None:
    items = blocks(4)
    path = tmp_path / "x.car"
    path.write_bytes(car_of(items, root=items[2][0]))
    read = read_with_ipld_car(path)
    assert read["roots"] == [items[2][0]]
    assert [block["cid"] for block in read["blocks"]] == [cid for cid, _ in items]
    assert all(block["holds"] and block["codec"] == 0x55 for block in read["blocks"])


@pytest.mark.parametrize("workers", [1, 3])
def test_publish_seals_into_a_car_and_the_object_opens_from_it(workers: int) -> None:
    owner = generate_key_pair()
    plaintext = hashlib.shake_256(b"object").digest(10_000)
    out = io.BytesIO()
    writer = CarWriter(out)
    published = publish(
        plaintext,
        writer,
        key=owner.signing,
        publisher_id="me",
        object_id="o",
        created_at=1,
        chunk_size=1000,
        workers=workers,
    )
    writer.put(published.manifest.cid, published.manifest.canonical)
    writer.finish([published.manifest.cid])
    assert writer.blocks == 11  # ten chunks, each hashed once as it was sealed, and the manifest
    index = CarIndex.scan(io.BytesIO(out.getvalue()))
    assert index.problems == []
    grant = issue_grant(
        manifest=published.manifest,
        content_key=published.content_key,
        key=owner.signing,
        issuer_id="me",
        grant_id="g",
        audience="me",
        audience_x25519_public_key=owner.box_public,
        rights=[Right.READ],
        issued_at=1,
        expires_at=100,
    )
    opened = open_object(index.get(published.manifest.cid), grant, owner.box, index, now=2)
    assert b"".join(opened) == plaintext
