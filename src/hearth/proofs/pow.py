"""service-pow/v1: the registration proof-of-work, literal concatenation as the spec says."""

from __future__ import annotations

import hashlib
from collections.abc import Callable

POW_CONTEXT = "service-pow/v1"


def pow_digest(public_key: str, display_name: str, timestamp: str, nonce: str) -> bytes:
    data = POW_CONTEXT + public_key + display_name + timestamp + nonce
    return hashlib.sha256(data.encode("utf-8")).digest()


def leading_zero_bits(digest: bytes) -> int:
    bits = 0
    for byte in digest:
        if byte == 0:
            bits += 8
            continue
        return bits + 8 - byte.bit_length()
    return bits


def pow_holds(digest: bytes, difficulty: int) -> bool:
    if difficulty <= 0:
        return True
    # Comparing the big-endian integer against a bound is the cheap form of the bit count.
    return int.from_bytes(digest, "big") >> (256 - difficulty) == 0


def solve_pow(
    public_key: str,
    display_name: str,
    timestamp: str,
    difficulty: int,
    *,
    start: int = 0,
    progress: Callable[[int], None] | None = None,
    progress_every: int = 65_536,
) -> str:
    """Search decimal nonces from ``start``; ``progress`` is told how many were tried."""
    # The prefix is hashed once and copied per attempt: most of the cost is the constant prefix.
    prefix = hashlib.sha256((POW_CONTEXT + public_key + display_name + timestamp).encode("utf-8"))
    shift = 256 - difficulty
    counter = start
    while True:
        h = prefix.copy()
        h.update(str(counter).encode("ascii"))
        if difficulty <= 0 or int.from_bytes(h.digest(), "big") >> shift == 0:
            if progress is not None:
                progress(counter - start + 1)
            return str(counter)
        counter += 1
        if progress is not None and (counter - start) % progress_every == 0:
            progress(counter - start)
