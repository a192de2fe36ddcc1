"""The crypto wire formats (hearth.adds.aead): layouts, round trips and every refusal."""

from __future__ import annotations

import base64
import hashlib
import hmac
import os

import pytest
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from hearth.adds import (
    AddsError,
    KeyWrap,
    chunk_aad,
    cid_for_bytes,
    content_key_id,
    decrypt_chunk,
    encrypt_chunk,
    key_wrap_from_json,
    unwrap_content_key,
    wrap_content_key,
    x25519_key_id,
)
from hearth.adds.aead import (
    aes_gcm_decrypt,
    aes_gcm_encrypt,
    encrypt_chunk_into,
    hkdf_sha256,
    x25519_shared,
)

KEY = bytes(range(32))
NONCE = bytes(range(100, 112))
CONTEXT = bytes(range(200, 232))
MANIFEST_CID = cid_for_bytes(b"a manifest")
OTHER_CID = cid_for_bytes(b"another manifest")
READER = X25519PrivateKey.from_private_bytes(hashlib.sha256(b"reader").digest())
READER_PUBLIC = READER.public_key().public_bytes_raw()

# X25519 public values whose product with any scalar is zero: the points of order 1, 2, 4 and 8
# (0, 1, and the two order-8 points), p - 1, p and p + 1, and one with the masked high bit set.
SMALL_ORDER = [
    "00" * 32,
    "01" + "00" * 31,
    "e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800",
    "5f9c95bca3508c24b1d0b1559c83ef5b04445cc4581c8e86d8224eddd09f1157",
    "ec" + "ff" * 30 + "7f",
    "ed" + "ff" * 30 + "7f",
    "ee" + "ff" * 30 + "7f",
    "e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b880",
]


def code_of(excinfo: pytest.ExceptionInfo[AddsError]) -> str:
    return excinfo.value.problems[0].code


# --- chunk AAD and key id -------------------------------------------------------------------


def test_chunk_aad_layout() -> None:
    aad = chunk_aad(CONTEXT, 0x01020304)
    assert aad == b"adds-block/v1" + b"\x00" + CONTEXT + b"\x01\x02\x03\x04"
    assert len(aad) == 13 + 1 + 32 + 4


@pytest.mark.parametrize("index", [0, 1, 0xFFFF_FFFF])
def test_chunk_aad_index_is_four_bytes_big_endian(index: int) -> None:
    assert chunk_aad(CONTEXT, index)[-4:] == index.to_bytes(4, "big")


@pytest.mark.parametrize("index", [-1, 0x1_0000_0000])
def test_chunk_aad_refuses_index_outside_uint32(index: int) -> None:
    with pytest.raises(AddsError) as excinfo:
        chunk_aad(CONTEXT, index)
    assert code_of(excinfo) == "crypto.index_range"


@pytest.mark.parametrize("length", [0, 31, 33])
def test_chunk_aad_refuses_context_of_wrong_length(length: int) -> None:
    with pytest.raises(AddsError) as excinfo:
        chunk_aad(bytes(length), 0)
    assert code_of(excinfo) == "crypto.aad_context_length"


def test_content_key_id_is_domain_separated_sha256() -> None:
    digest = hashlib.sha256(b"adds-key-id/v1\x00" + KEY).digest()
    expected = "sha256:" + base64.urlsafe_b64encode(digest).decode().rstrip("=")
    assert content_key_id(KEY) == expected
    assert len(expected) == 7 + 43
    # Not the plain fingerprint used for audience keys.
    assert content_key_id(KEY) != x25519_key_id(KEY)


@pytest.mark.parametrize("length", [0, 16, 31, 33])
def test_content_key_id_refuses_key_of_wrong_length(length: int) -> None:
    with pytest.raises(AddsError) as excinfo:
        content_key_id(bytes(length))
    assert code_of(excinfo) == "crypto.key_length"


# --- chunk encryption -----------------------------------------------------------------------


