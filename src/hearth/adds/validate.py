"""Validation of ADDS documents: strict parse, every rule, signer binding, signature.

``validate(data)`` takes the bytes of a document and returns a ValidationResult listing every
problem found; it never raises, whatever the bytes. Whether a document is valid never depends on
the clock; pass ``now`` to get warnings about time windows (an expired grant is still valid).
"""

from __future__ import annotations

import base64
import functools
from binascii import a2b_base64
from dataclasses import dataclass
from typing import Any

from . import ed25519
from .b64 import b64url_problem
from .canonical import canonicalize, is_simple
from .cid import cid_for_bytes
from .documents import signed_bytes, signed_bytes_of_canonical
from .ijson import IJsonError, parse, scan_plain
from .kinds import KINDS
from .problems import Problem
from .rules import json_type

__all__ = ["ValidationResult", "validate", "validate_value"]

# The member after which a document no longer does its job (warned about, never an error).
_END_MEMBER = {"grant": "expires_at", "provider_record": "expires_at", "receipt": "retention_until"}

# The fast path (_validate_canonical) takes small documents only: on large ones the general
# path's column-wise passes are the faster, and a regex over a whole manifest is not.
_FAST_LIMIT = 8192
# In canonical text "kind" is a top-level member written exactly so (no string holds a quote).
_KIND_TEXT = '"kind":"'

_URL_TO_STANDARD = bytes.maketrans(b"-_", b"+/")

_KEY_MESSAGES = {
    "non_canonical": "the Ed25519 public key is not canonically encoded",
    "not_on_curve": "the Ed25519 public key is not a point on the curve",
    "small_order": "the Ed25519 public key has small order",
    "length": "the Ed25519 public key is not 32 bytes",
}


@dataclass(frozen=True, slots=True)
class ValidationResult:
    """The outcome of validating one document.

    ``document`` is the parsed value (None when the bytes did not parse). ``errors`` make the
    document invalid; ``warnings`` (time windows, only when ``now`` was given) do not.
    """

    document: Any
    kind: str | None
    errors: tuple[Problem, ...]
    warnings: tuple[Problem, ...] = ()
    simple: bool = False

    @property
    def valid(self) -> bool:
        return not self.errors

    @property
    def cid(self) -> str | None:
        """The document's CID: sha2-256 of the RFC 8785 bytes of the whole parsed object."""
        if not isinstance(self.document, dict):
            return None
        return cid_for_bytes(canonicalize(self.document, simple=self.simple))


@functools.lru_cache(maxsize=1024)
def _decode_key(text: str) -> bytes | None:
    # Keys repeat across documents (one signer signs many), so decoding is cached.
    if len(text) == 43 and b64url_problem(text) is None:
        return base64.urlsafe_b64decode(text + "=")
    return None


# The policy's verdict on a signing key, per key, for the same reason.
_key_problem = functools.lru_cache(maxsize=1024)(ed25519.encoding_problem)


def _raw_key(value: Any) -> bytes | None:
    return _decode_key(value) if type(value) is str else None


def _signature_checks(
    document: dict[str, Any],
    signer_member: str,
    simple: bool,
    problems: list[Problem],
    canonical_data: bytes | None,
) -> None:
    """Profile: the signer's key signed it, the key passes the policy, the signature holds.

    ``canonical_data``, when given, is the RFC 8785 form of ``document``: the signed bytes are
    cut out of it instead of encoded again."""
    signature = document.get("signature")
    if type(signature) is not dict:
        return
    signing_key = _raw_key(signature.get("public_key"))
    value = signature.get("value")
    signer = document.get(signer_member)
    signer_key = _raw_key(signer.get("ed25519_public_key")) if type(signer) is dict else None
    if signing_key is None:
        return
    if signer_key is not None and signer_key != signing_key:
        problems.append(_signer_mismatch(signer_member))
    key_problem = _key_problem(signing_key)
    if key_problem is not None:
        problems.append(_bad_key(key_problem))
        return
    if type(value) is not str or len(value) != 86 or b64url_problem(value) is not None:
        return
    raw_signature = base64.urlsafe_b64decode(value + "==")
    signed = (
        signed_bytes_of_canonical(canonical_data, document) if canonical_data is not None else None
    )
    if signed is None:
        signed = signed_bytes(document, simple=simple)
    if not ed25519.verify(signing_key, raw_signature, signed, key_checked=True):
        _refused(signing_key, problems)


