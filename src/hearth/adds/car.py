"""CAR v1 (the IPLD Content Addressable aRchive), for ADDS blocks: write and read, streaming.

A CAR v1 file is a header, then sections. The header is ``varint(n)`` then ``n`` bytes of
DAG-CBOR: the map ``{"roots": [CID, ...], "version": 1}``, each CID a tag-42 byte string of
``00`` (the identity multibase prefix) and the binary CID. A section is ``varint(n)``, then the
binary CID and the block: ``n`` bytes in all. ADDS names every block and document by a CIDv1,
raw codec, sha2-256 (``01 55 12 20`` + digest), so the sections here carry exactly that.

Pure: the writer and the reader take file-like objects from the caller and do no other I/O.
The header is the only DAG-CBOR this module writes or reads, so it has its own small codec
for that one shape (no CBOR library is a dependency of hearth), and ``tests/adds/test_car.py``
checks it against ``multiformats`` and against ``@ipld/car``, the reference implementation.

The writer is a batching ``BlockSink``: ``publish`` streams an object's chunks straight into the
file, from its sealing threads, each block hashed once.
The roots are known only at the end (the head is signed last), and a header naming one
ADDS CID always has the same length, so the writer reserves it and writes it last, in place;
the output must therefore be seekable.
"""

from __future__ import annotations

import bisect
import hashlib
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import BinaryIO

from .cid import cid_from_digest, decode_binary_cid, decode_cid
from .objects import HashedBlock

__all__ = [
    "MAX_SECTION",
    "CarError",
    "CarIndex",
    "CarSplice",
    "CarWriter",
    "SectionProblem",
    "car_header",
    "encode_varint",
    "read_header",
    "section_prefix",
]

# A section holds one block: ADDS chunks are at most 16 MiB (+16 bytes of tag), documents much
# smaller. A longer length is refused before anything is allocated for it.
MAX_SECTION = (16 << 20) + 1024
_MAX_HEADER = 1 << 20
_CID_BYTES = 36
_TAG_CID = 42
_PREFIX = bytes([0x01, 0x55, 0x12, 0x20])


class CarError(ValueError):
    """A CAR that cannot be read on: its header or a section's framing is broken."""


def encode_varint(value: int) -> bytes:
    """Unsigned LEB128, as multiformats' unsigned-varint (minimal)."""
    if value < 0:
        raise ValueError("a varint is unsigned")
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _read_varint(stream: BinaryIO) -> tuple[int, int] | None:
    """(value, bytes read) from the stream; None at a clean end of file (no byte at all)."""
    value = shift = count = 0
    while True:
        byte = stream.read(1)
        if not byte:
            if count == 0:
                return None
            raise CarError("the file ends inside a varint")
        count += 1
        value |= (byte[0] & 0x7F) << shift
        if not byte[0] & 0x80:
            if count > 1 and byte[0] == 0:
                raise CarError("a varint is not minimal")
            return value, count
        shift += 7
        if count >= 9:
            raise CarError("a varint is longer than 9 bytes")


def _cbor_head(major: int, argument: int) -> bytes:
    if argument < 24:
        return bytes([major << 5 | argument])
    if argument < 0x100:
        return bytes([major << 5 | 24, argument])
    if argument < 0x10000:
        return bytes([major << 5 | 25]) + argument.to_bytes(2, "big")
    return bytes([major << 5 | 26]) + argument.to_bytes(4, "big")


def _cbor_text(text: str) -> bytes:
    data = text.encode("utf-8")
    return _cbor_head(3, len(data)) + data


def car_header(roots: Sequence[str]) -> bytes:
    """The header (its varint length included) naming ``roots``, ADDS CIDs, in order.

    DAG-CBOR's canonical map order is by key length, then bytes: ``roots`` before ``version``."""
    body = bytearray(_cbor_head(5, 2))
    body += _cbor_text("roots") + _cbor_head(4, len(roots))
    for root in roots:
        link = b"\x00" + _binary_cid(root)
        body += _cbor_head(6, _TAG_CID) + _cbor_head(2, len(link)) + link
    body += _cbor_text("version") + _cbor_head(0, 1)
    return encode_varint(len(body)) + bytes(body)