def test_encrypt_chunk_is_aes_256_gcm_with_the_chunk_aad() -> None:
    block = encrypt_chunk(KEY, NONCE, CONTEXT, 7, b"hello")
    reference = AESGCM(KEY).encrypt(NONCE, b"hello", chunk_aad(CONTEXT, 7))
    assert block == reference
    assert len(block) == 5 + 16


@pytest.mark.parametrize("plaintext", [b"", b"x", bytes(range(256)) * 40])
def test_chunk_round_trip(plaintext: bytes) -> None:
    block = encrypt_chunk(KEY, NONCE, CONTEXT, 3, memoryview(plaintext))
    assert decrypt_chunk(KEY, NONCE, CONTEXT, 3, block) == plaintext


def _refused_decrypt(**changes: object) -> str:
    block = encrypt_chunk(KEY, NONCE, CONTEXT, 3, b"some plaintext")
    arguments: dict[str, object] = {
        "content_key": KEY,
        "nonce": NONCE,
        "aad_context": CONTEXT,
        "index": 3,
        "block": block,
    }
    arguments.update(changes)
    with pytest.raises(AddsError) as excinfo:
        decrypt_chunk(**arguments)  # type: ignore[arg-type]
    return code_of(excinfo)


def test_decrypt_refuses_other_index() -> None:
    assert _refused_decrypt(index=4) == "crypto.decrypt_failed"


def test_decrypt_refuses_other_aad_context() -> None:
    assert _refused_decrypt(aad_context=bytes(32)) == "crypto.decrypt_failed"


def test_decrypt_refuses_other_nonce() -> None:
    assert _refused_decrypt(nonce=bytes(12)) == "crypto.decrypt_failed"


def test_decrypt_refuses_other_key() -> None:
    assert _refused_decrypt(content_key=bytes(32)) == "crypto.decrypt_failed"


@pytest.mark.parametrize("position", [0, 13, -16, -1])
def test_decrypt_refuses_flipped_bit(position: int) -> None:
    block = bytearray(encrypt_chunk(KEY, NONCE, CONTEXT, 3, b"some plaintext"))
    block[position] ^= 0x01
    assert _refused_decrypt(block=bytes(block)) == "crypto.decrypt_failed"


def test_decrypt_refuses_block_shorter_than_tag() -> None:
    assert _refused_decrypt(block=bytes(15)) == "crypto.ciphertext_length"


def test_decrypt_refuses_truncated_block() -> None:
    block = encrypt_chunk(KEY, NONCE, CONTEXT, 3, b"some plaintext")
    assert _refused_decrypt(block=block[:-1]) == "crypto.decrypt_failed"


@pytest.mark.parametrize("size", [0, 1, 4096, 65536 + 3])
def test_a_chunk_sealed_into_a_buffer_is_the_same_block(size: int) -> None:
    plaintext = os.urandom(size)
    out = memoryview(bytearray(size + 16))
    written = encrypt_chunk_into(KEY, NONCE, CONTEXT, 7, plaintext, out=out)
    assert written == size + 16
    assert bytes(out) == encrypt_chunk(KEY, NONCE, CONTEXT, 7, plaintext)


def test_sealing_into_a_buffer_of_the_wrong_size_is_refused() -> None:
    for length in (15, 17 + 1):  # a one-byte plaintext needs exactly 17
        with pytest.raises(ValueError, match="buffer"):
            encrypt_chunk_into(KEY, NONCE, CONTEXT, 0, b"x", out=memoryview(bytearray(length)))


def test_aes_gcm_wrapper_refuses_other_key_sizes() -> None:
    for length in (16, 24):
        with pytest.raises(AddsError) as excinfo:
            aes_gcm_encrypt(bytes(length), NONCE, b"", b"x")
        assert code_of(excinfo) == "crypto.key_length"


def test_aes_gcm_wrapper_refuses_other_nonce_sizes() -> None:
    for length in (0, 8, 16):
        with pytest.raises(AddsError) as excinfo:
            aes_gcm_encrypt(KEY, bytes(length), b"", b"x")
        assert code_of(excinfo) == "crypto.nonce_length"
        with pytest.raises(AddsError) as excinfo:
            aes_gcm_decrypt(KEY, bytes(length), b"", bytes(17))
        assert code_of(excinfo) == "crypto.nonce_length"


