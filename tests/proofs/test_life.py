"""An exported life (``hearth.proofs.life``): written into a CAR, verified offline, and every
refusal the issue names: a tampered block, a missing block, a document signed by another key, a
head that omits an object; and the checks that need the owner's keys."""

from __future__ import annotations

import io
import json
from collections.abc import Callable

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from hearth.adds import b64url_encode
from hearth.adds.car import CarIndex, CarSplice, CarWriter
from hearth.proofs.life import (
    DATA_SETS,
    HEAD_ID,
    LifeReport,
    LifeWriter,
    add_reader,
    grant_reader,
    verify_life,
)

NOW = 1_795_000_000
DID = "did:key:z6MkLeaver"
ROOT = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
BOX = X25519PrivateKey.from_private_bytes(bytes(range(1, 33)))
STRANGER = Ed25519PrivateKey.from_private_bytes(bytes(range(2, 34)))


def lines(name: str, count: int = 40) -> list[bytes]:
    return [
        json.dumps({"kind": name, "n": i, "text": "x" * 90}).encode() + b"\n" for i in range(count)
    ]


class Dropping(CarWriter):
    """A writer that leaves out the blocks ``drop`` names (a missing block)."""

    def __init__(self, stream: io.BytesIO, drop: set[str]) -> None:
        super().__init__(stream)
        self.drop = drop

    def put(self, cid: str, data: bytes | memoryview) -> None:
        if cid not in self.drop:
            super().put(cid, data)


def life(
    *,
    before_finish: Callable[[LifeWriter, CarWriter], None] | None = None,
    drop: set[str] | None = None,
) -> tuple[bytes, LifeWriter]:
    out = io.BytesIO()
    car = Dropping(out, drop or set())
    writer = LifeWriter(
        car,
        key=ROOT,
        did=DID,
        box_public=BOX.public_key().public_bytes_raw(),
        exported_at=NOW,
        chunk_size=1024,
    )
    for name in DATA_SETS:
        writer.add(name, lines(name) if name != "inbox" else [])
    if before_finish is not None:
        before_finish(writer, car)
    head = writer.finish({"identity_id": "id-leaver", "service": "https://old.example"})
    car.finish([head.cid])
    return out.getvalue(), writer


def verify(data: bytes, now: int = NOW, **options: object) -> LifeReport:
    index = CarIndex.scan(io.BytesIO(data))
    report = LifeReport()
    for problem in index.problems:
        report.refuse(problem.code, problem.message, problem.cid)
    return verify_life(index, now=now, report=report, **options)  # type: ignore[arg-type]


def codes(report: LifeReport) -> set[str]:
    return {problem.code for problem in report.problems}


def test_a_life_verifies_and_every_object_opens_with_the_owners_key() -> None:
    data, writer = life()
    root_key = b64url_encode(ROOT.public_key().public_bytes_raw())
    report = verify(data, box_key=BOX, root_public_key=root_key)
    assert report.ok, report.problems
    assert (report.did, report.identity_id, report.service) == (
        DID,
        "id-leaver",
        "https://old.example",
    )
    assert [entry.name for entry in report.objects] == sorted(DATA_SETS)
    assert report.opened == len(DATA_SETS) + 1  # and the index
    # head + (manifest + grant) per object and the index, every document signed by the root key.
    assert report.documents == report.signatures == 1 + 2 * (len(DATA_SETS) + 1)
    assert report.blocks == report.documents + report.chunks
    assert {entry.name: entry.records for entry in report.objects} == {
        name: 0 if name == "inbox" else 40 for name in DATA_SETS
    }
    assert report.index is not None
    assert report.index["objects"][0]["manifest"] in {
        entry.manifest for entry in writer.objects.values()
    }


def test_without_keys_everything_but_opening_is_checked() -> None:
    report = verify(life()[0])
    assert report.ok
    assert report.opened is None


