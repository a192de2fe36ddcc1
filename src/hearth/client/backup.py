"""Key backup: an identity's private keys sealed under a passphrase, for the server to keep.

The server stores two strings and cannot read either secret:

- ``key_derivation``, the descriptor, exactly
  ``argon2id-v1;t=<iterations>;m=<memory KiB>;p=<lanes>;salt=<standard base64 of 16 bytes>``
  (decimal integers without leading zeros; new backups use t=3, m=65536 (64 MiB), p=1);
- ``blob_base64``, standard base64 (padded) of nonce (12 bytes) || AES-256-GCM ciphertext+tag.

The AES key is Argon2id(passphrase, salt, t, m, p) -> 32 bytes. The plaintext is
``IdentityKeys.private_material()`` as canonical JSON (sorted keys, no spaces, UTF-8). The
associated data is ``b"hearth-key-backup/v1" + b"\\x00" + descriptor``, so a server that edits
the descriptor (weaker parameters, another salt) makes decryption fail instead of silently
deriving another key.

The passphrase is NFKD-normalised before use, as BIP-39 does with its passphrase, so the same
characters typed on two systems (composed or decomposed accents) give the same bytes.

The descriptor comes from the server, which may be hostile: it is parsed strictly and its
parameters bounded (m <= 1 GiB, t <= 64, 1 <= p <= 16) before any key derivation runs, so it
cannot make the client burn unbounded memory or time.
"""

from __future__ import annotations

import base64
import json
import os
import re
import unicodedata
from dataclasses import dataclass

from hearth.proofs.kdf import argon2id
from hearth.proofs.sealing import SealError, open_sealed, seal_with_nonce

from .mnemonic_keys import IdentityKeys, KeyMaterialError, strict_b64decode

__all__ = [
    "DEFAULT_PARAMS",
    "DESCRIPTOR_SCHEME",
    "BackupError",
    "SealedBackup",
    "open_backup",
    "seal_backup",
]

DESCRIPTOR_SCHEME = "argon2id-v1"
AAD_LABEL = b"hearth-key-backup/v1"
DEFAULT_PARAMS = (3, 65536, 1)  # (t iterations, m KiB, p lanes)

SALT_BYTES = 16
NONCE_BYTES = 12
TAG_BYTES = 16

MAX_ITERATIONS = 64
MAX_MEMORY_KIB = 1024 * 1024  # 1 GiB
MAX_LANES = 16
# The plaintext is about 170 bytes; anything far larger is not a backup of ours, and refusing it
# early keeps a hostile server from handing the client megabytes to decode.
MAX_BLOB_CHARS = 4096
MAX_DESCRIPTOR_CHARS = 256

WRONG_PASSPHRASE = "wrong passphrase or damaged backup"

# One spelling per descriptor: decimal without leading zeros, fixed member order. The text is
# authenticated verbatim, so accepting variants would only add ways to fail confusingly.
_DESCRIPTOR = re.compile(
    r"argon2id-v1;t=(0|[1-9][0-9]*);m=(0|[1-9][0-9]*);p=(0|[1-9][0-9]*);salt=([A-Za-z0-9+/=]+)"
)


class BackupError(ValueError):
    """A key backup cannot be sealed or opened; the message says why."""


@dataclass(frozen=True)
class SealedBackup:
    """What the server stores. Neither field is secret without the passphrase."""

    blob_base64: str
    key_derivation: str


def _check_params(t: int, m: int, p: int) -> None:
    if p < 1 or p > MAX_LANES:
        raise BackupError(f"key derivation parameters out of range: p={p} (allowed 1..{MAX_LANES})")
    if t < 1 or t > MAX_ITERATIONS:
        raise BackupError(
            f"key derivation parameters out of range: t={t} (allowed 1..{MAX_ITERATIONS})"
        )
    # Argon2 itself needs at least 8 KiB per lane.
    if m < 8 * p or m > MAX_MEMORY_KIB:
        raise BackupError(
            f"key derivation parameters out of range: m={m} KiB "
            f"(allowed {8 * p}..{MAX_MEMORY_KIB} for p={p})"
        )


def _descriptor(t: int, m: int, p: int, salt: bytes) -> str:
    return f"{DESCRIPTOR_SCHEME};t={t};m={m};p={p};salt={_b64encode(salt)}"


def _parse_descriptor(key_derivation: str) -> tuple[int, int, int, bytes]:
    """(t, m, p, salt) of a descriptor, validated; raises BackupError. No KDF work happens here."""
    if not isinstance(key_derivation, str):
        raise BackupError("key derivation descriptor must be a string")
    scheme = key_derivation.split(";", 1)[0]
    if scheme != DESCRIPTOR_SCHEME:
        raise BackupError(
            f"unknown key derivation scheme {scheme[:40]!r} (expected {DESCRIPTOR_SCHEME!r})"
        )
    match = (
        _DESCRIPTOR.fullmatch(key_derivation)
        if len(key_derivation) <= MAX_DESCRIPTOR_CHARS
        else None
    )
    if match is None:
        raise BackupError(
            "malformed key derivation descriptor: expected "
            f"'{DESCRIPTOR_SCHEME};t=<int>;m=<int>;p=<int>;salt=<base64>'"
        )
    t, m, p = (int(match.group(i)) for i in (1, 2, 3))
    _check_params(t, m, p)
    try:
        salt = strict_b64decode(match.group(4))
    except ValueError as exc:
        raise BackupError(f"malformed key derivation descriptor: salt is {exc}") from None
    if len(salt) != SALT_BYTES:
        raise BackupError(
            f"malformed key derivation descriptor: salt must be {SALT_BYTES} bytes, got {len(salt)}"
        )
    return t, m, p, salt


