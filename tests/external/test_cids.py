"""CIDs (``hearth.adds.cid``) against multibase, multihash, dasl-testing and ipld codec-fixtures.

hearth's profile: CIDv1, codec raw (0x55), sha2-256 (0x12) with a 32-byte digest, written as
multibase base32 lower case without padding (prefix ``b``). Everything else is refused.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import random
import re
from pathlib import Path
from typing import Any

import pytest
from multiformats import CID, multihash

from hearth.adds.cid import (
    cid_for_bytes,
    cid_from_digest,
    cid_problem,
    decode_binary_cid,
    decode_cid,
)
from tests.support.external_suites import available, cases_or_missing, parse_multibase_csv, suite

MULTIBASE = "multibase"
MULTIHASH = "multihash"
DASL = "dasl-testing"
IPLD = "ipld-codec-fixtures"

RAW_PREFIX = bytes([0x01, 0x55])  # CIDv1, codec raw; a multihash follows
SAMPLE_CID = cid_for_bytes(b"hearth external CID tests")


def base32lower_nopad(data: bytes) -> str:
    return base64.b32encode(data).decode("ascii").rstrip("=").lower()


def base32_decode(text: str) -> bytes:
    """Lenient decoding of unpadded base32 (either case), for inspecting test data."""
    body = text.upper()
    return base64.b32decode(body + "=" * (-len(body) % 8))


def varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def rule(text: str) -> str | None:
    problem = cid_problem(text)
    return None if problem is None else problem[0]


def assert_decode_refused(text: str) -> None:
    """decode_cid raises ValueError with the message cid_problem gives."""
    problem = cid_problem(text)
    assert problem is not None
    with pytest.raises(ValueError, match=re.escape(problem[1])):
        decode_cid(text)


# --- our own helper, checked against the multibase base32 rows ------------------------------

MULTIBASE_VALUE_FILES = ["basic.csv", "leading_zero.csv", "two_leading_zeros.csv"]


@pytest.mark.parametrize("name", MULTIBASE_VALUE_FILES)
def test_helper_base32_matches_multibase_rows(name: str) -> None:
    """The helper that recomputes the ipld fixture names below must reproduce these rows."""
    data, rows = parse_multibase_csv(suite(MULTIBASE) / "tests" / name)
    assert "b" + base32lower_nopad(data) == rows["base32"]
    assert base32_decode(rows["base32"][1:]) == data


# --- multibase: case and prefix -------------------------------------------------------------


def test_sample_cid_is_accepted() -> None:
    assert rule(SAMPLE_CID) is None
    assert decode_cid(SAMPLE_CID) == hashlib.sha256(b"hearth external CID tests").digest()


def _case_variants(cid: str) -> dict[str, str]:
    body = cid[1:]
    half = len(body) // 2
    return {
        "upper-body": "b" + body.upper(),
        "mixed-case": "b" + body[:half] + body[half:].upper(),  # like bnbswy3dpeB3W64TMMQ
        "one-upper-letter": "b" + body[:-2] + body[-2:].upper(),
        "B-prefix": "B" + body,  # like Bnbswy3dpeB3W64TMMQ
        "B-prefix-upper": "B" + body.upper(),  # multibase base32upper
    }


@pytest.mark.parametrize(("variant", "text"), list(_case_variants(SAMPLE_CID).items()))
def test_case_variants_of_a_valid_cid_refused(variant: str, text: str) -> None:
    """multibase case_insensitivity.csv says these decode; hearth's CID rule refuses them."""
    csv = suite(MULTIBASE) / "tests" / "case_insensitivity.csv"
    data, rows = parse_multibase_csv(csv)
    # The upstream rows themselves: same bytes, but only canonical lower case is ours.
    assert rows["base32"] == "bnbswy3dpeB3W64TMMQ"
    assert rows["base32upper"] == "Bnbswy3dpeB3W64TMMQ"
    assert base32_decode(rows["base32"][1:]) == data
    assert base32_decode(text[1:]) == base32_decode(SAMPLE_CID[1:])
    assert rule(text) == "pattern"
    assert_decode_refused(text)