def _signer_mismatch(signer_member: str) -> Problem:
    return Problem(
        "/signature/public_key",
        "profile.signature.signer_mismatch",
        f"signature.public_key is not {signer_member}.ed25519_public_key",
    )


def _bad_key(key_problem: str) -> Problem:
    return Problem(
        "/signature/public_key", f"profile.key.{key_problem}", _KEY_MESSAGES[key_problem]
    )


def _refused(signing_key: bytes, problems: list[Problem]) -> None:
    """The problem to report when the signature does not verify."""
    # Only now pay for decoding the point, to tell a key that is no curve point from a bad
    # signature.
    if ed25519.point_problem(signing_key) == "not_on_curve":
        message = _KEY_MESSAGES["not_on_curve"]
        problems.append(Problem("/signature/public_key", "profile.key.not_on_curve", message))
    else:
        problems.append(
            Problem(
                "/signature/value",
                "profile.signature.invalid",
                "the signature does not verify over the document's signed bytes",
            )
        )


def _signature_checks_canonical(
    document: dict[str, Any], signer_member: str, problems: list[Problem], data: bytes
) -> None:
    """_signature_checks for a document the kind's canonical regex matched, with what the
    regex proved left out: ``signature`` and the signer are objects, ``signature.public_key``
    and the signer's ``ed25519_public_key`` are canonical base64url of 32 bytes and
    ``signature.value`` of 64 bytes, and ``data`` is the document's RFC 8785 form. Canonical
    base64url decodes one to one, so comparing the texts compares the keys.
    tests/adds/test_fast_paths.py holds the two to the same problems."""
    signature = document["signature"]
    key_text = signature["public_key"]
    signing_key = _decode_key(key_text)
    if signing_key is None:  # unreachable after the regex; as _signature_checks does
        return
    if document[signer_member]["ed25519_public_key"] != key_text:
        problems.append(_signer_mismatch(signer_member))
    key_problem = _key_problem(signing_key)
    if key_problem is not None:
        problems.append(_bad_key(key_problem))
        return
    # binascii on the standard alphabet: base64.urlsafe_b64decode's Python-level wrapper costs
    # more than the decoding itself, and the regex has already proved the text canonical.
    value: str = signature["value"]
    raw_signature = a2b_base64(value.encode("ascii").translate(_URL_TO_STANDARD) + b"==")
    signed = signed_bytes_of_canonical(data, document)
    if signed is None:  # a kind whose signature is not its last member
        signed = signed_bytes(document, simple=True)
    if not ed25519.verify(signing_key, raw_signature, signed, key_checked=True):
        _refused(signing_key, problems)


def _time_warnings(kind: str, document: dict[str, Any], now: int) -> list[Problem]:
    def whole(name: str) -> int | None:
        value = document.get(name)
        return value if type(value) is int else None

    warnings = []
    end_member = _END_MEMBER.get(kind)
    end = whole(end_member) if end_member else None
    if end is not None and now >= end:
        warnings.append(
            Problem(f"/{end_member}", "profile.time.expired", f"{end_member} has passed")
        )
    if kind == "grant":
        starts = [t for t in (whole("issued_at"), whole("not_before")) if t is not None]
        if starts and now < max(starts):
            warnings.append(
                Problem(
                    "/not_before" if whole("not_before") else "/issued_at",
                    "profile.time.not_yet_valid",
                    "the grant is not usable yet",
                )
            )
    return warnings