def _b64encode(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _passphrase_bytes(passphrase: str) -> bytes:
    if not isinstance(passphrase, str):
        raise BackupError("passphrase must be a string")
    if not passphrase:
        raise BackupError("passphrase must not be empty")
    return unicodedata.normalize("NFKD", passphrase).encode("utf-8")


def _aes_key(passphrase: bytes, salt: bytes, t: int, m: int, p: int) -> bytes:
    return argon2id(passphrase, salt, iterations=t, memory_kib=m, lanes=p)


def _associated_data(key_derivation: str) -> bytes:
    return AAD_LABEL + b"\x00" + key_derivation.encode("utf-8")


def _plaintext(keys: IdentityKeys) -> bytes:
    material = keys.private_material()
    return json.dumps(material, sort_keys=True, separators=(",", ":")).encode("utf-8")


def seal_backup(
    keys: IdentityKeys,
    passphrase: str,
    *,
    _salt: bytes | None = None,
    _nonce: bytes | None = None,
    _params: tuple[int, int, int] | None = None,
) -> SealedBackup:
    """Seal ``keys`` under ``passphrase`` with a fresh salt and nonce.

    The underscore arguments exist only to pin golden vectors in tests; production callers never
    pass them (a repeated nonce or salt would weaken the backup).
    """
    if not isinstance(keys, IdentityKeys):
        raise BackupError("keys must be IdentityKeys")
    secret = _passphrase_bytes(passphrase)
    t, m, p = DEFAULT_PARAMS if _params is None else _params
    if not all(type(v) is int for v in (t, m, p)):
        raise BackupError("key derivation parameters must be integers")
    _check_params(t, m, p)
    salt = os.urandom(SALT_BYTES) if _salt is None else _salt
    nonce = os.urandom(NONCE_BYTES) if _nonce is None else _nonce
    if len(salt) != SALT_BYTES:
        raise BackupError(f"salt must be {SALT_BYTES} bytes")
    if len(nonce) != NONCE_BYTES:
        raise BackupError(f"nonce must be {NONCE_BYTES} bytes")
    key_derivation = _descriptor(t, m, p, salt)
    key = _aes_key(secret, salt, t, m, p)
    sealed = seal_with_nonce(key, nonce, _plaintext(keys), _associated_data(key_derivation))
    return SealedBackup(blob_base64=_b64encode(sealed), key_derivation=key_derivation)


def open_backup(blob_base64: str, key_derivation: str, passphrase: str) -> IdentityKeys:
    """The keys sealed in a backup; raises BackupError.

    Everything the server supplied is checked before the (deliberately expensive) key derivation
    runs. A wrong passphrase and a tampered blob or descriptor give the same message: AES-GCM
    cannot tell them apart, and guessing would mislead.
    """
    t, m, p, salt = _parse_descriptor(key_derivation)
    secret = _passphrase_bytes(passphrase)
    if not isinstance(blob_base64, str):
        raise BackupError("backup blob must be a string")
    if len(blob_base64) > MAX_BLOB_CHARS:
        raise BackupError(f"backup blob too long: {len(blob_base64)} characters")
    try:
        blob = strict_b64decode(blob_base64)
    except ValueError as exc:
        raise BackupError(f"backup blob is {exc}") from None
    if len(blob) <= NONCE_BYTES + TAG_BYTES:
        raise BackupError(
            f"backup blob too short: {len(blob)} bytes, "
            f"need more than {NONCE_BYTES + TAG_BYTES} (nonce, tag and ciphertext)"
        )
    key = _aes_key(secret, salt, t, m, p)
    try:
        plaintext = open_sealed(key, blob, _associated_data(key_derivation))
    except SealError:
        raise BackupError(WRONG_PASSPHRASE) from None
    # Past this point the contents are authentic, so a failure means the sealing client was
    # broken; say so without echoing anything that might be key material.
    try:
        material = json.loads(plaintext.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise BackupError("backup decrypted, but its contents are not JSON") from None
    if not isinstance(material, dict):
        raise BackupError("backup decrypted, but its contents are not a JSON object")
    try:
        keys = IdentityKeys.from_private_material(material)
    except KeyMaterialError as exc:
        raise BackupError(f"backup decrypted, but its key material is malformed: {exc}") from None
    # One spelling only (this also refuses duplicated members, which json.loads would merge).
    if _plaintext(keys) != plaintext:
        raise BackupError("backup decrypted, but its contents are not canonical JSON")
    return keys