# --- key wrap -------------------------------------------------------------------------------


def _independent_hkdf(ikm: bytes, salt: bytes, info: bytes, length: int) -> bytes:
    """RFC 5869 with the standard library's HMAC only."""
    prk = hmac.new(salt, ikm, hashlib.sha256).digest()
    out, block, counter = b"", b"", 1
    while len(out) < length:
        block = hmac.new(prk, block + info + bytes([counter]), hashlib.sha256).digest()
        out += block
        counter += 1
    return out[:length]


def test_wrap_round_trip() -> None:
    wrap = wrap_content_key(KEY, READER_PUBLIC, MANIFEST_CID)
    assert len(wrap.ephemeral_public_key) == 32
    assert len(wrap.nonce) == 12
    assert len(wrap.ciphertext) == 48
    assert unwrap_content_key(wrap, READER, MANIFEST_CID) == KEY


def test_wrap_draws_fresh_ephemeral_key_and_nonce() -> None:
    first = wrap_content_key(KEY, READER_PUBLIC, MANIFEST_CID)
    second = wrap_content_key(KEY, READER_PUBLIC, MANIFEST_CID)
    assert first.ephemeral_public_key != second.ephemeral_public_key
    assert first.nonce != second.nonce


def test_wrap_follows_the_documented_construction() -> None:
    """Recomputed from the definition with cryptography's X25519 and a stdlib HKDF."""
    ephemeral = hashlib.sha256(b"ephemeral").digest()
    wrap = wrap_content_key(
        KEY, READER_PUBLIC, MANIFEST_CID, ephemeral_private=ephemeral, nonce=NONCE
    )
    ephemeral_key = X25519PrivateKey.from_private_bytes(ephemeral)
    ephemeral_public = ephemeral_key.public_key().public_bytes_raw()
    shared = ephemeral_key.exchange(X25519PublicKey.from_public_bytes(READER_PUBLIC))
    kek = _independent_hkdf(
        shared,
        ephemeral_public + READER_PUBLIC,
        b"adds-key-wrap/v1\x00" + MANIFEST_CID.encode("ascii"),
        32,
    )
    assert wrap == KeyWrap(ephemeral_public, NONCE, AESGCM(kek).encrypt(NONCE, KEY, b""))


def test_unwrap_accepts_the_json_form() -> None:
    wrap = wrap_content_key(KEY, READER_PUBLIC, MANIFEST_CID)
    assert key_wrap_from_json(wrap.as_json()) == wrap
    assert unwrap_content_key(wrap.as_json(), READER, MANIFEST_CID) == KEY


def test_unwrap_refuses_other_private_key() -> None:
    wrap = wrap_content_key(KEY, READER_PUBLIC, MANIFEST_CID)
    with pytest.raises(AddsError) as excinfo:
        unwrap_content_key(wrap, X25519PrivateKey.generate(), MANIFEST_CID)
    assert code_of(excinfo) == "crypto.unwrap_failed"


def test_unwrap_refuses_other_manifest_cid() -> None:
    wrap = wrap_content_key(KEY, READER_PUBLIC, MANIFEST_CID)
    with pytest.raises(AddsError) as excinfo:
        unwrap_content_key(wrap, READER, OTHER_CID)
    assert code_of(excinfo) == "crypto.unwrap_failed"


@pytest.mark.parametrize("member", ["ephemeral_public_key", "nonce", "ciphertext"])
def test_unwrap_refuses_altered_member(member: str) -> None:
    wrap = wrap_content_key(KEY, READER_PUBLIC, MANIFEST_CID)
    value = bytearray(getattr(wrap, member))
    value[0] ^= 0x01
    altered = KeyWrap(**{**_members(wrap), member: bytes(value)})
    with pytest.raises(AddsError) as excinfo:
        unwrap_content_key(altered, READER, MANIFEST_CID)
    assert code_of(excinfo) == "crypto.unwrap_failed"