def section_prefix(cid: str, length: int) -> bytes:
    """What precedes a block of ``length`` bytes named ``cid`` in a CAR: the section's length
    as a varint, then the binary CID."""
    binary = _binary_cid(cid)
    return encode_varint(len(binary) + length) + binary


def _binary_cid(cid: str) -> bytes:
    """The binary form of an ADDS CID: ``01 55 12 20`` and the digest."""
    return _PREFIX + decode_cid(cid)


# ---- reading the header: the DAG-CBOR subset a CAR v1 header uses ------------------------------


class _Cbor:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.at = 0

    def _take(self, n: int) -> bytes:
        if self.at + n > len(self.data):
            raise CarError("the header ends early")
        out = self.data[self.at : self.at + n]
        self.at += n
        return out

    def _head(self) -> tuple[int, int]:
        first = self._take(1)[0]
        major, info = first >> 5, first & 0x1F
        if info < 24:
            return major, info
        if info > 27:
            raise CarError("the header uses an indefinite length or a reserved value")
        width = 1 << (info - 24)
        argument = int.from_bytes(self._take(width), "big")
        return major, argument

    def value(self, depth: int = 0) -> object:
        if depth > 8:
            raise CarError("the header nests too deeply")
        major, argument = self._head()
        if major == 0:
            return argument
        if major == 2:
            return self._take(argument)
        if major == 3:
            try:
                return self._take(argument).decode("utf-8")
            except UnicodeDecodeError:
                raise CarError("the header holds a string that is not UTF-8") from None
        if major == 4:
            return [self.value(depth + 1) for _ in range(argument)]
        if major == 5:
            items: dict[str, object] = {}
            for _ in range(argument):
                key = self.value(depth + 1)
                if not isinstance(key, str):
                    raise CarError("the header has a map key that is not a string")
                items[key] = self.value(depth + 1)
            return items
        if major == 6 and argument == _TAG_CID:
            link = self.value(depth + 1)
            if not isinstance(link, bytes) or link[:1] != b"\x00":
                raise CarError("a root is not a tag-42 CID")
            return _Link(link[1:])
        raise CarError(f"the header uses CBOR major type {major}, which a CAR header has not")


@dataclass(frozen=True)
class _Link:
    binary: bytes


def read_header(stream: BinaryIO) -> tuple[list[str], int]:
    """The roots a CAR names, and the header's length in bytes (the first section's offset).

    Raises :class:`CarError` when the header is not a CAR v1 header whose roots are ADDS CIDs."""
    head = _read_varint(stream)
    if head is None:
        raise CarError("the file is empty")
    length, width = head
    if not 0 < length <= _MAX_HEADER:
        raise CarError("the header's length is out of range")
    data = stream.read(length)
    if len(data) != length:
        raise CarError("the file ends inside the header")
    reader = _Cbor(data)
    header = reader.value()
    if reader.at != len(data):
        raise CarError("bytes follow the header's CBOR value")
    if not isinstance(header, dict) or header.get("version") != 1:
        raise CarError("not a CAR version 1 header")
    roots = header.get("roots")
    if not isinstance(roots, list):
        raise CarError("the header has no list of roots")
    names: list[str] = []
    for root in roots:
        if not isinstance(root, _Link):
            raise CarError("a root is not a CID")
        reason, digest = decode_binary_cid(root.binary)
        if reason:
            raise CarError(f"a root is not an ADDS CID ({reason})")
        names.append(cid_from_digest(digest))
    return names, width + length


# ---- writing -----------------------------------------------------------------------------------


