"""Ed25519 keys, signatures and hearth's verification policy.

Policy (docs/adds.md): RFC 8032 strict decoding and cofactorless verification, and small-order
points refused, as libsodium does:
- a public key (A) or signature point (R) whose encoding is not canonical is refused;
- a public key or R of small order (the eight points of order dividing 8) is refused;
- S must be below the group order L;
- points with a small-order component but large order are accepted (they are valid keys).
The encoding checks run here, in plain integer arithmetic, so that the verdict does not depend
on which library verifies: y >= p and the eight small-order encodings are refused before any
library sees the key or R (an encoding of no curve point, every library refuses). The curve
work goes to libsodium (PyNaCl), the fastest verifier available; ``cryptography`` signs and reads
PEM. Decoding a point in Python costs about a millisecond, so ``point_problem`` runs only to
explain a refusal, never on the hot path.
"""

from __future__ import annotations

import functools

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from nacl.bindings import crypto_sign_open
from nacl.exceptions import BadSignatureError

__all__ = [
    "point_problem",
    "private_key_from_raw",
    "public_key_raw",
    "sign",
    "verify",
]

_P = 2**255 - 19
_L = 2**252 + 27742317777372353535851937790883648493
_D = (-121665 * pow(121666, _P - 2, _P)) % _P
_SQRT_M1 = pow(2, (_P - 1) // 4, _P)


def _decode_point(encoded: bytes) -> tuple[int, int] | str:
    """The affine point of a 32-byte encoding, or the reason it is refused."""
    value = int.from_bytes(encoded, "little")
    sign = value >> 255
    y = value & ((1 << 255) - 1)
    if y >= _P:
        return "non_canonical"
    y2 = y * y % _P
    u = (y2 - 1) % _P
    v = (_D * y2 + 1) % _P
    # x = sqrt(u / v) by the RFC 8032 section 5.1.3 recipe.
    x = u * pow(v, 3, _P) * pow(u * pow(v, 7, _P), (_P - 5) // 8, _P) % _P
    if (v * x * x - u) % _P != 0:
        x = x * _SQRT_M1 % _P
        if (v * x * x - u) % _P != 0:
            return "not_on_curve"
    if x == 0 and sign:
        return "non_canonical"
    if x & 1 != sign:
        x = _P - x
    return x, y


def _double(point: tuple[int, int]) -> tuple[int, int]:
    x, y = point
    xy = x * y % _P
    dxy = _D * xy * xy % _P
    x3 = 2 * xy * pow(1 + dxy, _P - 2, _P) % _P
    y3 = (y * y + x * x) * pow(1 - dxy, _P - 2, _P) % _P
    return x3, y3


# The canonical encodings of the eight points of order dividing 8 (identity, the point of order
# 2, two of order 4 and four of order 8), as libsodium lists them. tests/adds/test_codecs.py
# checks each against the full point arithmetic below.
_SMALL_ORDER = frozenset(
    bytes.fromhex(h)
    for h in (
        "0100000000000000000000000000000000000000000000000000000000000000",
        "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
        "0000000000000000000000000000000000000000000000000000000000000000",
        "0000000000000000000000000000000000000000000000000000000000000080",
        "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05",
        "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85",
        "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a",
        "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa",
    )
)
_X_ZERO_Y = frozenset({1, _P - 1})  # the two points with x = 0, whose sign bit must be clear
# The same eight encodings as little-endian integers: looking one up hashes no bytes.
_SMALL_ORDER_VALUES = frozenset(int.from_bytes(encoded, "little") for encoded in _SMALL_ORDER)
_Y_MASK = (1 << 255) - 1


def encoding_problem(encoded: bytes) -> str | None:
    """The policy's refusals that need no curve arithmetic: ``length``, ``non_canonical`` (y >= p,
    or x = 0 with the sign bit set) and ``small_order``. A point that is not on the curve is left
    to the verifier, which cannot decode it. Cheap enough to run on every signature's R."""
    if len(encoded) != 32:
        return "length"
    value = int.from_bytes(encoded, "little")
    y = value & ((1 << 255) - 1)
    if y >= _P or (value >> 255 and y in _X_ZERO_Y):
        return "non_canonical"
    if encoded in _SMALL_ORDER:
        return "small_order"
    return None


@functools.lru_cache(maxsize=1024)
def point_problem(encoded: bytes) -> str | None:
    """Why a public key or R encoding is refused by the policy, or None; this one also decodes
    the point (slow: about a millisecond), so it is for explaining a refusal, not the hot path.

    Reasons: ``length``, ``non_canonical``, ``not_on_curve``, ``small_order``.
    """
    cheap = encoding_problem(encoded)
    if cheap is not None:
        return cheap
    point = _decode_point(encoded)
    if isinstance(point, str):
        return point
    for _ in range(3):  # [8]P is the identity exactly when P has small order
        point = _double(point)
    if point == (0, 1):
        return "small_order"
    return None


def _acceptable(public_key: bytes, signature: bytes, *, key_checked: bool = False) -> bool:
    return (
        len(signature) == 64
        and (key_checked or encoding_problem(public_key) is None)
        and encoding_problem(signature[:32]) is None
        and int.from_bytes(signature[32:], "little") < _L
    )


def verify(
    public_key: bytes, signature: bytes, message: bytes, *, key_checked: bool = False
) -> bool:
    """Verify under the policy above; never raises for bad input. ``key_checked`` says the
    caller has already found ``encoding_problem(public_key)`` to be None (the validator does,
    once per key), so that it is not paid for twice."""
    if len(signature) != 64 or not (key_checked or encoding_problem(public_key) is None):
        return False
    # _acceptable's checks of R and S, written out: this runs once per document verified.
    r = int.from_bytes(signature[:32], "little")
    y = r & _Y_MASK
    if y >= _P or (r >> 255 and y in _X_ZERO_Y) or r in _SMALL_ORDER_VALUES:
        return False
    if int.from_bytes(signature[32:], "little") >= _L:
        return False
    try:
        crypto_sign_open(signature + message, public_key)
    except (BadSignatureError, ValueError, TypeError):
        return False
    return True


def verify_with_cryptography(public_key: bytes, signature: bytes, message: bytes) -> bool:
    """The same policy with OpenSSL doing the curve work; kept to cross-check ``verify``."""
    if not _acceptable(public_key, signature):
        return False
    try:
        Ed25519PublicKey.from_public_bytes(public_key).verify(signature, message)
    except (InvalidSignature, ValueError):
        return False
    return True


def private_key_from_raw(seed: bytes) -> Ed25519PrivateKey:
    """A private key from its 32-byte seed (deterministic keys for vectors and tests)."""
    return Ed25519PrivateKey.from_private_bytes(seed)


def public_key_raw(private_key: Ed25519PrivateKey) -> bytes:
    return private_key.public_key().public_bytes_raw()


def sign(private_key: Ed25519PrivateKey, message: bytes) -> bytes:
    return private_key.sign(message)
