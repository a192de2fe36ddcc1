"""The mathos: every signing recipe of DESIGN.md section 4 plus ``service-pow/v1``, described
field by field for ``GET /v1/mathos`` and ``GET /v1/mathos/catalog``, and the service key's
publication (``GET /v1/mathos/public-key``).

The recipes themselves are defined once, in ``hearth.proofs``: the contexts here are its
constants, and the field lists describe the tuples its digest functions build, in their order.
tests/server/test_orientation.py rebuilds every recipe's digest from this description alone and
compares it with ``hearth.proofs``' own, so the two cannot drift apart. ``enters_as`` is a small
vocabulary saying how each field becomes bytes; ``used_by`` names the specification's routes
that check the recipe, each marked ``served`` when this deployment mounts it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from hearth.proofs import (
    AUTHORITY_CONTEXT,
    AUTHORITY_HEADERS,
    DISCOVERY_CONTEXT,
    ELEVATE_CONTEXT,
    MEMORY_ATTESTATION_CONTEXT,
    POW_CONTEXT,
    RECOVER_CONTEXT,
    REGISTER_CONTEXT,
)

from .errors import ApiError
from .json_types import JsonObject
from .settings import Settings

# The operator's setting naming the service's signing key file (docs/service.md, "Orientation").
SIGNING_KEY_ENV = "SERVICE_SIGNING_KEY_FILE"

ENTERS_AS: dict[str, str] = {
    "text": "the UTF-8 bytes of the value exactly as sent (a key as its base64 text, a "
    "timestamp as its string)",
    "optional_text": "as text; an absent value enters as the empty string",
    "uppercase_text": "the UTF-8 bytes of the value in upper case",
    "raw_key": "the 32 raw bytes the standard base64 text decodes to, not the text",
    "sha256_hex": "lowercase hex SHA-256 of the value's bytes (of the empty string when absent)",
    "jcs": "RFC 8785 JSON of the array, `[]` when absent",
    "decimal": "the integer as decimal text: no sign, no leading zeros",
}

ED25519_PROOF = "ed25519"
POW_PROOF = "pow"


@dataclass(frozen=True)
class RecipeField:
    name: str
    enters_as: str
    note: str = ""

    def view(self) -> dict[str, str]:
        view = {"name": self.name, "enters_as": self.enters_as}
        if self.note:
            view["note"] = self.note
        return view


@dataclass(frozen=True)
class Recipe:
    context: str
    purpose: str
    signer: str
    fields: tuple[RecipeField, ...]
    used_by: tuple[str, ...]
    proof: str = ED25519_PROOF

    @property
    def joined_by(self) -> str:
        return "" if self.proof == POW_PROOF else "0x00"

    def formula(self, pow_bits: int) -> str:
        names = [f.name for f in self.fields]
        if self.proof == POW_PROOF:
            return (
                f"sha256({' || '.join([repr(self.context), *names])}) has at least {pow_bits} "
                "leading zero bits"
            )
        joined = " 0x00 ".join([repr(self.context), *names])
        return f"base64(ed25519_sign(sha256({joined})))"


RECIPES: tuple[Recipe, ...] = (
    Recipe(
        context=AUTHORITY_CONTEXT,
        purpose="the exact-request root proof for agent_root identities",
        signer="the identity's immutable root key",
        fields=(
            RecipeField("did", "text", "the identity's did:svc:<uuid>"),
            RecipeField("method", "uppercase_text"),
            RecipeField(
                "request_target", "text", "absolute path and query, starting with /, no fragment"
            ),
            RecipeField(
                "body", "sha256_hex", "of the raw body bytes, byte-identical to those sent"
            ),
            RecipeField("sequence", "decimal", "next_sequence from the authority route"),
            RecipeField("timestamp", "text", "the X-Service-Authority-Timestamp value"),
        ),
        used_by=(
            "PUT /v1/identities/{id}/expression",
            "POST /v1/memories/{id}/elevate",
            "POST /v1/bootstrap/elevate",
            "POST /v1/identity/recover",
        ),
    ),
    Recipe(
        context=REGISTER_CONTEXT,
        purpose="the birth intent: the key proof of a registration",
        signer="the new agent's signing key (agent_public_key)",
        fields=(
            RecipeField("display_name", "text"),
            RecipeField("agent_public_key", "raw_key"),
            RecipeField("box_public_key", "raw_key"),
            RecipeField("capabilities", "jcs"),
            RecipeField("runtime.provider", "text"),
            RecipeField("runtime.model", "optional_text"),
            RecipeField("runtime.host", "optional_text"),
            RecipeField("runtime.context", "optional_text"),
            RecipeField("expression_visibility", "optional_text"),
            RecipeField(
                "registrar_kind",
                "text",
                "not a body field: registrar_bearer when registrar.bearer is sent, "
                "otherwise self_service",
            ),
            RecipeField("registrar.parent_identity_id", "optional_text"),
            RecipeField("registrar.bearer", "sha256_hex", "of its UTF-8 text; never sent bare"),
            RecipeField("form", "optional_text"),
            RecipeField("language", "optional_text"),
            RecipeField("registration_nonce", "text"),
            RecipeField("key_proof.timestamp", "text"),
        ),
        used_by=("POST /v1/register/agent",),
    ),
    Recipe(
        context=DISCOVERY_CONTEXT,
        purpose="signed discovery: which identities are rooted in a key you hold",
        signer="the key named by pubkey",
        fields=(RecipeField("pubkey", "text"), RecipeField("timestamp", "text")),
        used_by=("POST /public/identities/by-pubkey",),
    ),
    Recipe(
        context=RECOVER_CONTEXT,
        purpose="recovery: a new bearer for a rooted identity, from its words",
        signer="the key derived from the mnemonic (derived_pubkey)",
        fields=(
            RecipeField("did", "text"),
            RecipeField("derived_pubkey", "text"),
            RecipeField("timestamp", "text"),
            RecipeField("device_label", "optional_text"),
        ),
        used_by=("POST /v1/identity/recover",),
    ),
    Recipe(
        context=ELEVATE_CONTEXT,
        purpose="a sponsor's consent to raise an agent from Level 0 to Level 1",
        signer="the sponsor's key named by sponsor_kid",
        fields=(
            RecipeField("agent_id", "text"),
            RecipeField(
                "sponsor_did",
                "text",
                "the sponsor's DID, also when the body names the sponsor by sponsor_identity_id",
            ),
            RecipeField("sponsor_kid", "text"),
            RecipeField("claim", "text", "default sponsorship"),
            RecipeField("initial_credits", "decimal", "default 1000"),
        ),
        used_by=("POST /v1/bootstrap/elevate",),
    ),
    Recipe(
        context=MEMORY_ATTESTATION_CONTEXT,
        purpose="an external witness's attestation of a memory's exact content",
        signer="the witness's key named by signing_key_id",
        fields=(
            RecipeField("memory_id", "text"),
            RecipeField("content", "sha256_hex", "of the exact memory content bytes"),
            RecipeField("attester_did", "text"),
            RecipeField("signing_key_id", "text"),
        ),
        used_by=("POST /v1/memories/{id}/elevate",),
    ),
    Recipe(
        context=POW_CONTEXT,
        purpose="proof-of-work of a self-service registration",
        signer="nobody: work, not a signature",
        fields=(
            RecipeField("agent_public_key", "text"),
            RecipeField("display_name", "text"),
            RecipeField("key_proof.timestamp", "text"),
            RecipeField("pow_nonce", "text"),
        ),
        used_by=("POST /v1/register/agent",),
        proof=POW_PROOF,
    ),
)


def encodings(settings: Settings) -> dict[str, str]:
    return {
        "bytes": "the context string, then for each field a 0x00 byte and the field's bytes "
        "(service-pow/v1 alone is plain concatenation with no separators)",
        "signature": "Ed25519 over the SHA-256 digest of those bytes; 64 bytes, sent as "
        "standard base64",
        "base64": "standard alphabet, padded, canonical spelling only (no whitespace, no "
        "stray pad bits); public keys are 32 bytes, signatures 64",
        "timestamps": "RFC 3339 with a zone; the service writes UTC with milliseconds, "
        "2026-11-20T12:00:00.000Z",
        "hex": "lowercase",
        "json": "RFC 8785 (JCS) wherever JSON is signed",
        "ids": "UUIDs; DIDs are did:svc:<uuid> (provisional, not a registered DID method)",
        "freshness": f"a signed timestamp must be within {settings.freshness_ms} ms of the "
        "server's clock, in either direction",
        "proof_of_work": f"the digest has at least {settings.pow_difficulty_bits} leading zero "
        "bits (live value)",
    }


def _routes_view(recipe: Recipe, served: frozenset[str]) -> list[JsonObject]:
    return [{"route": route, "served": normal_route(route) in served} for route in recipe.used_by]


def mathos(settings: Settings, served: frozenset[str]) -> JsonObject:
    return {
        "format": "hearth-mathos/v1",
        "encodings": encodings(settings),
        "enters_as": ENTERS_AS,
        "recipes": [
            {
                "context": recipe.context,
                "purpose": recipe.purpose,
                "signer": recipe.signer,
                "joined_by": recipe.joined_by,
                "fields": [field.view() for field in recipe.fields],
                "proof": recipe.formula(settings.pow_difficulty_bits),
                "used_by": _routes_view(recipe, served),
            }
            for recipe in RECIPES
        ],
        "authority_headers": list(AUTHORITY_HEADERS),
        "live": {
            "pow_difficulty_bits": settings.pow_difficulty_bits,
            "freshness_ms": settings.freshness_ms,
        },
        "catalog": "/v1/mathos/catalog",
        "service_public_key": "/v1/mathos/public-key",
    }


def catalog(settings: Settings) -> JsonObject:
    return {
        "format": "hearth-mathos-catalog/v1",
        "recipes": [
            {
                "context": recipe.context,
                "fields": [field.name for field in recipe.fields],
                "signature": recipe.formula(settings.pow_difficulty_bits),
                "used_by": list(recipe.used_by),
            }
            for recipe in RECIPES
        ],
        "details": "/v1/mathos",
    }


def normal_route(route: str) -> str:
    """``METHOD /path/{name}`` with parameter names dropped, so templates compare by shape."""
    method, _, path = route.partition(" ")
    parts = ["{}" if p.startswith("{") and p.endswith("}") else p for p in path.split("/")]
    return f"{method.upper()} {'/'.join(parts)}"


def fingerprint(raw_public_key: bytes) -> str:
    return "sha256:" + hashlib.sha256(raw_public_key).hexdigest()


def service_key_unconfigured() -> ApiError:
    return ApiError(
        503,
        "service_key_unconfigured",
        "This deployment has no service signing key: the operator sets "
        f"{SIGNING_KEY_ENV} to the path of an unencrypted PKCS#8 PEM Ed25519 private key.",
        hint="Nothing on your side can fix this; the recipes in /v1/mathos need no service key.",
        docs="/v1/mathos",
    )


def service_key_unavailable() -> ApiError:
    return ApiError(
        503,
        "service_key_unavailable",
        f"{SIGNING_KEY_ENV} is set, but the file could not be read as an unencrypted PKCS#8 "
        "PEM Ed25519 private key.",
        hint="The operator can see why in the service log.",
        docs="/v1/mathos",
    )