class CarWriter:
    """Writes a CAR v1 to a seekable binary stream; a ``BlockSink`` for ``publish``.

    ``put`` verifies each block against its CID and writes it once (a block put twice, such as
    two objects' identical chunk, is one section). ``finish(roots)`` writes the header in the
    space reserved at the start, then leaves the stream at its end."""

    def __init__(self, stream: BinaryIO, *, root_count: int = 1) -> None:
        self._stream = stream
        self._start = stream.tell()
        self._reserved = len(car_header([cid_from_digest(bytes(32))] * root_count))
        self._root_count = root_count
        stream.write(bytes(self._reserved))
        self._written: set[bytes] = set()
        self._lock = threading.Lock()
        self.blocks = 0
        self.bytes = self._reserved
        self.finished = False

    def put(self, cid: str, data: bytes | memoryview) -> None:
        """Verify ``data`` against ``cid`` and write it (bytes named elsewhere: a document)."""
        binary = _binary_cid(cid)
        if hashlib.sha256(data).digest() != binary[4:]:
            raise ValueError(f"the block's bytes are not {cid}")
        self._write(binary, data)

    def _write(self, binary: bytes, data: bytes | memoryview) -> None:
        with self._lock:
            if binary in self._written:
                return
            self._written.add(binary)
            prefix = encode_varint(len(binary) + len(data)) + binary
            self._stream.write(prefix)
            self._stream.write(data)
            self.blocks += 1
            self.bytes += len(prefix) + len(data)

    def batch(self) -> _CarBatch:
        """A ``BlockBatch`` for ``publish``: its blocks were hashed as they were sealed
        (``HashedBlock``), so they are written without a second hash, from the sealing threads,
        in whatever order they come (a CAR's sections have no order)."""
        return _CarBatch(self)

    def holds(self, cid: str) -> bool:
        return _binary_cid(cid) in self._written

    def finish(self, roots: Sequence[str]) -> None:
        if len(roots) != self._root_count:
            raise ValueError(f"this writer reserved room for {self._root_count} roots")
        header = car_header(roots)
        end = self._stream.tell()
        self._stream.seek(self._start)
        self._stream.write(header)
        self._stream.seek(end)
        self.finished = True


class _CarBatch:
    """A whole object's blocks. ``commit`` has nothing to do: the file is made durable and put
    in place as a whole by its writer's owner, and an aborted object's blocks cannot be taken
    back out of the stream: the owner drops the whole file (``hearth export`` does)."""

    def __init__(self, writer: CarWriter) -> None:
        self._writer = writer

    def add(self, block: HashedBlock) -> None:
        self._writer._write(_binary_cid(block.cid), block.data)

    def commit(self) -> None:
        return None

    def abort(self) -> None:
        return None


# ---- reading: one pass that checks every block, then lookups by CID ----------------------------


@dataclass(frozen=True)
class SectionProblem:
    """A section that is not a good block: ``code`` is ``car.cid`` (not an ADDS CID),
    ``car.hash`` (the bytes are not the CID's) or ``car.framing`` (the file ends inside a
    section, or a length is out of range)."""

    code: str
    message: str
    offset: int
    cid: str | None = None


