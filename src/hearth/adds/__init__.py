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
- ``publish``, ``issue_grant``, ``unwrap_grant``, ``open_object``, ``check_delegation``: the
  object layer (encrypt and store chunks through a ``BlockSink``, wrap the content key to a
  reader, check and decrypt through a ``BlockSource``); refusals are ``OpenError``.
- ``chunk_aad``, ``content_key_id``, ``encrypt_chunk``, ``decrypt_chunk``,
  ``wrap_content_key``, ``unwrap_content_key``, ``key_wrap_from_json``: the crypto wire formats.
- ``resolve_heads``, ``next_head``: the current head of a named object, forks reported;
  ``resolve_provider_records``, ``block_urls``, ``record_holds``, ``receipt_covers``,
  ``receipt_in_force``: provider records by sequence and what receipts commit to.
"""

from .aead import (
    chunk_aad,
    content_key_id,
    decrypt_chunk,
    encrypt_chunk,
    key_wrap_from_json,
    unwrap_content_key,
    wrap_content_key,
)
from .b64 import b64url_decode, b64url_encode
from .builders import (
    Chunk,
    Commitment,
    Encryption,
    Endpoint,
    InventoryItem,
    KeyWrap,
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
from .heads import HeadResolution, next_head, resolve_heads
from .ijson import IJsonError, parse
from .kinds import KINDS, Right, x25519_key_id
from .objects import (
    BlockSink,
    BlockSource,
    OpenError,
    Published,
    check_delegation,
    issue_grant,
    open_object,
    publish,
    unwrap_grant,
)
from .problems import AddsError, Problem
from .providers import (
    ProviderResolution,
    block_urls,
    receipt_covers,
    receipt_in_force,
    record_holds,
    resolve_provider_records,
)
from .validate import ValidationResult, validate, validate_value

__all__ = [
    "KINDS",
    "SIGNING_CONTEXT",
    "AddsError",
    "BlockSink",
    "BlockSource",
    "CanonicalizationError",
    "Chunk",
    "Commitment",
    "Encryption",
    "Endpoint",
    "HeadResolution",
    "IJsonError",
    "InventoryItem",
    "KeyWrap",
    "OpenError",
    "Problem",
    "ProviderResolution",
    "Published",
    "Right",
    "Role",
    "SignedDocument",
    "ValidationResult",
    "b64url_decode",
    "b64url_encode",
    "block_urls",
    "build_grant",
    "build_head",
    "build_manifest",
    "build_provider_record",
    "build_receipt",
    "canonicalize",
    "check_delegation",
    "chunk_aad",
    "cid_for_bytes",
    "content_key_id",
    "decode_cid",
    "decrypt_chunk",
    "document_cid",
    "encrypt_chunk",
    "issue_grant",
    "key_wrap_from_json",
    "next_head",
    "open_object",
    "parse",
    "publish",
    "receipt_covers",
    "receipt_in_force",
    "record_holds",
    "resolve_heads",
    "resolve_provider_records",
    "sign_document",
    "signed_bytes",
    "unwrap_content_key",
    "unwrap_grant",
    "validate",
    "validate_value",
    "verify_document",
    "wrap_content_key",
    "x25519_key_id",
]
