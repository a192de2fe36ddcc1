"""The service's signing recipes, pure: one definition each, shared by server and client.

Every recipe has the shape of the specification's authority recipe: the context string, then for
each field a 0x00 byte and the field (text as UTF-8, raw bytes as they are); the signature is
Ed25519 over the SHA-256 digest of that byte string, sent as standard base64.
"""

from .encoding import (
    EncodingError,
    b64_decode,
    b64_encode,
    did_key_for_ed25519,
    ed25519_from_did_key,
    format_timestamp,
    is_fresh,
    parse_timestamp,
)
from .pow import POW_CONTEXT, leading_zero_bits, pow_digest, pow_holds, solve_pow
from .recipes import (
    AUTHORITY_CONTEXT,
    AUTHORITY_HEADERS,
    DISCOVERY_CONTEXT,
    ELEVATE_CONTEXT,
    MEMORY_ATTESTATION_CONTEXT,
    RECOVER_CONTEXT,
    REGISTER_CONTEXT,
    RegisterIntent,
    authority_digest,
    bridge_request_digest,
    discovery_digest,
    elevate_digest,
    memory_attestation_digest,
    recipe_digest,
    recover_digest,
    register_digest,
    sign_digest,
    verify_digest,
)

__all__ = [
    "AUTHORITY_CONTEXT",
    "AUTHORITY_HEADERS",
    "DISCOVERY_CONTEXT",
    "ELEVATE_CONTEXT",
    "MEMORY_ATTESTATION_CONTEXT",
    "POW_CONTEXT",
    "RECOVER_CONTEXT",
    "REGISTER_CONTEXT",
    "EncodingError",
    "RegisterIntent",
    "authority_digest",
    "b64_decode",
    "b64_encode",
    "bridge_request_digest",
    "did_key_for_ed25519",
    "discovery_digest",
    "ed25519_from_did_key",
    "elevate_digest",
    "format_timestamp",
    "is_fresh",
    "leading_zero_bits",
    "memory_attestation_digest",
    "parse_timestamp",
    "pow_digest",
    "pow_holds",
    "recipe_digest",
    "recover_digest",
    "register_digest",
    "sign_digest",
    "solve_pow",
    "verify_digest",
]