def test_a_tampered_block_is_refused() -> None:
    data, writer = life()
    chunk = bytearray(data)
    index = CarIndex.scan(io.BytesIO(data))
    manifest = json.loads(index.get(writer.objects["memories"].manifest))
    at, length = index.locations[manifest["chunks"][1]["cid"]]
    chunk[at + length // 2] ^= 0x40
    report = verify(bytes(chunk), box_key=BOX)
    assert {"car.hash", "life.block_missing", "life.open"} <= codes(report)
    assert not report.ok


def test_a_missing_block_is_refused() -> None:
    data0 = life()[0]
    index = CarIndex.scan(io.BytesIO(data0))
    head = json.loads(index.get(index.roots[0]))
    listed = json.loads(index.get(head["manifest_cid"]))["metadata"]["hearth_life"]["objects"]
    chronicle = next(entry for entry in listed if entry["name"] == "chronicle")
    first_chunk = json.loads(index.get(chronicle["manifest"]))["chunks"][0]["cid"]
    # Cut that chunk's section out of the file, framing and all.
    at, length = index.locations[first_chunk]
    section_start = at - 36 - 2  # varint(length + 36) is two bytes for a 1 KiB block
    assert data0[section_start] & 0x80
    damaged = data0[:section_start] + data0[at + length :]
    report = verify(damaged, box_key=BOX)
    assert "life.block_missing" in codes(report)
    assert any(p.cid == first_chunk for p in report.problems)
    assert not report.ok


def test_a_document_signed_by_another_key_is_refused() -> None:
    def stranger_writes_memories(writer: LifeWriter, car: CarWriter) -> None:
        other = LifeWriter(
            car,
            key=STRANGER,
            did=DID,
            box_public=BOX.public_key().public_bytes_raw(),
            exported_at=NOW,
        )
        del writer.objects["memories"]
        writer.objects["memories"] = other.add("memories", lines("forged"))

    report = verify(life(before_finish=stranger_writes_memories)[0], box_key=BOX)
    assert "life.signer" in codes(report)
    assert not report.ok


def test_a_head_that_omits_an_object_is_refused() -> None:
    def omit(writer: LifeWriter, _car: CarWriter) -> None:
        del writer.objects["memories"]

    report = verify(life(before_finish=omit)[0], box_key=BOX)
    assert {"life.object_missing", "life.block_unlisted"} <= codes(report)
    assert not report.ok


def test_another_root_key_and_another_box_key_are_refused() -> None:
    data = life()[0]
    stranger = b64url_encode(STRANGER.public_key().public_bytes_raw())
    assert "life.signer" in codes(verify(data, root_public_key=stranger))
    other_box = X25519PrivateKey.from_private_bytes(bytes(range(3, 35)))
    assert "life.no_grant" in codes(verify(data, box_key=other_box))


def test_a_car_with_another_root_or_two_roots_is_refused() -> None:
    data, _ = life()
    index = CarIndex.scan(io.BytesIO(data))
    out = io.BytesIO()
    car = CarWriter(out, root_count=2)
    for cid in index:
        car.put(cid, index.get(cid))
    car.finish([index.roots[0], index.roots[0]])
    assert "life.roots" in codes(verify(out.getvalue()))


@pytest.mark.parametrize("name", ["memories", "nonsense"])
def test_a_data_set_is_written_once_and_named(name: str) -> None:
    writer = LifeWriter(
        CarWriter(io.BytesIO()),
        key=ROOT,
        did=DID,
        box_public=BOX.public_key().public_bytes_raw(),
        exported_at=NOW,
    )
    if name == "memories":
        writer.add(name, [])
    with pytest.raises(ValueError, match=r"already written|not a data set"):
        writer.add(name, [])


def test_the_head_names_the_index() -> None:
    data, _ = life()
    index = CarIndex.scan(io.BytesIO(data))
    head = json.loads(index.get(index.roots[0]))
    assert (head["kind"], head["head_id"], head["sequence"]) == ("head", HEAD_ID, 0)


def test_a_reader_added_to_an_export_opens_every_object_and_the_owner_still_does() -> None:
    data, writer = life()
    provider = X25519PrivateKey.from_private_bytes(bytes(range(5, 37)))
    source = CarIndex.scan(io.BytesIO(data))
    out = io.BytesIO()
    car = CarWriter(out)
    head = add_reader(
        source,
        car,
        key=ROOT,
        box_key=BOX,
        audience="did:web:provider.example",
        audience_public=provider.public_key().public_bytes_raw(),
        now=NOW + 60,
    )
    car.finish([head.cid])
    assert (head.document["sequence"], head.document["parents"]) == (1, [source.roots[0]])
    for key in (provider, BOX):
        report = verify(out.getvalue(), now=NOW + 60, box_key=key)
        assert report.ok, report.problems
        assert report.opened == len(DATA_SETS) + 1
    moved = verify(out.getvalue(), now=NOW + 60)
    assert {entry.name: len(entry.grants) for entry in moved.objects} == dict.fromkeys(DATA_SETS, 2)
    assert [entry.manifest for entry in moved.objects] == [
        writer.objects[name].manifest for name in sorted(DATA_SETS)
    ]


def test_an_export_spliced_with_a_readers_grants_is_a_copy_made_of_its_own_blocks() -> None:
    # What an import sends: the new grants, index and head, then the export's data blocks read
    # from the export itself (no copy written), read back in pieces of any size.
    data, _ = life()
    provider = X25519PrivateKey.from_private_bytes(bytes(range(5, 37)))
    source = CarIndex.scan(io.BytesIO(data))
    added = io.BytesIO()
    car = CarWriter(added)
    made = grant_reader(
        source,
        car,
        key=ROOT,
        box_key=BOX,
        audience="did:web:provider.example",
        audience_public=provider.public_key().public_bytes_raw(),
        now=NOW + 60,
        open_objects=False,
    )
    car.finish([made.head.cid])
    spliced = CarSplice(added.getvalue(), source, made.kept)
    whole = spliced.read()
    assert len(whole) == spliced.size == spliced.seek(0, io.SEEK_END)
    spliced.seek(0)
    assert b"".join(iter(lambda: spliced.read(777), b"")) == whole
    report = verify(whole, now=NOW + 60, box_key=provider)
    assert report.ok, report.problems
    assert report.root == made.head.cid
    assert report.opened == len(DATA_SETS) + 1
    # Every data block of the export is in it, and none of the old head's and index's.
    blocks = CarIndex.scan(io.BytesIO(whole))
    assert made.kept <= set(blocks)
    assert source.roots[0] not in blocks


def test_a_reader_is_added_only_by_the_root_key_to_a_sound_export() -> None:
    data, _ = life()
    provider = X25519PrivateKey.from_private_bytes(bytes(range(5, 37)))
    options = {
        "box_key": BOX,
        "audience": "did:web:provider.example",
        "audience_public": provider.public_key().public_bytes_raw(),
        "now": NOW,
    }
    with pytest.raises(ValueError, match="root key"):
        add_reader(
            CarIndex.scan(io.BytesIO(data)), CarWriter(io.BytesIO()), key=STRANGER, **options
        )  # type: ignore[arg-type]
    damaged = bytearray(data)
    damaged[len(damaged) // 2] ^= 1
    with pytest.raises(ValueError, match="does not verify"):
        add_reader(
            CarIndex.scan(io.BytesIO(bytes(damaged))), CarWriter(io.BytesIO()), key=ROOT, **options
        )  # type: ignore[arg-type]


def test_a_data_set_read_from_a_file_counts_its_records_by_line() -> None:
    out = io.BytesIO()
    car = CarWriter(out)
    writer = LifeWriter(
        car, key=ROOT, did=DID, box_public=BOX.public_key().public_bytes_raw(), exported_at=NOW
    )
    listed = b"".join(lines("memories", 3000))
    for name in DATA_SETS:
        source = io.BytesIO(listed if name == "memories" else b"")
        assert writer.add(name, source).records == (3000 if name == "memories" else 0)
    head = writer.finish({"identity_id": "id-leaver"})
    car.finish([head.cid])
    report = verify(out.getvalue(), box_key=BOX)
    assert report.ok, report.problems
    assert writer.objects["memories"].size == len(listed)
