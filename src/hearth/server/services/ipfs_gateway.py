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

from hearth.adds.car import car_header, section_prefix
from hearth.adds.cid import cid_from_digest

from ..errors import ApiError

RAW = "application/vnd.ipld.raw"
CAR = "application/vnd.ipld.car"
# CARv1; the one block comes in depth-first order, once: the parameters IPIP-0412 has a gateway
# say rather than leave the client to guess. A client that allows duplicates (``dups=y``) is
# told so back: one block, once, is a CAR both with and without duplicates allowed.
CAR_CONTENT_TYPE = f"{CAR}; version=1; order=dfs; dups=n"
CAR_DUPS_CONTENT_TYPE = f"{CAR}; version=1; order=dfs; dups=y"
# ``?filename=``: a name for Content-Disposition, of characters that need no quoting there.
FILENAME_PATTERN = r"^[A-Za-z0-9._-]{1,200}$"
# A block never changes under its CID: a year, as the path gateway specification recommends.
IMMUTABLE = "public, max-age=29030400, immutable"


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
    ``{"roots": [cid], "version": 1}``, then the block as a section (``hearth.adds.car``, the
    exports' CAR). ``cid`` must be a canonical ADDS CID (``ValueError`` otherwise); the caller
    vouches that ``block`` hashes to it."""
    return car_header([cid]) + section_prefix(cid, len(block)) + block


def car_size(block_size: int) -> int:
    """The length of ``car_of_block`` for a block of ``block_size`` bytes (for HEAD): every
    ADDS CID has the same length."""
    return len(car_header([_ANY_CID])) + len(section_prefix(_ANY_CID, block_size)) + block_size


_ANY_CID = cid_from_digest(bytes(32))


def negotiate(
    cid: str, format_query: str | None, accept: str | None, filename: str | None = None
) -> Answer:
    """The answer ``?format=`` (which wins) or else ``Accept`` asks for; 400
    ``gateway_format_required`` when neither names a verifiable format this gateway serves (it
    serves no deserialized content). A CAR's ``dups`` is the one the client's Accept gives it,
    ``?format=car`` or not. ``filename`` (``?filename=``, matching ``FILENAME_PATTERN``) names
    the attachment instead of the CID."""
    accepted = _accepted(accept)
    chosen = _from_query(format_query) if format_query is not None else _best(accepted)
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
        headers["Content-Disposition"] = f'attachment; filename="{filename or cid + ".bin"}"'
        headers["ETag"] = f'"{cid}.raw"'
        return Answer(chosen, RAW, headers)
    headers["Content-Disposition"] = f'attachment; filename="{filename or cid + ".car"}"'
    # Byte for byte the same CAR every time (one block, one order): a strong ETag.
    headers["ETag"] = f'"{cid}.car"'
    headers["Accept-Ranges"] = "none"
    car_params = next((params for _, found, params in accepted if found is Format.CAR), {})
    dups = car_params.get("dups", "n").lower() == "y"
    content_type = CAR_DUPS_CONTENT_TYPE if dups else CAR_CONTENT_TYPE
    return Answer(chosen, content_type, headers)


def _from_query(value: str) -> Format | None:
    try:
        return Format(value)
    except ValueError:
        return None


def _best(accepted: list[tuple[float, Format, dict[str, str]]]) -> Format | None:
    """The served format the Accept header prefers (highest q, then first listed); None when
    it names neither (``*/*`` included: a browser's default must not get ciphertext)."""
    return accepted[0][1] if accepted else None


def _accepted(accept: str | None) -> list[tuple[float, Format, dict[str, str]]]:
    """The Accept header's served formats, each with its q and parameters, preferred first."""
    found_all: list[tuple[float, Format, dict[str, str]]] = []
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
        if quality > 0:
            found_all.append((quality, found, values))
    return sorted(found_all, key=lambda entry: -entry[0])  # stable: first listed first


def _param(text: str) -> tuple[str, str]:
    name, _, value = text.partition("=")
    return name.strip().lower(), value.strip().strip('"')


__all__ = [
    "CAR",
    "CAR_CONTENT_TYPE",
    "CAR_DUPS_CONTENT_TYPE",
    "FILENAME_PATTERN",
    "IMMUTABLE",
    "RAW",
    "Answer",
    "Format",
    "car_of_block",
    "car_size",
    "negotiate",
]
