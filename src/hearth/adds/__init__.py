"""ADDS 0.1: signed control documents for encrypted, content-addressed data.

Pure code: no I/O beyond the bytes a caller passes in. The public API:

- ``validate(data)``: strict I-JSON parse, every rule of the specification and of hearth's
  profile, signer binding and signature; returns a ValidationResult, never raises.
- ``build_manifest``, ``build_grant``, ``build_provider_record``, ``build_head``,
  ``build_receipt``: signed documents from Python values.
- ``signed_bytes``, ``sign_document``, ``verify_document``, ``document_cid``: the one
  definition of what is signed and how a document is named.
- ``canonicalize`` (RFC 8785), ``parse`` (strict I-JSON), ``cid_for_bytes``, ``decode_cid``,
  ``b64url_encode``, ``b64url_decode``: the strict codecs underneath.
"""

from .b64 import b64url_decode, b64url_encode
from .builders import (
    Chunk,
    Commitment,
    Encryption,
    Endpoint,
    InventoryItem,
    KeyWrap,
    Right,
    Role,
    SignedDocument,
    build_grant,
    build_head,
    build_manifest,
    build_provider_record,
    build_receipt,
)
from .canonical import CanonicalizationError, canonicalize
from .cid import cid_for_bytes, decode_cid
from .documents import SIGNING_CONTEXT, document_cid, sign_document, signed_bytes, verify_document
from .ijson import IJsonError, parse
from .kinds import KINDS, x25519_key_id
from .problems import AddsError, Problem
from .validate import ValidationResult, validate, validate_value

__all__ = [
    "KINDS",
    "SIGNING_CONTEXT",
    "AddsError",
    "CanonicalizationError",
    "Chunk",
    "Commitment",
    "Encryption",
    "Endpoint",
    "IJsonError",
    "InventoryItem",
    "KeyWrap",
    "Problem",
    "Right",
    "Role",
    "SignedDocument",
    "ValidationResult",
    "b64url_decode",
    "b64url_encode",
    "build_grant",
    "build_head",
    "build_manifest",
    "build_provider_record",
    "build_receipt",
    "canonicalize",
    "cid_for_bytes",
    "decode_cid",
    "document_cid",
    "parse",
    "sign_document",
    "signed_bytes",
    "validate",
    "validate_value",
    "verify_document",
    "x25519_key_id",
]
