"""One check for an Ed25519 public key sent in a body: standard base64 of 32 bytes, and a point
the verification policy accepts (not small-order, canonical), or a 422 naming the field."""

from __future__ import annotations

from hearth.adds.ed25519 import point_problem
from hearth.proofs import EncodingError, b64_decode

from ..errors import ApiError


def checked_ed25519(text: str, field: str) -> bytes:
    """The raw key of ``text``, or 422 ``invalid_public_key`` with ``details.field``."""
    try:
        raw = b64_decode(text, length=32, what=field)
    except EncodingError as exc:
        raise ApiError(422, "invalid_public_key", str(exc), details={"field": field}) from None
    problem = point_problem(raw)
    if problem is not None:
        raise ApiError(
            422,
            "invalid_public_key",
            f"{field} is not an acceptable Ed25519 public key ({problem}).",
            details={"field": field, "problem": problem},
        )
    return raw