@dataclass
class CarIndex:
    """Where each block of a CAR is, after one pass that hashed every block against its CID.

    Only blocks that hash to their CID are indexed, so :meth:`get` returns authentic bytes
    (it still re-checks them, since the stream may have changed since, unless ``recheck`` is
    off: a stream nobody else can write, such as a service's own spool of a request's body).
    ``problems`` lists every section that is not a good block; reading stops at broken
    framing."""

    stream: BinaryIO
    roots: list[str]
    locations: dict[str, tuple[int, int]] = field(default_factory=dict)
    problems: list[SectionProblem] = field(default_factory=list)
    bytes_read: int = 0
    recheck: bool = True

    verifies_blocks = True

    @classmethod
    def scan(cls, stream: BinaryIO, *, recheck: bool = True) -> CarIndex:
        """Read the header and every section. Raises :class:`CarError` on a broken header."""
        start = stream.tell()
        roots, offset = read_header(stream)
        index = cls(stream=stream, roots=roots, recheck=recheck)
        offset += start
        for problem in index._sections(offset):
            index.problems.append(problem)
        return index

    def _sections(self, offset: int) -> Iterator[SectionProblem]:
        stream = self.stream
        while True:
            try:
                head = _read_varint(stream)
            except CarError as exc:
                yield SectionProblem("car.framing", str(exc), offset)
                return
            if head is None:
                self.bytes_read = offset
                return
            length, width = head
            if not _CID_BYTES <= length <= MAX_SECTION:
                yield SectionProblem("car.framing", f"a section of {length} bytes", offset)
                return
            section = stream.read(length)
            if len(section) != length:
                yield SectionProblem("car.framing", "the file ends inside a section", offset)
                return
            data_at = offset + width + _CID_BYTES
            reason, digest = decode_binary_cid(section[:_CID_BYTES])
            if reason:
                yield SectionProblem(
                    "car.cid", f"a section's CID is not an ADDS CID ({reason})", offset
                )
            else:
                cid = cid_from_digest(digest)
                block = memoryview(section)[_CID_BYTES:]
                if hashlib.sha256(block).digest() != digest:
                    yield SectionProblem(
                        "car.hash", f"the block's bytes are not {cid}", offset, cid
                    )
                elif cid not in self.locations:
                    self.locations[cid] = (data_at, length - _CID_BYTES)
            offset += width + length

    def __contains__(self, cid: object) -> bool:
        return cid in self.locations

    def __len__(self) -> int:
        return len(self.locations)

    def __iter__(self) -> Iterator[str]:
        return iter(self.locations)

    def get(self, cid: str) -> bytes:
        """The block's bytes; ``KeyError`` when the CAR holds no good block of that CID."""
        at, length = self.locations[cid]
        self.stream.seek(at)
        data = self.stream.read(length)
        if len(data) != length or (
            self.recheck and cid_from_digest(hashlib.sha256(data).digest()) != cid
        ):
            raise KeyError(cid)
        return data


class CarSplice:
    """A CAR read as one file, never written out: ``head`` (bytes: a header and new sections,
    as a ``CarWriter`` wrote them into memory) followed by the sections of another CAR
    (``source``, scanned) whose CIDs are in ``kept``, read from its stream as they are read.
    A copy of a large CAR with a few blocks changed costs the few blocks (an import sends an
    export so, with its new grants, index and head: ``hearth.client.export.import_export``).

    Read-only and seekable, as a request body must be (its length is known up front); reading
    moves ``source``'s stream. The kept sections go in the source's order, adjacent ones read
    as one range; they are not hashed again here (``CarIndex.scan`` did, and their reader
    hashes every block it is sent)."""

    def __init__(self, head: bytes, source: CarIndex, kept: Iterable[str]) -> None:
        self._stream = source.stream
        ranges: list[list[int]] = []
        for at, length in sorted(source.locations[cid] for cid in kept):
            start = at - len(encode_varint(_CID_BYTES + length)) - _CID_BYTES
            if ranges and ranges[-1][1] == start:
                ranges[-1][1] = at + length
            else:
                ranges.append([start, at + length])
        # Each part: where it starts in the splice, and either bytes or a range of the source.
        self._parts: list[tuple[int, bytes | tuple[int, int]]] = [(0, head)]
        size = len(head)
        for start, end in ranges:
            self._parts.append((size, (start, end)))
            size += end - start
        self._starts = [start for start, _ in self._parts]
        self.size = size
        self._position = 0

    def seekable(self) -> bool:
        return True

    def readable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = 0) -> int:
        base = (0, self._position, self.size)[whence]
        if base + offset < 0:
            raise ValueError("a negative position")
        self._position = base + offset
        return self._position

    def read(self, size: int = -1, /) -> bytes:
        end = self.size if size < 0 else min(self.size, self._position + size)
        out = bytearray()
        while self._position < end:
            number = bisect.bisect_right(self._starts, self._position) - 1
            start, part = self._parts[number]
            part_end = self._starts[number + 1] if number + 1 < len(self._parts) else self.size
            take = min(end, part_end) - self._position
            skip = self._position - start
            if isinstance(part, bytes):
                out += part[skip : skip + take]
            else:
                self._stream.seek(part[0] + skip)
                data = self._stream.read(take)
                if len(data) != take:
                    raise CarError("the source CAR ended early: it changed since it was read")
                out += data
            self._position += take
        return bytes(out)