def test_case_insensitivity_rows_refused() -> None:
    _, rows = parse_multibase_csv(suite(MULTIBASE) / "tests" / "case_insensitivity.csv")
    for name, text in rows.items():
        assert rule(text) == "pattern", name


OTHER_BASES = [
    "base58btc",
    "base16",
    "base16upper",
    "base32upper",
    "base32hex",
    "base32pad",
    "base36",
    "base64",
    "base64url",
]


@pytest.mark.parametrize("base", OTHER_BASES)
def test_other_multibase_prefixes_refused(base: str) -> None:
    suite(MULTIBASE)
    text = CID.decode(SAMPLE_CID).encode(base)
    assert text[0] != "b"
    assert CID.decode(text) == CID.decode(SAMPLE_CID)  # the same CID, just another base
    assert rule(text) == "pattern"
    assert_decode_refused(text)


# --- multihash test_cases.csv ---------------------------------------------------------------


def _multihash_cases() -> list[object] | None:
    folder = available(MULTIHASH)
    if folder is None:
        return None
    lines = (folder / "test_cases.csv").read_text(encoding="ascii").splitlines()
    assert lines[0] == "algorithm,bits,input,multihash"
    cases = []
    for i, line in enumerate(lines[1:], start=2):
        algorithm, bits, text, mh = line.split(",")
        row = {"algorithm": algorithm, "bits": int(bits), "input": text, "multihash": mh}
        cases.append(pytest.param(row, id=f"line{i}-{algorithm}-{bits}"))
    return cases


@pytest.mark.parametrize("row", cases_or_missing(MULTIHASH, _multihash_cases()))
def test_multihash_rows(row: dict[str, Any] | None) -> None:
    suite(MULTIHASH)
    assert row is not None
    mh = bytes.fromhex(row["multihash"])
    binary = RAW_PREFIX + mh
    if row["algorithm"] == "sha2-256" and row["bits"] == 256:
        digest = hashlib.sha256(row["input"].encode("ascii")).digest()
        cid = cid_from_digest(digest)
        assert base32_decode(cid[1:]) == binary
        assert decode_binary_cid(binary) == ("", digest)
        assert rule(cid) is None
        assert decode_cid(cid) == digest
        return
    # Truncated sha2-256 keeps hash code 0x12 but states 10 or 20 bytes; other algorithms
    # (sha1 0x11, sha2-512 0x13, sha3-512 0x14) are refused on the hash code.
    expected = "digest_length" if row["algorithm"] == "sha2-256" else "hash"
    assert decode_binary_cid(binary) == (expected, b"")
    text = "b" + base32lower_nopad(binary)
    # As text, only a 36-byte binary CID (a 32-byte digest) has the 59-character length.
    assert rule(text) == (expected if len(text) == 59 else "pattern")


def test_multihash_row_counts() -> None:
    cases = _multihash_cases() if suite(MULTIHASH) else None
    assert cases is not None
    assert len(cases) == 260
    full = [
        p for p in cases if p.values[0]["algorithm"] == "sha2-256" and p.values[0]["bits"] == 256
    ]  # type: ignore[attr-defined]
    assert len(full) == 20


# --- dasl-testing cid.json ------------------------------------------------------------------

# Expected decode_binary_cid reasons ('' = accepted), by case name.
DASL_EXPECTED = {
    "valid CID with short tag": "",
    "CIDv0": "version",  # starts 12 20: "version" 0x12
    "invalid hash size": "truncated",  # states 32 bytes, 31 follow
    "Big DASL CID": "hash",  # BLAKE3 0x1e
    "empty CID": "digest_length",  # length 0
    "short hash digest": "digest_length",  # length 0x1f
    "long hash digest": "digest_length",  # length 0x21
    "CIDv1 that isn't raw or cbor": "codec",  # dag-pb 0x70
    "disallowed hash type (SHA-1)": "hash",  # 0x11
}
# These test DAG-CBOR tag-42 framing, which hearth does not handle (README: use them only if the
# project handles CBOR), so they are skipped on purpose.
DASL_CBOR_FRAMING = {"long CID tag", "invalid CID", "CID with no null byte"}
DASL_VALID_BASE32 = "bafkreicysg23kiwv34eg2d7qweipxwosdo2py4ldv42nbauguluen5v6am"


