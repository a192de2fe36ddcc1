"""The crypto wire formats of ADDS objects: the one definition (DESIGN.md section 3).

- Chunk encryption: AES-256-GCM under the object's 32-byte content key, the chunk's 12-byte
  nonce, and AAD = ``adds-block/v1`` 0x00 aad_context (32 bytes) index (4 bytes big-endian).
  A block is the ciphertext with its 16-byte tag appended.
- ``encryption.key_id`` = ``sha256:`` + base64url(sha256(``adds-key-id/v1`` 0x00 content_key)).
- Key wrap ``X25519-HKDF-SHA256-AES-256-GCM``: shared = X25519(ephemeral, audience); KEK =
  HKDF-SHA256(ikm=shared, salt=ephemeral_pub || audience_pub, info=``adds-key-wrap/v1`` 0x00
  manifest_cid, 32 bytes); ciphertext = AES-256-GCM(KEK, nonce, content_key, aad=empty). An
  all-zero shared secret (a small-order public key, RFC 7748 section 6.1) is refused both ways.

Everything goes through three small primitives, ``aes_gcm_encrypt``/``aes_gcm_decrypt``,
``x25519_shared`` and ``hkdf_sha256``, which the external suites (Wycheproof) exercise directly.
They are hearth's one AES-256-GCM and one HKDF: ``hearth.proofs.sealing`` and
``hearth.proofs.kdf`` build the service's and the client's recipes on them rather than writing
their own. Every refusal is an ``AddsError`` whose one problem carries a stable ``crypto.*`` code.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import Mapping
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from .b64 import b64url_decode, b64url_encode
from .builders import KeyWrap
from .cid import cid_problem
from .kinds import TAG_LENGTH
from .problems import AddsError

__all__ = [
    "AAD_CONTEXT_LENGTH",
    "BLOCK_AAD",
    "KEY_ID_CONTEXT",
    "KEY_LENGTH",
    "KEY_WRAP_ALGORITHM",
    "KEY_WRAP_INFO",
    "NONCE_LENGTH",
    "aes_gcm_decrypt",
    "aes_gcm_decrypt_into",
    "aes_gcm_encrypt",
    "aes_gcm_encrypt_into",
    "chunk_aad",
    "content_key_id",
    "decrypt_chunk",
    "decrypt_chunk_into",
    "encrypt_chunk",
    "encrypt_chunk_into",
    "hkdf_sha256",
    "key_wrap_from_json",
    "unwrap_content_key",
    "wrap_content_key",
    "x25519_shared",
]

KEY_LENGTH = 32  # AES-256 content keys and KEKs
NONCE_LENGTH = 12  # AES-GCM nonces
AAD_CONTEXT_LENGTH = 32  # encryption.aad_context
X25519_LENGTH = 32
MAX_INDEX = 0xFFFF_FFFF  # chunk indices are uint32
HKDF_SHA256_MAX = 255 * 32

BLOCK_AAD = b"adds-block/v1"
KEY_ID_CONTEXT = b"adds-key-id/v1\x00"
KEY_WRAP_INFO = b"adds-key-wrap/v1\x00"
KEY_WRAP_ALGORITHM = "X25519-HKDF-SHA256-AES-256-GCM"

_ZERO_SHARED = bytes(X25519_LENGTH)


def _need_length(value: bytes, length: int, code: str, what: str) -> None:
    if len(value) != length:
        raise AddsError.single(code, f"{what} must be {length} bytes, not {len(value)}")


# --- primitives (exercised by tests/external/test_wycheproof_adds.py) -----------------------


def aes_gcm_encrypt(key: bytes, nonce: bytes, aad: bytes, plaintext: bytes | memoryview) -> bytes:
    """AES-256-GCM with a 12-byte nonce and a 16-byte tag: ciphertext || tag.

    Other key or nonce sizes are refused: ADDS uses exactly this one parameter set.
    """
    _need_length(key, KEY_LENGTH, "crypto.key_length", "an AES-256-GCM key")
    _need_length(nonce, NONCE_LENGTH, "crypto.nonce_length", "an AES-GCM nonce")
    return AESGCM(key).encrypt(nonce, plaintext, aad)


def aes_gcm_encrypt_into(
    key: bytes, nonce: bytes, aad: bytes, plaintext: bytes | memoryview, out: memoryview
) -> int:
    """``aes_gcm_encrypt`` written into ``out`` (exactly len(plaintext) + 16 bytes long)
    instead of a new buffer; returns the length written."""
    _need_length(key, KEY_LENGTH, "crypto.key_length", "an AES-256-GCM key")
    _need_length(nonce, NONCE_LENGTH, "crypto.nonce_length", "an AES-GCM nonce")
    return AESGCM(key).encrypt_into(nonce, plaintext, aad, out)


def _openable(key: bytes, nonce: bytes, ciphertext: bytes | memoryview) -> None:
    """The lengths an AES-256-GCM open needs, or the AddsError naming the one that is wrong."""
    _need_length(key, KEY_LENGTH, "crypto.key_length", "an AES-256-GCM key")
    _need_length(nonce, NONCE_LENGTH, "crypto.nonce_length", "an AES-GCM nonce")
    if len(ciphertext) < TAG_LENGTH:
        raise AddsError.single(
            "crypto.ciphertext_length", f"a ciphertext holds at least its {TAG_LENGTH}-byte tag"
        )


def aes_gcm_decrypt(key: bytes, nonce: bytes, aad: bytes, ciphertext: bytes | memoryview) -> bytes:
    """Open ciphertext || 16-byte tag; AddsError ``crypto.decrypt_failed`` if it does not
    authenticate."""
    _openable(key, nonce, ciphertext)
    try:
        return AESGCM(key).decrypt(nonce, ciphertext, aad)
    except InvalidTag:
        raise AddsError.single("crypto.decrypt_failed", "AES-GCM authentication failed") from None


def aes_gcm_decrypt_into(
    key: bytes, nonce: bytes, aad: bytes, ciphertext: bytes | memoryview, out: memoryview
) -> int:
    """``aes_gcm_decrypt`` written into ``out`` (exactly len(ciphertext) - 16 bytes long);
    returns the length written. On ``crypto.decrypt_failed`` ``out`` may hold unauthenticated
    bytes: the caller must not use them."""
    _openable(key, nonce, ciphertext)
    try:
        return AESGCM(key).decrypt_into(nonce, ciphertext, aad, out)
    except InvalidTag:
        raise AddsError.single("crypto.decrypt_failed", "AES-GCM authentication failed") from None


def x25519_shared(private_raw: bytes, public_raw: bytes) -> bytes:
    """X25519(private, public) (RFC 7748), refusing an all-zero result (``crypto.small_order``).

    The public value is used as RFC 7748 says: the high bit is masked and non-canonical values
    are accepted; only a result of zero, which a small-order point always gives, is refused.
    """
    _need_length(private_raw, X25519_LENGTH, "crypto.x25519_key_length", "an X25519 private key")
    _need_length(public_raw, X25519_LENGTH, "crypto.x25519_key_length", "an X25519 public key")
    private = X25519PrivateKey.from_private_bytes(private_raw)
    public = X25519PublicKey.from_public_bytes(public_raw)
    try:
        shared = private.exchange(public)
    except ValueError:  # OpenSSL refuses the all-zero output itself
        shared = _ZERO_SHARED
    if hmac.compare_digest(shared, _ZERO_SHARED):
        raise AddsError.single(
            "crypto.small_order",
            "the X25519 shared secret is all zero (the public key has small order)",
        )
    return shared


def hkdf_sha256(ikm: bytes, salt: bytes, info: bytes, length: int) -> bytes:
    """HKDF-SHA256 (RFC 5869); an empty salt means 32 zero bytes, as the RFC says."""
    if not 1 <= length <= HKDF_SHA256_MAX:
        raise AddsError.single(
            "crypto.hkdf_length", f"HKDF-SHA256 output is 1 to {HKDF_SHA256_MAX} bytes"
        )
    return HKDF(algorithm=hashes.SHA256(), length=length, salt=salt, info=info).derive(ikm)


# --- chunks ---------------------------------------------------------------------------------


def chunk_aad(aad_context: bytes, index: int) -> bytes:
    """``adds-block/v1`` 0x00 aad_context (32 bytes) index (uint32, big-endian)."""
    _need_length(aad_context, AAD_CONTEXT_LENGTH, "crypto.aad_context_length", "aad_context")
    if not 0 <= index <= MAX_INDEX:
        raise AddsError.single("crypto.index_range", "a chunk index is 0 to 4294967295")
    return BLOCK_AAD + b"\x00" + aad_context + index.to_bytes(4, "big")


def content_key_id(content_key: bytes) -> str:
    """``sha256:`` + base64url(sha256(``adds-key-id/v1`` 0x00 content_key)), no padding."""
    _need_length(content_key, KEY_LENGTH, "crypto.key_length", "a content key")
    return "sha256:" + b64url_encode(hashlib.sha256(KEY_ID_CONTEXT + content_key).digest())


def encrypt_chunk(
    content_key: bytes,
    nonce: bytes,
    aad_context: bytes,
    index: int,
    plaintext: bytes | memoryview,
) -> bytes:
    """One block: AES-256-GCM(content_key, nonce, plaintext, chunk_aad) with the tag appended."""
    return aes_gcm_encrypt(content_key, nonce, chunk_aad(aad_context, index), plaintext)


def encrypt_chunk_into(
    content_key: bytes,
    nonce: bytes,
    aad_context: bytes,
    index: int,
    plaintext: bytes | memoryview,
    *,
    out: memoryview,
) -> int:
    """``encrypt_chunk`` written into ``out``, which must be exactly ``len(plaintext)`` + 16
    bytes: the same block, without a buffer of its own (a store's aligned write buffer)."""
    return aes_gcm_encrypt_into(content_key, nonce, chunk_aad(aad_context, index), plaintext, out)


def decrypt_chunk(
    content_key: bytes,
    nonce: bytes,
    aad_context: bytes,
    index: int,
    block: bytes | memoryview,
) -> bytes:
    """The plaintext of one block; AddsError ``crypto.decrypt_failed`` when it does not
    authenticate (wrong key, nonce, context or index, or altered bytes)."""
    return aes_gcm_decrypt(content_key, nonce, chunk_aad(aad_context, index), block)


def decrypt_chunk_into(
    content_key: bytes,
    nonce: bytes,
    aad_context: bytes,
    index: int,
    block: bytes | memoryview,
    *,
    out: memoryview,
) -> int:
    """``decrypt_chunk`` written into ``out``, which must be exactly ``len(block)`` - 16 bytes
    (an output file's aligned write buffer); returns that length. When it raises, ``out`` may
    hold unauthenticated bytes, which must not be used."""
    return aes_gcm_decrypt_into(content_key, nonce, chunk_aad(aad_context, index), block, out)


# --- key wrap -------------------------------------------------------------------------------


def _wrap_info(manifest_cid: str) -> bytes:
    if cid_problem(manifest_cid) is not None:
        raise AddsError.single("crypto.manifest_cid", "the key wrap needs the manifest's CID")
    return KEY_WRAP_INFO + manifest_cid.encode("ascii")


def _kek(shared: bytes, ephemeral_public: bytes, audience_public: bytes, info: bytes) -> bytes:
    return hkdf_sha256(shared, ephemeral_public + audience_public, info, KEY_LENGTH)


def wrap_content_key(
    content_key: bytes,
    audience_public: bytes,
    manifest_cid: str,
    *,
    ephemeral_private: bytes | None = None,
    nonce: bytes | None = None,
) -> KeyWrap:
    """Wrap a content key to an audience's X25519 public key, bound to one manifest CID.

    A fresh ephemeral key and nonce are drawn for every wrap. ``ephemeral_private`` (32 raw
    bytes) and ``nonce`` exist only for golden vectors: never pass them otherwise.
    """
    _need_length(content_key, KEY_LENGTH, "crypto.key_length", "a content key")
    info = _wrap_info(manifest_cid)
    if ephemeral_private is None:
        ephemeral_private = X25519PrivateKey.generate().private_bytes_raw()
    if nonce is None:
        nonce = os.urandom(NONCE_LENGTH)
    shared = x25519_shared(ephemeral_private, audience_public)
    ephemeral_public = (
        X25519PrivateKey.from_private_bytes(ephemeral_private).public_key().public_bytes_raw()
    )
    kek = _kek(shared, ephemeral_public, audience_public, info)
    return KeyWrap(ephemeral_public, nonce, aes_gcm_encrypt(kek, nonce, b"", content_key))


def key_wrap_from_json(value: Mapping[str, Any]) -> KeyWrap:
    """A grant's ``key_wrap`` member as a KeyWrap; AddsError ``crypto.key_wrap_malformed``."""
    try:
        if value["algorithm"] != KEY_WRAP_ALGORITHM:
            raise ValueError(f"algorithm is not {KEY_WRAP_ALGORITHM}")
        wrap = KeyWrap(
            b64url_decode(value["ephemeral_public_key"]),
            b64url_decode(value["nonce"]),
            b64url_decode(value["ciphertext"]),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise AddsError.single(
            "crypto.key_wrap_malformed", f"not a key_wrap object: {exc}"
        ) from None
    if (len(wrap.ephemeral_public_key), len(wrap.nonce), len(wrap.ciphertext)) != (
        X25519_LENGTH,
        NONCE_LENGTH,
        KEY_LENGTH + TAG_LENGTH,
    ):
        raise AddsError.single(
            "crypto.key_wrap_malformed", "key_wrap members have the wrong lengths"
        )
    return wrap


def unwrap_content_key(
    key_wrap: KeyWrap | Mapping[str, Any],
    audience_private: X25519PrivateKey,
    manifest_cid: str,
) -> bytes:
    """The content key in ``key_wrap``; AddsError ``crypto.unwrap_failed`` when the wrap was
    not made for this key and this manifest CID (or was altered), ``crypto.small_order`` for a
    small-order ephemeral key."""
    wrap = key_wrap if isinstance(key_wrap, KeyWrap) else key_wrap_from_json(key_wrap)
    info = _wrap_info(manifest_cid)
    audience_public = audience_private.public_key().public_bytes_raw()
    shared = x25519_shared(audience_private.private_bytes_raw(), wrap.ephemeral_public_key)
    kek = _kek(shared, wrap.ephemeral_public_key, audience_public, info)
    try:
        content_key = aes_gcm_decrypt(kek, wrap.nonce, b"", wrap.ciphertext)
    except AddsError as exc:
        raise AddsError.single(
            "crypto.unwrap_failed",
            "the key wrap does not open with this key for this manifest",
        ) from exc
    _need_length(content_key, KEY_LENGTH, "crypto.unwrap_failed", "the wrapped content key")
    return content_key
