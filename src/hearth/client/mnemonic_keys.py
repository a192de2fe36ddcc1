"""An agent's identity keys, derived from a 24-word BIP-39 mnemonic.

Derivation (fixed; changing any step changes every key ever derived):
1. the words, checked and normalised (NFKD, lower case, single spaces);
2. the standard BIP-39 seed: PBKDF2-HMAC-SHA512, 2048 rounds, salt "mnemonic" and an empty
   passphrase, 64 bytes;
3. HKDF-SHA256 (RFC 5869) of that seed, no salt, 32 bytes per key, one info label per key:
   ``hearth/ed25519-root/v1`` (Ed25519 private key seed), ``hearth/x25519-box/v1`` (X25519
   private key) and ``hearth/strand-master/v1`` (K_master). Distinct labels make the three keys
   independent: knowing one says nothing about the others.

Only 24 words (256 bits of entropy) are accepted, so every identity has the same strength.
Pure code: no network, no files of ours (the ``mnemonic`` package reads its own wordlist), and
nothing here logs; error messages name a mistyped word but never echo the whole phrase.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hmac
import os
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass

from mnemonic import Mnemonic

from hearth.proofs.kdf import hkdf
from hearth.proofs.key_types import Ed25519PrivateKey, X25519PrivateKey

__all__ = [
    "INFO_ED25519",
    "INFO_STRAND_MASTER",
    "INFO_X25519",
    "WORD_COUNT",
    "IdentityKeys",
    "KeyMaterialError",
    "MnemonicError",
    "NewIdentity",
    "check_mnemonic",
    "derive_keys",
    "new_identity",
    "new_mnemonic",
    "strict_b64decode",
]

WORD_COUNT = 24
_ENTROPY_BYTES = 32  # 24 words = 256 bits of entropy + 8 checksum bits
_KEY_BYTES = 32

INFO_ED25519 = b"hearth/ed25519-root/v1"
INFO_X25519 = b"hearth/x25519-box/v1"
INFO_STRAND_MASTER = b"hearth/strand-master/v1"

# The members of the backup payload; exact, so a payload with a missing or extra key is refused
# rather than half-understood.
_MATERIAL_KEYS = frozenset({"ed25519_private", "x25519_private", "strand_master"})


class MnemonicError(ValueError):
    """The words are not a valid 24-word BIP-39 English mnemonic."""


class KeyMaterialError(ValueError):
    """Private key material (the backup payload) is malformed."""


@functools.cache
def _english() -> Mnemonic:
    # Loading the wordlist reads a file inside the package; do it once.
    return Mnemonic("english")


def strict_b64decode(text: str) -> bytes:
    """Decode standard base64 (with padding), refusing every non-canonical spelling.

    ``validate=True`` refuses characters outside the alphabet, but still ignores the unused low
    bits of the last character, so two texts could decode to the same bytes; re-encoding and
    comparing closes that gap. Raises ValueError.
    """
    try:
        data = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        # ValueError also covers non-ASCII text, which b64decode refuses before decoding.
        raise ValueError("not valid standard base64") from None
    if base64.b64encode(data).decode("ascii") != text:
        raise ValueError("not canonical standard base64")
    return data


def _b64encode(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def new_mnemonic() -> str:
    """Fresh 24 words from the operating system's random source (256 bits of entropy)."""
    return _english().to_mnemonic(os.urandom(_ENTROPY_BYTES))


def check_mnemonic(words: str) -> str:
    """The canonical form of ``words`` (NFKD, lower case, single spaces), or MnemonicError.

    Checks, in order: exactly 24 words, each in the English wordlist, and the checksum. Stray
    whitespace, upper case and compatibility forms (such as full-width letters) are forgiven,
    since people type and paste these words by hand.
    """
    if not isinstance(words, str):
        raise MnemonicError("the mnemonic must be a string")
    normalised = unicodedata.normalize("NFKD", words).lower()
    tokens = normalised.split()
    if len(tokens) != WORD_COUNT:
        raise MnemonicError(f"expected {WORD_COUNT} words, got {len(tokens)}")
    wordlist = frozenset(_english().wordlist)
    unknown = [(i, w) for i, w in enumerate(tokens, start=1) if w not in wordlist]
    if unknown:
        listed = ", ".join(f"word {i} ({w!r})" for i, w in unknown)
        raise MnemonicError(f"not in the BIP-39 English wordlist: {listed}")
    canonical = " ".join(tokens)
    if not _english().check(canonical):
        raise MnemonicError(
            "checksum mismatch: every word is in the wordlist, but one is wrong or out of order"
        )
    return canonical


def _raw32(key: Ed25519PrivateKey | X25519PrivateKey) -> bytes:
    return key.private_bytes_raw()


