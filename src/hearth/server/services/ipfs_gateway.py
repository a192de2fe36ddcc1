"""The IPFS trustless gateway's rules: which answer a request asks for, and the one-block CAR.

An ADDS block is an IPFS raw block (CIDv1, raw codec, sha2-256), so the provider node can answer
``GET /ipfs/{cid}`` as the trustless gateway specification says
(https://specs.ipfs.tech/http-gateways/trustless-gateway/): the block's bytes
(``application/vnd.ipld.raw``) or a CARv1 holding it (``application/vnd.ipld.car``). Pure: no
I/O; the route reads the block through ``provider.get_block``, as the ADDS block routes do.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from hearth.adds.cid import decode_cid

from ..errors import ApiError

RAW = "application/vnd.ipld.raw"
CAR = "application/vnd.ipld.car"
# CARv1; the one block comes in depth-first order, once: the parameters IPIP-0412 has a gateway
# say rather than leave the client to guess.
CAR_CONTENT_TYPE = f"{CAR}; version=1; order=dfs; dups=n"
# A block never changes under its CID: a year, as the path gateway specification recommends.
IMMUTABLE = "public, max-age=29030400, immutable"
_BINARY_CID_PREFIX = bytes([0x01, 0x55, 0x12, 0x20])  # CIDv1, raw, sha2-256, 32 bytes


class Format(StrEnum):
    RAW = "raw"
    CAR = "car"


@dataclass(frozen=True)
class Answer:
    """What a gateway request is answered with, but for the bytes."""

    format: Format
    content_type: str
    headers: dict[str, str]


def car_of_block(cid: str, block: bytes) -> bytes:
    """A CARv1 (https://ipld.io/specs/transport/car/carv1/) holding one raw block: the header
    ``{"roots": [cid], "version": 1}`` in DAG-CBOR, then the block as a section (the length of
    the binary CID and the bytes, as a varint, then both). ``cid`` must be a canonical ADDS CID
    (``ValueError`` otherwise); the caller vouches that ``block`` hashes to it."""
    binary = _BINARY_CID_PREFIX + decode_cid(cid)
    return _framed_header(binary) + _varint(len(binary) + len(block)) + binary + block


def car_size(block_size: int) -> int:
    """The length of ``car_of_block`` for a block of ``block_size`` bytes (for HEAD)."""
    header = _framed_header(_BINARY_CID_PREFIX + bytes(32))  # the same length for every CID
    return len(header) + len(_varint(36 + block_size)) + 36 + block_size


def _framed_header(binary: bytes) -> bytes:
    # DAG-CBOR: a map of two entries, keys sorted by length ("roots" before "version"); a CID is
    # tag 42 over a byte string of the binary CID after a 0x00 (the identity multibase).
    link = b"\xd8\x2a" + _cbor_bytes_head(len(binary) + 1) + b"\x00" + binary
    header = b"\xa2" + b"\x65roots" + b"\x81" + link + b"\x67version" + b"\x01"
    return _varint(len(header)) + header


def negotiate(cid: str, format_query: str | None, accept: str | None) -> Answer:
    """The answer ``?format=`` (which wins, as the specification says) or else ``Accept`` asks
    for; 400 ``gateway_format_required`` when neither names a verifiable format this gateway
    serves (it serves no deserialized content)."""
    chosen = _from_query(format_query) if format_query is not None else _from_accept(accept)
    if chosen is None:
        raise ApiError(
            400,
            "gateway_format_required",
            "This trustless gateway answers only verifiable formats: ask for a raw block or a CAR.",
            hint="Add ?format=raw (or Accept: application/vnd.ipld.raw), or ?format=car (or "
            "Accept: application/vnd.ipld.car).",
        )
    headers = {
        "Cache-Control": IMMUTABLE,
        "X-Content-Type-Options": "nosniff",
        "X-Ipfs-Path": f"/ipfs/{cid}",
        "X-Ipfs-Roots": cid,
        "Vary": "Accept",
    }
    if chosen is Format.RAW:
        headers["Content-Disposition"] = f'attachment; filename="{cid}.bin"'
        headers["ETag"] = f'"{cid}.raw"'
        return Answer(chosen, RAW, headers)
    headers["Content-Disposition"] = f'attachment; filename="{cid}.car"'
    # Byte for byte the same CAR every time (one block, one order): a strong ETag.
    headers["ETag"] = f'"{cid}.car"'
    headers["Accept-Ranges"] = "none"
    return Answer(chosen, CAR_CONTENT_TYPE, headers)


def _from_query(value: str) -> Format | None:
    try:
        return Format(value)
    except ValueError:
        return None


def _from_accept(accept: str | None) -> Format | None:
    """The served format the Accept header prefers (highest q, then first listed); None when
    it names neither (``*/*`` included: a browser's default must not get ciphertext)."""
    best: tuple[float, Format] | None = None
    for item in (accept or "").split(","):
        media, *params = (part.strip() for part in item.split(";"))
        values = dict(_param(p) for p in params if "=" in p)
        try:
            quality = float(values.get("q", "1"))
        except ValueError:
            continue
        if media.lower() == RAW:
            found = Format.RAW
        elif media.lower() == CAR and values.get("version", "1") == "1":
            found = Format.CAR
        else:
            continue
        if quality > 0 and (best is None or quality > best[0]):
            best = (quality, found)
    return None if best is None else best[1]


def _param(text: str) -> tuple[str, str]:
    name, _, value = text.partition("=")
    return name.strip().lower(), value.strip().strip('"')


def _cbor_bytes_head(length: int) -> bytes:
    # Major type 2 (bytes); a binary CID here is 37 bytes with its multibase byte: one-byte form.
    return bytes([0x58, length]) if length < 256 else bytes([0x59]) + length.to_bytes(2, "big")


def _varint(value: int) -> bytes:
    """An unsigned LEB128 varint, as CAR frames its header and sections."""
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


__all__ = [
    "CAR",
    "CAR_CONTENT_TYPE",
    "IMMUTABLE",
    "RAW",
    "Answer",
    "Format",
    "car_of_block",
    "car_size",
    "negotiate",
]
