"""Content identifiers in the one shape ADDS allows.

A CID here is CIDv1 with the raw codec (0x55) and a sha2-256 multihash of 32 bytes, written as
multibase base32 lower case without padding (prefix ``b``): 59 characters. The binary form is
always ``01 55 12 20`` followed by the digest, so the varints are one byte each and minimal.
``multiformats`` accepts far more than this (other codecs, hashes, bases); it is used in the tests
only, as a second opinion.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re

__all__ = [
    "CANONICAL_CID_CLASSES",
    "CANONICAL_CID_PATTERN",
    "CID_LENGTH",
    "cid_for_bytes",
    "cid_from_digest",
    "cid_problem",
    "decode_binary_cid",
    "decode_cid",
]

CID_LENGTH = 59
_PREFIX = bytes([0x01, 0x55, 0x12, 0x20])
_SPEC_PATTERN = re.compile(r"b[a-z2-7]+")
# Every canonical raw/sha2-256 CIDv1 matches this, and nothing else does: the first 32 bits
# (01 55 12 20) spell "afkrei" plus the high bits of the next character, and the last character
# carries two unused bits that must be zero.
_CANONICAL = re.compile(r"bafkrei[a-h][a-z2-7]{50}[aeimquy4]")
CANONICAL_CID_PATTERN = _CANONICAL
# The same pattern as (length, alphabet, narrower sets by position), for rules.py to check a
# column of CIDs without a regex; tests/adds/test_fast_paths.py holds the two to agreement.
_BASE32 = "abcdefghijklmnopqrstuvwxyz234567"
CANONICAL_CID_CLASSES: tuple[int, str, dict[int, str]] = (
    CID_LENGTH,
    _BASE32,
    {**dict(enumerate("bafkrei")), 7: "abcdefgh", CID_LENGTH - 1: "aeimquy4"},
)


def cid_from_digest(digest: bytes) -> str:
    """The CID string of a sha2-256 digest."""
    if len(digest) != 32:
        raise ValueError("a sha2-256 digest is 32 bytes")
    return "b" + base64.b32encode(_PREFIX + digest).decode("ascii").rstrip("=").lower()


def cid_for_bytes(data: bytes | memoryview) -> str:
    """The CID of a block or document: raw codec, sha2-256 of exactly these bytes."""
    return cid_from_digest(hashlib.sha256(data).digest())


def _varint(data: bytes, offset: int) -> tuple[int, int, bool]:
    """Read an unsigned LEB128 varint: (value, next offset, minimal)."""
    value = shift = 0
    start = offset
    while True:
        if offset >= len(data) or offset - start >= 9:
            raise ValueError("truncated varint")
        byte = data[offset]
        offset += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            minimal = offset - start == 1 or byte != 0
            return value, offset, minimal


def decode_binary_cid(data: bytes) -> tuple[str, bytes]:
    """Check a binary CID against the profile: ('', digest) when it fits, else (reason, b'').

    Reasons, in the order they are checked: ``version``, ``varint``, ``codec``, ``hash``,
    ``digest_length``, ``truncated``, ``trailing``.
    """
    try:
        version, at, minimal_v = _varint(data, 0)
        if version != 1:
            return "version", b""
        codec, at, minimal_c = _varint(data, at)
        hash_code, at, minimal_h = _varint(data, at)
        length, at, minimal_l = _varint(data, at)
    except ValueError:
        return "truncated", b""
    if not (minimal_v and minimal_c and minimal_h and minimal_l):
        return "varint", b""
    if codec != 0x55:
        return "codec", b""
    if hash_code != 0x12:
        return "hash", b""
    if length != 32:
        return "digest_length", b""
    digest = data[at : at + 32]
    if len(digest) < 32:
        return "truncated", b""
    if len(data) > at + 32:
        return "trailing", b""
    return "", digest


def cid_problem(text: str) -> tuple[str, str] | None:
    """Why ``text`` is not an ADDS CID, as (rule, message), or None when it is one.

    ``rule`` is ``pattern`` when the specification's text pattern or length fails, otherwise the
    reason the decoded form is refused (see ``decode_binary_cid``) or ``non_canonical``.
    """
    if _CANONICAL.fullmatch(text):
        return None
    if len(text) != CID_LENGTH or not _SPEC_PATTERN.fullmatch(text):
        return "pattern", "a CID is 'b' and 58 lower-case base32 characters"
    body = text[1:].upper()
    try:
        raw = base64.b32decode(body + "=" * (-len(body) % 8))
    except binascii.Error:
        return "pattern", "not base32"
    reason, _ = decode_binary_cid(raw)
    messages = {
        "version": "not a CIDv1",
        "varint": "a varint in the CID is not minimally encoded",
        "codec": "the CID's codec is not raw (0x55)",
        "hash": "the CID's hash function is not sha2-256 (0x12)",
        "digest_length": "the CID's digest is not 32 bytes",
        "truncated": "the CID is truncated",
        "trailing": "the CID has bytes after its digest",
    }
    if reason:
        return reason, messages[reason]
    # Decoded fine, yet not the canonical text: the unused tail bits are set.
    return "non_canonical", "the CID is not canonical base32 (unused bits set)"


def decode_cid(text: str) -> bytes:
    """The sha2-256 digest named by a CID string; ValueError when it is not an ADDS CID."""
    problem = cid_problem(text)
    if problem is not None:
        raise ValueError(problem[1])
    return base64.b32decode(text[1:].upper() + "======")[4:]