def dasl_binary_cid(data: bytes) -> bytes:
    """The binary CID inside ``d82a`` (tag 42), a CBOR byte-string header and the ``00`` prefix."""
    assert data[:2] == b"\xd8\x2a"
    head = data[2]
    assert head >> 5 == 2  # CBOR major type 2, byte string
    if head & 0x1F < 24:
        length, start = head & 0x1F, 3
    else:
        assert head == 0x58
        length, start = data[3], 4
    content = data[start:]
    assert len(content) == length
    assert content[0] == 0
    return content[1:]


def _dasl_cases() -> list[object] | None:
    folder = available(DASL)
    if folder is None:
        return None
    cases = json.loads((folder / "cid.json").read_text(encoding="utf-8"))
    return [pytest.param(c, id=c["name"]) for c in cases if c["name"] not in DASL_CBOR_FRAMING]


def test_dasl_case_names() -> None:
    cases = json.loads((suite(DASL) / "cid.json").read_text(encoding="utf-8"))
    assert {c["name"] for c in cases} == set(DASL_EXPECTED) | DASL_CBOR_FRAMING


@pytest.mark.parametrize("case", cases_or_missing(DASL, _dasl_cases()))
def test_dasl_binary_cid(case: dict[str, Any] | None) -> None:
    suite(DASL)
    assert case is not None
    binary = dasl_binary_cid(bytes.fromhex(case["data"]))
    reason, digest = decode_binary_cid(binary)
    assert reason == DASL_EXPECTED[case["name"]]
    if reason:
        assert digest == b""
        return
    assert binary == bytes([0x01, 0x55, 0x12, 0x20]) + digest
    assert cid_from_digest(digest) == DASL_VALID_BASE32
    assert decode_cid(DASL_VALID_BASE32) == digest


# --- ipld codec-fixtures --------------------------------------------------------------------

IPLD_CODECS = {"dag-cbor": 0x71, "dag-json": 0x0129, "dag-pb": 0x70}
# The stems are valid CIDs of other codecs. dag-cbor and dag-pb have one-byte codec varints, so
# the text has our 59 characters and is refused on the decoded codec; dag-json's two-byte varint
# (a9 02) makes a 60-character CID, refused by the text pattern before decoding.
IPLD_EXPECTED_RULE = {"dag-cbor": "codec", "dag-json": "pattern", "dag-pb": "codec"}


def _ipld_block_cases() -> list[object] | None:
    folder = available(IPLD)
    if folder is None:
        return None
    root = folder / "fixtures"
    cases = []
    for fixture in sorted(os.listdir(root)):
        if not (root / fixture).is_dir():
            continue  # fixtures/.gitattributes
        for name in sorted(os.listdir(root / fixture)):
            cases.append(pytest.param(root / fixture / name, id=f"{fixture}/{name}"))
    return cases


@pytest.mark.parametrize("path", cases_or_missing(IPLD, _ipld_block_cases()))
def test_ipld_block(path: Path | None) -> None:
    suite(IPLD)
    assert path is not None
    stem, codec_name = path.name.split(".", 1)
    data = path.read_bytes()
    digest = hashlib.sha256(data).digest()
    binary = bytes([0x01]) + varint(IPLD_CODECS[codec_name]) + bytes([0x12, 0x20]) + digest
    assert "b" + base32lower_nopad(binary) == stem
    assert rule(stem) == IPLD_EXPECTED_RULE[codec_name]
    assert_decode_refused(stem)
    ours = cid_for_bytes(data)
    assert ours != stem
    assert decode_cid(ours) == digest


def test_ipld_block_count() -> None:
    cases = _ipld_block_cases() if suite(IPLD) else None
    assert cases is not None
    assert len(cases) == 273