def validate_value(
    document: Any,
    *,
    simple: bool | None = None,
    now: int | None = None,
    canonical_data: bytes | None = None,
) -> ValidationResult:
    """Validate an already parsed value (from ``hearth.adds.ijson.parse``). ``canonical_data``
    may be given when the bytes parsed are known to be the value's RFC 8785 form
    (``Parsed.canonical``); the signature check then reads its signed bytes out of them."""
    if type(document) is not dict:
        problem = Problem(
            "", "spec.type", f"a document is a JSON object, not {json_type(document)}"
        )
        return ValidationResult(document, None, (problem,))
    if simple is None:
        simple = is_simple(document)
    kind = document.get("kind")
    rules = KINDS.get(kind) if type(kind) is str else None
    if rules is None or type(kind) is not str:
        if "kind" not in document:
            problem = Problem("/kind", "spec.required", "missing required member 'kind'")
        else:
            problem = Problem("/kind", "spec.kind", "kind must be one of " + ", ".join(KINDS))
        return ValidationResult(document, None, (problem,), simple=simple)
    problems: list[Problem] = []
    rules.check_structure(document, problems)
    for cross in rules.cross:
        cross(document, problems)
    _signature_checks(document, rules.signer, simple, problems, canonical_data)
    warnings = _time_warnings(kind, document, now) if now is not None else []
    return ValidationResult(document, kind, tuple(problems), tuple(warnings), simple)


def _validate_canonical(data: bytes, now: int | None) -> ValidationResult | None:
    """Validate a small document written in its canonical form, or None to take the general
    path. ASCII bytes with no backslash that the kind's canonical regex matches (see
    rules.Canonical) and the plain scanner parses are strict I-JSON (no escape, no float, no
    16-digit integer, no repeated name, shallow), pass the structural check and are their own
    RFC 8785 form; what is left is the cross-member rules and the signature. Beside the verify,
    a grant costs half the instructions of the general path this way."""
    if len(data) >= _FAST_LIMIT or not data.isascii() or b"\\" in data:
        return None
    text = data.decode("ascii")
    at = text.find(_KIND_TEXT) + len(_KIND_TEXT)
    rules = KINDS.get(text[at : text.find('"', at)]) if at >= len(_KIND_TEXT) else None
    if rules is None or rules.canonical is None:
        return None
    scanned, document = scan_plain(text)
    if not scanned or type(document) is not dict or not rules.canonical_match(text, document):
        return None
    problems: list[Problem] = []
    for cross in rules.cross:
        cross(document, problems)
    _signature_checks_canonical(document, rules.signer, problems, data)
    kind: str = document["kind"]
    warnings = _time_warnings(kind, document, now) if now is not None else []
    return ValidationResult(document, kind, tuple(problems), tuple(warnings), True)


def validate(
    data: bytes, *, now: int | None = None, require_canonical: bool = False
) -> ValidationResult:
    """Parse bytes as strict I-JSON and validate them as an ADDS document. Never raises.

    Any spelling of a document is accepted by default (pretty-printed, members in any order):
    the signature and the CID are over the canonical form, so respellings are the same
    document. With ``require_canonical`` the bytes must be exactly that form, as where a
    document is stored or fetched by its CID; then any change to the bytes is refused.
    """
    if type(data) is not bytes:  # one test for the usual case
        if not isinstance(data, bytes | bytearray | memoryview):
            problem = Problem("", "spec.type", "a document is given as bytes")
            return ValidationResult(None, None, (problem,))
        data = bytes(data)
    fast = _validate_canonical(data, now)
    if fast is not None:
        return fast
    try:
        parsed = parse(data)
    except IJsonError as exc:
        return ValidationResult(None, None, (Problem("", exc.code, str(exc)),))
    result = validate_value(
        parsed.value,
        simple=parsed.simple,
        now=now,
        canonical_data=data if parsed.canonical else None,
    )
    if require_canonical and not parsed.canonical and type(parsed.value) is dict:
        canonical = canonicalize(parsed.value, simple=parsed.simple)
        if canonical != data:
            problem = Problem(
                "",
                "profile.document.non_canonical",
                "the bytes are not the document's canonical (RFC 8785) form",
            )
            return ValidationResult(
                result.document,
                result.kind,
                (problem, *result.errors),
                result.warnings,
                result.simple,
            )
    return result
