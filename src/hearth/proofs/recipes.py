"""The signing recipes (DESIGN.md section 4), each defined once."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import rfc8785
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from .encoding import EncodingError, b64_decode, b64_encode

AUTHORITY_CONTEXT = "identity-authority/v1"
REGISTER_CONTEXT = "register-agent/v2"
DISCOVERY_CONTEXT = "identity-discovery/v1"
RECOVER_CONTEXT = "identity-recover/v1"
ELEVATE_CONTEXT = "bootstrap-elevate/v1"
MEMORY_ATTESTATION_CONTEXT = "memory-attestation/v1"
THOUGHT_WRITE_CONTEXT = "strand-thought-write/v1"

AUTHORITY_HEADERS = (
    "X-Service-Authority-Sequence",
    "X-Service-Authority-Timestamp",
    "X-Service-Authority-Signature",
)

Field = str | bytes


def recipe_bytes(context: str, fields: Iterable[Field]) -> bytes:
    parts = [context.encode("utf-8")]
    for field in fields:
        parts.append(b"\x00")
        parts.append(field if isinstance(field, bytes) else field.encode("utf-8"))
    return b"".join(parts)


def recipe_digest(context: str, fields: Iterable[Field]) -> bytes:
    return hashlib.sha256(recipe_bytes(context, fields)).digest()


def sign_digest(key: Ed25519PrivateKey, digest: bytes) -> str:
    return b64_encode(key.sign(digest))


def verify_digest(public_key: bytes, signature: str, digest: bytes) -> bool:
    """True when ``signature`` (standard base64 of 64 bytes) verifies; never raises."""
    try:
        raw = b64_decode(signature, length=64, what="signature")
        Ed25519PublicKey.from_public_bytes(public_key).verify(raw, digest)
    except (EncodingError, InvalidSignature, ValueError):
        return False
    return True


def authority_digest(
    did: str, method: str, target: str, body: bytes, *, sequence: int, timestamp: str
) -> bytes:
    """identity-authority/v1: the exact request, bound to one sequence and one moment."""
    return recipe_digest(
        AUTHORITY_CONTEXT,
        (
            did,
            method.upper(),
            target,
            hashlib.sha256(body).hexdigest(),
            str(sequence),
            timestamp,
        ),
    )


@dataclass(frozen=True)
class RegisterIntent:
    """The register-agent/v2 birth intent; absent optional strings enter as empty."""

    display_name: str
    signing_key: bytes
    box_key: bytes
    timestamp: str
    registration_nonce: str
    capabilities: Sequence[str] | None = None
    runtime: Mapping[str, str | None] | None = None
    expression_visibility: str | None = None
    registrar_kind: str = "self_service"
    parent_identity_id: str | None = None
    registrar_bearer: str | None = None
    form: str | None = None
    language: str | None = None

    def fields(self) -> tuple[Field, ...]:
        runtime = self.runtime or {}
        capabilities = rfc8785.dumps(list(self.capabilities or []))
        bearer_hash = hashlib.sha256((self.registrar_bearer or "").encode("utf-8")).hexdigest()
        return (
            self.display_name,
            self.signing_key,
            self.box_key,
            capabilities,
            runtime.get("provider") or "",
            runtime.get("model") or "",
            runtime.get("host") or "",
            runtime.get("context") or "",
            self.expression_visibility or "",
            self.registrar_kind,
            self.parent_identity_id or "",
            bearer_hash,
            self.form or "",
            self.language or "",
            self.registration_nonce,
            self.timestamp,
        )


def register_digest(intent: RegisterIntent) -> bytes:
    return recipe_digest(REGISTER_CONTEXT, intent.fields())


def discovery_digest(pubkey: str, timestamp: str) -> bytes:
    return recipe_digest(DISCOVERY_CONTEXT, (pubkey, timestamp))


def recover_digest(did: str, derived_pubkey: str, timestamp: str, device_label: str) -> bytes:
    return recipe_digest(RECOVER_CONTEXT, (did, derived_pubkey, timestamp, device_label))


def elevate_digest(
    agent_id: str, sponsor_did: str, sponsor_kid: str, claim: str, initial_credits: int
) -> bytes:
    return recipe_digest(
        ELEVATE_CONTEXT, (agent_id, sponsor_did, sponsor_kid, claim, str(initial_credits))
    )


def memory_attestation_digest(
    memory_id: str, content: bytes, attester_did: str, signing_key_id: str
) -> bytes:
    return recipe_digest(
        MEMORY_ATTESTATION_CONTEXT,
        (memory_id, hashlib.sha256(content).hexdigest(), attester_did, signing_key_id),
    )


def thought_write_digest(
    strand_id: str, seq: int, nonce: bytes, ciphertext: bytes, signing_key_id: str
) -> bytes:
    """strand-thought-write/v1: a thought write, over exactly the bytes it stores.

    Fields: strand id, seq as decimal text, signing key id, the nonce as standard base64 (12
    bytes, so a fixed-width text) and the lowercase hex SHA-256 of the ciphertext. The
    ciphertext enters as its hash, as a request body does in the authority recipe: raw bytes
    may hold 0x00, which would blur the field boundaries. The signature proves who wrote these
    bytes at this position; it says nothing about whether they were encrypted.
    """
    return recipe_digest(
        THOUGHT_WRITE_CONTEXT,
        (
            strand_id,
            str(seq),
            signing_key_id,
            b64_encode(nonce),
            hashlib.sha256(ciphertext).hexdigest(),
        ),
    )


def bridge_request_digest(
    request_id: str, op: str, payload_b64: str, nonce_b64: str, context: Mapping[str, object]
) -> bytes:
    """Bridge request bytes: SHA-256 over the fields joined by 0x00, context as RFC 8785 JSON."""
    canonical_context = rfc8785.dumps(json.loads(json.dumps(dict(context))))
    data = b"\x00".join(
        (
            request_id.encode("utf-8"),
            op.encode("utf-8"),
            payload_b64.encode("utf-8"),
            nonce_b64.encode("utf-8"),
            canonical_context,
        )
    )
    return hashlib.sha256(data).digest()