# Directory names "cid-<CID>": (text rule of cid_problem, decode_binary_cid reason of the binary
# form that multiformats decodes). "cid-arrayof" and "cid-mapof" are not CIDs and are left out.
IPLD_DIR_CIDS = {
    "bafkreiebzrnroamgos2adnbpgw5apo3z4iishhbdx77gldnbk57d4zdio4": (None, ""),
    "bafkreifw7plhl6mofk6sfvhnfh64qmkq73oeqwl6sloru6rehaoujituke": (None, ""),
    "bafkqabiaaebagba": ("pattern", "hash"),  # raw, identity multihash, 16 characters
    "bafyreidj5idub6mapiupjwjsyyxhyhedxycv4vihfsicm2vt46o7morwlm": ("codec", "codec"),  # dag-cbor
    "bafyreiejkvsvdq4smz44yuwhfymcuvqzavveoj2at3utujwqlllspsqr6q": ("codec", "codec"),  # dag-cbor
    # dag-jose, bitcoin-block, bitcoin-tx, zcash-block: two-byte codecs, so 61 characters
    "bagcqcera73rupyla6bauseyk75rslfys3st25spm75ykhvgusqvv2zfqtucq": ("pattern", "codec"),
    "bagyacvradn6dsgl6sw2jwoh7s3d37hq5wsu7g22wtdwnmaaaaaaaaaaaaaaa": ("pattern", "codec"),
    "bagyqcvraypzcitp3hsbtyyxhfyc3p7i3226lullm2rkzqsqqlhnxus7tqnea": ("pattern", "codec"),
    "bahaacvrabdhd3fzrwaambazyivoiustl2bo2c3rgweo2ug4rogcoz2apaqaa": ("pattern", "codec"),
    "bahaacvrasyauh7rmlyrmyc7qzvktjv7x6q2h6ttvei6qon43tl3riaaaaaaa": ("pattern", "codec"),
    # CIDv0 (base58btc, no multibase prefix): binary 12 20 ..., "version" 0x12
    "QmQg1v4o9xdT3Q14wh4S7dxZkDjyZ9ssFzFzyep1YrVJBY": ("pattern", "version"),
    "QmRgutAxd8t7oGkSm4wmeuByG6M51wcTso6cubDdQtuEfL": ("pattern", "version"),
    "QmXg9Pp2ytZ14xgmQjYEiHjVjMFXzCVVEcRTWJBmLgR39V": ("pattern", "version"),
    # base58btc CIDv1: git-raw/sha1, dag-pb, dag-cbor
    "z8mWaJ1dZ9fH5EetPuRsj8jj26pXsgpsr": ("pattern", "codec"),
    "zdj7Wd8AMwqnhJGQCbFxBVodGSBG84TM7Hs1rcJuQMwTyfEDS": ("pattern", "codec"),
    "zdpuAtX7ZibcWdSKQwiDCkPjWwRvtcKCPku9H7LhgA4qJW4Wk": ("pattern", "codec"),
}


def test_ipld_directory_names_listed() -> None:
    names = os.listdir(suite(IPLD) / "fixtures")
    found = {n.removeprefix("cid-") for n in names if n.startswith("cid-")}
    assert found == set(IPLD_DIR_CIDS) | {"arrayof", "mapof"}


@pytest.mark.parametrize(("text", "expected"), list(IPLD_DIR_CIDS.items()))
def test_ipld_directory_cid(text: str, expected: tuple[str | None, str]) -> None:
    assert (suite(IPLD) / "fixtures" / f"cid-{text}").is_dir()
    text_rule, binary_reason = expected
    assert rule(text) == text_rule
    parsed = CID.decode(text)
    reason, digest = decode_binary_cid(bytes(parsed))
    assert reason == binary_reason
    if text_rule is None:
        assert decode_cid(text) == digest == parsed.raw_digest
    else:
        assert_decode_refused(text)


# --- multiformats as a second opinion (no external data) ------------------------------------


def test_matches_multiformats_for_random_data() -> None:
    rng = random.Random(20260818)
    for _ in range(300):
        data = rng.randbytes(rng.randrange(0, 200))
        expected = CID("base32", 1, "raw", multihash.digest(data, "sha2-256"))
        ours = cid_for_bytes(data)
        assert ours == str(expected)
        parsed = CID.decode(ours)
        assert (parsed.version, parsed.codec.name, parsed.hashfun.name) == (1, "raw", "sha2-256")
        assert decode_cid(ours) == parsed.raw_digest == hashlib.sha256(data).digest()
        assert decode_binary_cid(bytes(parsed)) == ("", parsed.raw_digest)