def _members(wrap: KeyWrap) -> dict[str, bytes]:
    return {
        "ephemeral_public_key": wrap.ephemeral_public_key,
        "nonce": wrap.nonce,
        "ciphertext": wrap.ciphertext,
    }


@pytest.mark.parametrize(
    "change",
    [
        {"algorithm": "X25519-HKDF-SHA512-AES-256-GCM"},
        {"nonce": "AAAA"},
        {"ciphertext": "not base64url!"},
        {"ephemeral_public_key": None},
    ],
    ids=["algorithm", "nonce_length", "ciphertext_alphabet", "ephemeral_type"],
)
def test_key_wrap_from_json_refuses_malformed(change: dict[str, object]) -> None:
    value = {**wrap_content_key(KEY, READER_PUBLIC, MANIFEST_CID).as_json(), **change}
    with pytest.raises(AddsError) as excinfo:
        key_wrap_from_json(value)
    assert code_of(excinfo) == "crypto.key_wrap_malformed"


def test_key_wrap_from_json_refuses_missing_member() -> None:
    value = wrap_content_key(KEY, READER_PUBLIC, MANIFEST_CID).as_json()
    del value["nonce"]
    with pytest.raises(AddsError) as excinfo:
        key_wrap_from_json(value)
    assert code_of(excinfo) == "crypto.key_wrap_malformed"


@pytest.mark.parametrize("point", SMALL_ORDER)
def test_wrap_refuses_small_order_audience_key(point: str) -> None:
    with pytest.raises(AddsError) as excinfo:
        wrap_content_key(KEY, bytes.fromhex(point), MANIFEST_CID)
    assert code_of(excinfo) == "crypto.small_order"


@pytest.mark.parametrize("point", SMALL_ORDER)
def test_unwrap_refuses_small_order_ephemeral_key(point: str) -> None:
    """A small-order ephemeral key makes the shared secret zero whatever the reader's key, so
    anyone could have made the wrap: refused before any KEK is derived."""
    wrap = wrap_content_key(KEY, READER_PUBLIC, MANIFEST_CID)
    forged = KeyWrap(bytes.fromhex(point), wrap.nonce, wrap.ciphertext)
    with pytest.raises(AddsError) as excinfo:
        unwrap_content_key(forged, READER, MANIFEST_CID)
    assert code_of(excinfo) == "crypto.small_order"


def test_wrap_refuses_content_key_of_wrong_length() -> None:
    with pytest.raises(AddsError) as excinfo:
        wrap_content_key(bytes(16), READER_PUBLIC, MANIFEST_CID)
    assert code_of(excinfo) == "crypto.key_length"


@pytest.mark.parametrize("cid", ["", "bafkrei", MANIFEST_CID.upper(), MANIFEST_CID + "é"])
def test_wrap_refuses_what_is_not_a_cid(cid: str) -> None:
    with pytest.raises(AddsError) as excinfo:
        wrap_content_key(KEY, READER_PUBLIC, cid)
    assert code_of(excinfo) == "crypto.manifest_cid"


def test_x25519_shared_refuses_keys_of_wrong_length() -> None:
    for private, public in ((bytes(31), READER_PUBLIC), (KEY, READER_PUBLIC + b"\x00")):
        with pytest.raises(AddsError) as excinfo:
            x25519_shared(private, public)
        assert code_of(excinfo) == "crypto.x25519_key_length"


def test_hkdf_matches_rfc_5869_test_case_1() -> None:
    okm = hkdf_sha256(
        bytes.fromhex("0b" * 22),
        bytes.fromhex("000102030405060708090a0b0c"),
        bytes.fromhex("f0f1f2f3f4f5f6f7f8f9"),
        42,
    )
    assert okm.hex() == (
        "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865"
    )


@pytest.mark.parametrize("length", [0, 255 * 32 + 1])
def test_hkdf_refuses_output_length_outside_the_rfc(length: int) -> None:
    with pytest.raises(AddsError) as excinfo:
        hkdf_sha256(b"ikm", b"salt", b"info", length)
    assert code_of(excinfo) == "crypto.hkdf_length"
