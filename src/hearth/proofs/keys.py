"""Canonical X25519 public keys: one spelling per key, and no low-order points."""

from __future__ import annotations

_P = 2**255 - 19

# u-coordinates of the points of small order on Curve25519 and their non-canonical twins below
# 2^255 (Bernstein's list; also used by libsodium to refuse them).
_LOW_ORDER = frozenset(
    {
        0,
        1,
        325606250916557431795983626356110631294008115727848805560023387167927233504,
        39382357235489614581723060781553021112529911719440698176882885853963445705823,
        _P - 1,
        _P,
        _P + 1,
    }
)


def x25519_problem(raw: bytes) -> str | None:
    """Why ``raw`` is not a canonical X25519 public key, or None."""
    if len(raw) != 32:
        return "length"
    value = int.from_bytes(raw, "little")
    if value >> 255:
        return "non_canonical"  # the top bit is masked by X25519, so a set bit is a second name
    if value >= _P:
        return "non_canonical"
    if value in _LOW_ORDER:
        return "small_order"
    return None
