"""Typed builders: signed ADDS documents from Python values, so nobody writes JSON by hand.

Each ``build_*`` takes raw bytes for keys, nonces and ciphertexts, integers for sizes and epoch
seconds, and an Ed25519 private key; it fills in derived members (the signer's public key, the
audience key fingerprint, the signature), signs, and validates the result. A builder returns a
SignedDocument only when it validates; otherwise it raises AddsError with the problems, so a bad
value never reaches the wire.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from . import ed25519
from .b64 import b64url_encode
from .canonical import CanonicalizationError, canonicalize
from .cid import cid_for_bytes
from .documents import sign_document
from .kinds import TAG_LENGTH, Right, x25519_key_id
from .problems import AddsError
from .validate import validate

__all__ = [
    "Chunk",
    "Commitment",
    "Encryption",
    "Endpoint",
    "InventoryItem",
    "KeyWrap",
    "Role",
    "SignedDocument",
    "build_grant",
    "build_head",
    "build_manifest",
    "build_provider_record",
    "build_receipt",
]

VERSION = "0.1"


class Role(enum.StrEnum):
    BLOCK = "block"
    MANIFEST = "manifest"
    GRANT = "grant"
    PROVIDER_RECORD = "provider_record"
    HEAD = "head"
    RECEIPT = "receipt"
    OTHER = "other"


class Commitment(enum.StrEnum):
    STORE = "store"
    STORE_AND_SERVE = "store_and_serve"


@dataclass(frozen=True, slots=True)
class SignedDocument:
    """A signed, validated document: its value, its canonical bytes and its CID."""

    document: dict[str, Any]
    canonical: bytes
    cid: str

    @property
    def kind(self) -> str:
        return str(self.document["kind"])


@dataclass(frozen=True, slots=True)
class Chunk:
    """One encrypted chunk; ``ciphertext_size`` is ``plaintext_size`` + the 16-byte tag."""

    index: int
    cid: str
    nonce: bytes
    plaintext_size: int

    def as_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "cid": self.cid,
            "nonce": b64url_encode(self.nonce),
            "plaintext_size": self.plaintext_size,
            "ciphertext_size": self.plaintext_size + TAG_LENGTH,
        }


@dataclass(frozen=True, slots=True)
class Encryption:
    key_id: str
    chunk_size: int
    aad_context: bytes

    def as_json(self) -> dict[str, Any]:
        return {
            "algorithm": "AES-256-GCM",
            "key_id": self.key_id,
            "block_aad": "adds-block/v1",
            "chunk_size": self.chunk_size,
            "aad_context": b64url_encode(self.aad_context),
        }


@dataclass(frozen=True, slots=True)
class KeyWrap:
    ephemeral_public_key: bytes
    nonce: bytes
    ciphertext: bytes

    def as_json(self) -> dict[str, Any]:
        return {
            "algorithm": "X25519-HKDF-SHA256-AES-256-GCM",
            "ephemeral_public_key": b64url_encode(self.ephemeral_public_key),
            "nonce": b64url_encode(self.nonce),
            "ciphertext": b64url_encode(self.ciphertext),
        }


@dataclass(frozen=True, slots=True)
class InventoryItem:
    cid: str
    size: int
    role: Role

    def as_json(self) -> dict[str, Any]:
        return {"cid": self.cid, "size": self.size, "role": str(self.role)}


@dataclass(frozen=True, slots=True)
class Endpoint:
    transport: str
    uri_template: str
    priority: int | None = None

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"transport": self.transport, "uri_template": self.uri_template}
        if self.priority is not None:
            out["priority"] = self.priority
        return out


@dataclass(frozen=True, slots=True)
class _Optional:
    """Members included only when given (None means absent, never JSON null)."""

    members: dict[str, Any] = field(default_factory=dict)

    def add(self, name: str, value: Any) -> None:
        if value is not None:
            self.members[name] = value


def _principal(member_id: str, key: Ed25519PrivateKey) -> dict[str, str]:
    return {"id": member_id, "ed25519_public_key": b64url_encode(ed25519.public_key_raw(key))}


def _finish(document: dict[str, Any], key: Ed25519PrivateKey) -> SignedDocument:
    try:
        signed = sign_document(document, key)
        canonical = canonicalize(signed)
    except CanonicalizationError as exc:
        raise AddsError.single("spec.ijson.syntax", f"not representable as I-JSON: {exc}") from None
    result = validate(canonical)
    if not result.valid:
        raise AddsError(result.errors)
    return SignedDocument(signed, canonical, cid_for_bytes(canonical))


def build_manifest(
    *,
    key: Ed25519PrivateKey,
    publisher_id: str,
    object_id: str,
    created_at: int,
    plaintext_size: int,
    encryption: Encryption,
    chunks: Sequence[Chunk],
    media_type: str | None = None,
    schema: str | None = None,
    provenance_parents: Sequence[str] | None = None,
    transformation: str | None = None,
    generated_by: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    extensions: Mapping[str, Any] | None = None,
) -> SignedDocument:
    optional = _Optional()
    optional.add("media_type", media_type)
    optional.add("schema", schema)
    provenance = _Optional()
    provenance.add("parents", list(provenance_parents) if provenance_parents is not None else None)
    provenance.add("transformation", transformation)
    provenance.add("generated_by", generated_by)
    optional.add("provenance", provenance.members or None)
    optional.add("metadata", dict(metadata) if metadata is not None else None)
    optional.add("extensions", dict(extensions) if extensions is not None else None)
    document = {
        "adds_version": VERSION,
        "kind": "manifest",
        "object_id": object_id,
        "publisher": _principal(publisher_id, key),
        "created_at": created_at,
        "plaintext": {"size": plaintext_size},
        "encryption": encryption.as_json(),
        "chunks": [c.as_json() for c in chunks],
        **optional.members,
    }
    return _finish(document, key)


def build_grant(
    *,
    key: Ed25519PrivateKey,
    issuer_id: str,
    grant_id: str,
    manifest_cid: str,
    audience: str,
    audience_x25519_public_key: bytes,
    rights: Sequence[Right],
    issued_at: int,
    expires_at: int,
    key_wrap: KeyWrap,
    not_before: int | None = None,
    parent_grant: str | None = None,
    task_id: str | None = None,
    purpose: str | None = None,
    extensions: Mapping[str, Any] | None = None,
) -> SignedDocument:
    optional = _Optional()
    optional.add("not_before", not_before)
    optional.add("parent_grant", parent_grant)
    scope = _Optional()
    scope.add("task_id", task_id)
    scope.add("purpose", purpose)
    optional.add("scope", scope.members or None)
    optional.add("extensions", dict(extensions) if extensions is not None else None)
    document = {
        "adds_version": VERSION,
        "kind": "grant",
        "grant_id": grant_id,
        "manifest_cid": manifest_cid,
        "issuer": _principal(issuer_id, key),
        "audience": audience,
        "audience_x25519_public_key": b64url_encode(audience_x25519_public_key),
        "audience_x25519_key_id": x25519_key_id(audience_x25519_public_key),
        "rights": [str(Right(r)) for r in rights],
        "issued_at": issued_at,
        "expires_at": expires_at,
        "key_wrap": key_wrap.as_json(),
        **optional.members,
    }
    return _finish(document, key)


def build_provider_record(
    *,
    key: Ed25519PrivateKey,
    provider_id: str,
    record_id: str,
    sequence: int,
    issued_at: int,
    expires_at: int,
    inventory: Sequence[InventoryItem],
    endpoints: Sequence[Endpoint],
    supersedes: str | None = None,
    extensions: Mapping[str, Any] | None = None,
) -> SignedDocument:
    optional = _Optional()
    optional.add("supersedes", supersedes)
    optional.add("extensions", dict(extensions) if extensions is not None else None)
    document = {
        "adds_version": VERSION,
        "kind": "provider_record",
        "record_id": record_id,
        "provider": _principal(provider_id, key),
        "sequence": sequence,
        "issued_at": issued_at,
        "expires_at": expires_at,
        "inventory": [i.as_json() for i in inventory],
        "endpoints": [e.as_json() for e in endpoints],
        **optional.members,
    }
    return _finish(document, key)


def build_head(
    *,
    key: Ed25519PrivateKey,
    issuer_id: str,
    head_id: str,
    sequence: int,
    manifest_cid: str,
    parents: Sequence[str],
    updated_at: int,
    extensions: Mapping[str, Any] | None = None,
) -> SignedDocument:
    optional = _Optional()
    optional.add("extensions", dict(extensions) if extensions is not None else None)
    document = {
        "adds_version": VERSION,
        "kind": "head",
        "head_id": head_id,
        "issuer": _principal(issuer_id, key),
        "sequence": sequence,
        "manifest_cid": manifest_cid,
        "parents": list(parents),
        "updated_at": updated_at,
        **optional.members,
    }
    return _finish(document, key)


def build_receipt(
    *,
    key: Ed25519PrivateKey,
    provider_id: str,
    receipt_id: str,
    issued_at: int,
    retention_until: int,
    commitment: Commitment,
    items: Sequence[InventoryItem],
    provider_record: str | None = None,
    availability_target: str | None = None,
    storage_class: str | None = None,
    regions: Sequence[str] | None = None,
    extensions: Mapping[str, Any] | None = None,
) -> SignedDocument:
    optional = _Optional()
    optional.add("provider_record", provider_record)
    terms = _Optional()
    terms.add("availability_target", availability_target)
    terms.add("storage_class", storage_class)
    terms.add("regions", list(regions) if regions is not None else None)
    optional.add("terms", terms.members or None)
    optional.add("extensions", dict(extensions) if extensions is not None else None)
    document = {
        "adds_version": VERSION,
        "kind": "receipt",
        "receipt_id": receipt_id,
        "provider": _principal(provider_id, key),
        "issued_at": issued_at,
        "retention_until": retention_until,
        "commitment": str(Commitment(commitment)),
        "items": [i.as_json() for i in items],
        **optional.members,
    }
    return _finish(document, key)