@dataclass(frozen=True, repr=False, eq=False)
class IdentityKeys:
    """The three secrets of an identity. ``repr`` shows only public keys."""

    signing: Ed25519PrivateKey
    box: X25519PrivateKey
    strand_master: bytes

    def __post_init__(self) -> None:
        # Catch a swapped or truncated argument here, not later as a confusing crypto failure.
        if not isinstance(self.signing, Ed25519PrivateKey):
            raise TypeError("signing must be an Ed25519PrivateKey")
        if not isinstance(self.box, X25519PrivateKey):
            raise TypeError("box must be an X25519PrivateKey")
        if not isinstance(self.strand_master, bytes) or len(self.strand_master) != _KEY_BYTES:
            raise TypeError(f"strand_master must be {_KEY_BYTES} bytes")

    def __repr__(self) -> str:
        # The default dataclass repr would print strand_master, a raw secret, into any log or
        # traceback that shows this object.
        return (
            f"IdentityKeys(signing_public={self.signing_public_b64!r}, "
            f"box_public={self.box_public_b64!r}, strand_master=<redacted>)"
        )

    def __eq__(self, other: object) -> bool:
        # Private key objects compare by identity; compare the material, in constant time.
        if not isinstance(other, IdentityKeys):
            return NotImplemented
        return hmac.compare_digest(self._secret_bytes(), other._secret_bytes())

    def __hash__(self) -> int:
        # Public keys only: consistent with __eq__ (equal secrets have equal public keys) and
        # a hash of secret bytes would be one more place they leak into.
        return hash((self.signing_public_raw, self.box_public_raw))

    def _secret_bytes(self) -> bytes:
        return _raw32(self.signing) + _raw32(self.box) + self.strand_master

    @property
    def signing_public_raw(self) -> bytes:
        return self.signing.public_key().public_bytes_raw()

    @property
    def box_public_raw(self) -> bytes:
        return self.box.public_key().public_bytes_raw()

    @property
    def signing_public_b64(self) -> str:
        return _b64encode(self.signing_public_raw)

    @property
    def box_public_b64(self) -> str:
        return _b64encode(self.box_public_raw)

    def private_material(self) -> dict[str, str]:
        """The raw 32-byte secrets in standard base64: the plaintext of a key backup."""
        return {
            "ed25519_private": _b64encode(_raw32(self.signing)),
            "x25519_private": _b64encode(_raw32(self.box)),
            "strand_master": _b64encode(self.strand_master),
        }

    @classmethod
    def from_private_material(cls, d: Mapping[str, str]) -> IdentityKeys:
        """Inverse of ``private_material``; strict, raises KeyMaterialError."""
        if not isinstance(d, Mapping):
            raise KeyMaterialError("key material must be a mapping")
        keys = set(d)
        if keys != _MATERIAL_KEYS:
            missing = sorted(_MATERIAL_KEYS - keys)
            extra = sorted(str(k) for k in keys - _MATERIAL_KEYS)
            raise KeyMaterialError(f"key material members: missing {missing}, unexpected {extra}")
        raw: dict[str, bytes] = {}
        for name in sorted(_MATERIAL_KEYS):
            value = d[name]
            if not isinstance(value, str):
                raise KeyMaterialError(f"{name} must be a base64 string")
            try:
                decoded = strict_b64decode(value)
            except ValueError as exc:
                raise KeyMaterialError(f"{name}: {exc}") from None
            if len(decoded) != _KEY_BYTES:
                raise KeyMaterialError(f"{name} must be {_KEY_BYTES} bytes, got {len(decoded)}")
            raw[name] = decoded
        return cls(
            signing=Ed25519PrivateKey.from_private_bytes(raw["ed25519_private"]),
            box=X25519PrivateKey.from_private_bytes(raw["x25519_private"]),
            strand_master=raw["strand_master"],
        )


def derive_keys(words: str) -> IdentityKeys:
    """The identity keys of a mnemonic; the same words always give the same keys."""
    canonical = check_mnemonic(words)
    seed = Mnemonic.to_seed(canonical, passphrase="")
    return IdentityKeys(
        signing=Ed25519PrivateKey.from_private_bytes(hkdf(seed, INFO_ED25519)),
        box=X25519PrivateKey.from_private_bytes(hkdf(seed, INFO_X25519)),
        strand_master=hkdf(seed, INFO_STRAND_MASTER),
    )


@dataclass(frozen=True, repr=False)
class NewIdentity:
    """Fresh identity keys and the 24 words they derive from. ``keys`` is what
    :meth:`~hearth.client.HearthClient.register` takes; ``mnemonic`` is the only way to recover
    the identity later (keep it offline). ``repr`` shows the public keys only."""

    mnemonic: str
    keys: IdentityKeys

    def __repr__(self) -> str:
        return f"NewIdentity(keys={self.keys!r}, mnemonic=<redacted>)"


def new_identity() -> NewIdentity:
    """New identity keys (Ed25519 root, X25519 box, strand master) from fresh words: the same
    derivation ``hearth register`` uses, so the words recover it with ``hearth recover`` too."""
    words = new_mnemonic()
    return NewIdentity(words, derive_keys(words))
