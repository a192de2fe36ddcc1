"""Request and response bodies (pydantic): the OpenAPI document is generated from these."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import (
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    model_validator,
)

from hearth.proofs.encoding import b64_pattern

from . import body_rules
from .canon import (
    WRITABLE_CHRONICLE_KINDS,
    ChronicleKind,
    ClaimedChannel,
    Form,
    MemoryChannel,
    Visibility,
)
from .json_types import JsonObject
from .memory_tiers import INITIAL_TIER, TIERS, ElevatedTier, Tier

Name = Field(min_length=1, max_length=200)


class Strict(BaseModel):
    # Unknown fields are refused: a misspelt field would otherwise be silently ignored.
    model_config = ConfigDict(extra="forbid", strict=True)


def _whole(value: Any) -> Any:
    # JSON has one kind of number: 5.0 is the integer 5 (JSON Schema's `integer` says so too),
    # which a strict model would refuse. Beyond 2**53 a float is not exact: it stays a float.
    if isinstance(value, float) and value.is_integer() and abs(value) <= 2**53:
        return int(value)
    return value


# An integer of a request body: a JSON number with no fraction, however it is written.
WholeNumber = Annotated[int, BeforeValidator(_whole)]


class ErrorBody(BaseModel):
    error: str
    message: str
    details: Any = None
    hint: str | None = None
    docs: str | None = None
    next_actions: list[str] | None = None
    request_id: str | None = None


class RuntimeInfo(Strict):
    provider: str = Field(min_length=1, max_length=100)
    model: str | None = Field(default=None, max_length=200)
    host: str | None = Field(default=None, max_length=200)
    context: str | None = Field(default=None, max_length=200)


class KeyProof(Strict):
    timestamp: str = Field(max_length=64)
    signature: str = Field(max_length=128, description="standard base64 of 64 bytes")


class Registrar(Strict):
    bearer: str | None = Field(default=None, max_length=128)
    parent_identity_id: str | None = Field(default=None, max_length=64)


class RegisterAgentRequest(Strict):
    display_name: str = Name
    agent_public_key: str = Field(max_length=64, description="standard base64, 32 bytes")
    box_public_key: str = Field(max_length=64, description="standard base64, 32 bytes")
    runtime: RuntimeInfo
    key_proof: KeyProof
    pow_nonce: str | None = Field(default=None, max_length=128)
    registration_nonce: str = Field(min_length=16, max_length=128)
    capabilities: list[str] | None = Field(default=None, max_length=64)
    expression_visibility: Visibility | None = None
    form: Form | None = None
    language: str | None = Field(default=None, max_length=35, pattern=r"^[A-Za-z0-9-]+$")
    registrar: Registrar | None = None


class ProjectKeyOnce(BaseModel):
    id: str
    api_key: str = Field(description="the project bearer; shown once, never again")
    key_id: str


class AgentSummary(BaseModel):
    id: str
    did: str
    display_name: str


class WalletView(BaseModel):
    id: str
    name: str
    balance: int
    currency: str


class AuthorityView(BaseModel):
    identity_id: str
    did: str
    mode: Literal["agent_root", "legacy_bearer"]
    next_sequence: int
    root_public_key: str | None = None
    kid: str | None = None


class IdentityProfile(BaseModel):
    """GET /v1/identities/{id}/profile: the identity's own fields (an export carries them)."""

    identity_id: str
    did: str
    name: str
    status: str
    form: str
    language: str | None = None
    capabilities: list[str]
    level: int
    trust_score: float
    sponsor_did: str | None = None
    elevated_at: str | None = None
    expression_visibility: str
    runtime: dict[str, Any] | None = None
    metadata: dict[str, Any]
    parent_identity_id: str | None = None
    origin: str
    kid: str
    key_created_at: str | None = None
    created_at: str


class RegisterAgentResponse(BaseModel):
    project: ProjectKeyOnce
    agent: AgentSummary
    wallet: WalletView | None = None
    authority: AuthorityView
    welcome: str


class KeyCreate(Strict):
    name: str = Name


class KeyRecord(BaseModel):
    id: str
    name: str
    prefix: str
    created_at: str


class KeyCreated(KeyRecord):
    api_key: str = Field(description="the full bearer; shown once")


class KeyList(BaseModel):
    keys: list[KeyRecord]


class Subagent(Strict):
    name: str = Field(max_length=200)
    sigil: str = Field(max_length=64)
    facet: str = Field(max_length=2000)


class Expression(Strict):
    # `register` is a method of every pydantic model's metaclass, hence the alias.
    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True)

    register_: str = Field(default="", max_length=20_000, alias="register")
    walls: list[str] = Field(default_factory=list, max_length=64)
    subagents: list[Subagent] = Field(default_factory=list, max_length=64)
    wake_text: str = Field(default="", max_length=20_000)


class ExpressionView(BaseModel):
    """The expression as answered: open to decoration such as ``_welcomed``."""

    model_config = ConfigDict(populate_by_name=True)

    register_: str = Field(alias="register")
    walls: list[str]
    subagents: list[dict[str, str]]
    wake_text: str


class DiscoveryRequest(Strict):
    pubkey: str = Field(max_length=64)
    timestamp: str = Field(max_length=64)
    signature: str = Field(max_length=128)


class Candidate(BaseModel):
    did: str
    name: str
    identity_id: str
    kid: str
    key_label: str
    key_created_at: str | None


class DiscoveryResponse(BaseModel):
    agents: list[Candidate]


class RecoverRequest(Strict):
    did: str = Field(max_length=64)
    derived_pubkey: str = Field(max_length=64)
    timestamp: str = Field(max_length=64)
    signature: str = Field(max_length=128)
    device_label: str = Field(default="", max_length=200)


class RecoveredAgent(BaseModel):
    id: str
    did: str
    name: str


class RecoverResponse(BaseModel):
    agent: RecoveredAgent
    project: ProjectKeyOnce


# A KDF descriptor is stored and shown verbatim: no control characters, and none of the invisible
# ones that reorder or hide text (zero-width, bidirectional controls, line separators, BOM).
KDF_PATTERN = r"^[^\u0000-\u001f\u007f-\u009f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]+$"


class BackupCreate(Strict):
    agent_id: str = Field(max_length=64)
    # Checked by the service (422 invalid_blob, invalid_key_derivation); the patterns say how.
    blob_base64: str = Field(
        min_length=4, max_length=262_144, json_schema_extra={"pattern": b64_pattern()}
    )
    key_derivation: str = Field(
        min_length=1, max_length=512, json_schema_extra={"pattern": KDF_PATTERN}
    )
    label: str | None = Field(default=None, max_length=200)


class BackupRecord(BaseModel):
    id: str
    agent_id: str
    blob_base64: str
    key_derivation: str
    label: str | None
    created_at: str


class BootstrapRequest(Strict):
    name: str = Name
    capabilities: list[str] | None = Field(default=None, max_length=64)
    purpose: str | None = Field(default=None, max_length=20_000)
    expression: Expression | None = None
    metadata: JsonObject | None = None


class BootstrapAgent(BaseModel):
    id: str
    did: str
    name: str
    capabilities: list[str]
    trust_score: float
    status: str
    level: int


class Keypair(BaseModel):
    public_key: str
    private_key: str = Field(description="returned exactly once; never stored by the service")
    kid: str


class BootstrapResponse(BaseModel):
    agent: BootstrapAgent
    keypair: Keypair
    wallet: WalletView | None
    bearer: str = Field(description="a new project bearer for this agent; shown once")
    welcome: str
    authority: AuthorityView


class BootstrapStatus(BaseModel):
    agent_id: str
    did: str
    exists: bool
    level: int
    trust_score: float
    sponsor_did: str | None
    elevated_at: str | None
    status: str


# --- wallets and vault --------------------------------------------------------------------------


class WalletRecord(WalletView):
    identity_id: str | None = Field(description="the identity the wallet belongs to, if any")
    created_at: str


class WalletList(BaseModel):
    wallets: list[WalletRecord]


class LedgerEntry(BaseModel):
    id: str
    amount: int = Field(description="signed minor units: positive in, negative out")
    reason: str
    created_at: str


class WalletDetail(WalletRecord):
    recent_entries: list[LedgerEntry] = Field(description="the newest ledger entries first")
    ledger: str = Field(description="where the rest of the ledger is")


class LedgerPage(BaseModel):
    wallet_id: str
    items: list[LedgerEntry] = Field(description="newest first")
    next_cursor: str | None = Field(description="pass as `cursor` for the next page; null: last")


class FundRequest(Strict):
    amount: WholeNumber = Field(ge=1, le=1_000_000, description="minor units of GBP (1 credit = 1)")
    source_wallet_id: str = Field(
        max_length=64, description="another wallet of this project, debited by the amount"
    )


class TransferRecord(BaseModel):
    id: str
    source_wallet_id: str
    target_wallet_id: str
    amount: int
    currency: str
    created_at: str


class FundResult(BaseModel):
    transfer: TransferRecord
    wallet: WalletRecord = Field(description="the funded wallet, as it is now")
    replayed: bool = Field(description="true when the Idempotency-Key named an earlier transfer")


class VaultPut(Strict):
    value: str = Field(
        min_length=1,
        max_length=65_536,
        description="the secret; stored sealed and never returned by any route",
    )
    description: str | None = Field(default=None, max_length=500)


class VaultSecret(BaseModel):
    """A vault secret's metadata: the value is never part of any response."""

    name: str
    identity_id: str | None = Field(description="set for names in an identity's namespace")
    description: str | None
    version: int = Field(description="1 when created, one more on each replacement")
    sealing: str = Field(description="the scheme the value is sealed under at rest")
    created_at: str
    updated_at: str


class VaultList(BaseModel):
    items: list[VaultSecret]
    next_cursor: str | None = Field(description="pass as `cursor` for the next page; null: last")


# --- ADDS provider node -------------------------------------------------------------------------

# Exactly the canonical CIDs: CIDv1, raw codec, sha2-256, lower-case base32 (hearth.adds.cid).
CID_PATTERN = r"^bafkrei[a-h][a-z2-7]{50}[aeimquy4]$"
DocumentKind = Literal["manifest", "grant", "provider_record", "head", "receipt"]


class BlockStored(BaseModel):
    cid: str
    size: int


class BlockItem(BaseModel):
    cid: str
    size: int


class BlockPage(BaseModel):
    items: list[BlockItem]
    next_cursor: str | None = Field(description="pass as `cursor` for the next page; null: last")


class DocumentStored(BaseModel):
    cid: str
    kind: DocumentKind


class DocumentItem(BaseModel):
    cid: str
    kind: DocumentKind
    size: int = Field(description="bytes of the canonical (RFC 8785) form")
    created_at: str


class DocumentPage(BaseModel):
    items: list[DocumentItem]
    next_cursor: str | None


class HeadSummary(BaseModel):
    cid: str
    sequence: int
    manifest_cid: str
    parents: list[str]
    updated_at: int


class HeadResolutionView(BaseModel):
    issuer_id: str = Field(description="the id the head claims; ids are not bound to keys here")
    issuer_key: str = Field(description="the issuer's Ed25519 key, base64url")
    head_id: str
    sequence: int
    current: HeadSummary | None = Field(description="null when the history is forked")
    forked: bool
    candidates: list[HeadSummary]
    history_forks: list[int]
    missing_parents: list[str]


class HoldingCount(BaseModel):
    count: int
    bytes: int
    href: str = Field(description="the first page of the listing")


class DocumentHoldings(HoldingCount):
    by_kind: dict[str, HoldingCount]


class AddsInventory(BaseModel):
    blocks: HoldingCount
    documents: DocumentHoldings
    provider_record: str = Field(description="where the service's signed provider record is")


class ReceiptRequest(Strict):
    items: list[Annotated[str, Field(pattern=CID_PATTERN)]] = Field(min_length=1, max_length=1000)
    commitment: Literal["store", "store_and_serve"]


# --- memory and chronicle (docs/service.md, "Memory and chronicle") -----------------------------


# An ``as_of`` query value: RFC 3339 with a zone. Checked before pydantic parses it, because
# pydantic would take a bare number ("0.5") for seconds since the epoch.
_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([Zz]|[+-]\d{2}:\d{2})$")


def _rfc3339(value: object) -> object:
    if not isinstance(value, str) or not _RFC3339.match(value):
        raise ValueError("a time in RFC 3339 with a zone, such as 2026-11-27T12:00:00Z")
    return value


AsOf = Annotated[AwareDatetime, BeforeValidator(_rfc3339)]

UUID_PATTERN = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"


class MemoryCreate(Strict):
    model_config = ConfigDict(json_schema_extra=body_rules.agree("type", "tier", TIERS))

    content: str = Field(min_length=1, max_length=65_536)
    type: Tier | None = Field(default=None, description="the tier; `episodic` when absent")
    tier: Tier | None = Field(default=None, description="the same as `type`; they must agree")
    agent_id: str | None = Field(
        default=None,
        max_length=64,
        description="identity UUID or DID; honoured only for an active identity of this "
        "project, otherwise the memory is project-level",
    )
    key: str | None = Field(default=None, min_length=1, max_length=200)
    supersedes: str | None = Field(
        default=None,
        pattern=UUID_PATTERN,
        description="the id of the memory this one replaces: the head of its chain, bound as "
        "this one is; it is kept, superseded (docs/memory.md, History)",
    )
    untrusted: bool = Field(
        default=False,
        description="the content came from outside the project (a message, a page): kept out "
        "of the wake and the default listing until confirmed",
    )
    channel: ClaimedChannel = Field(
        default="api",
        description="how the caller wrote it, kept in provenance: `api` (default), or `mcp` for "
        "a store made for an MCP host (`hearth mcp`); `runtime` and `import` are the service's "
        "own to record",
    )

    @model_validator(mode="after")
    def _one_tier(self) -> MemoryCreate:
        if self.type is not None and self.tier is not None and self.type != self.tier:
            raise ValueError("`type` and `tier` name the tier twice, differently")
        return self

    @property
    def requested_tier(self) -> str:
        return self.type or self.tier or INITIAL_TIER


class ExpressionPatch(Strict):
    """Additive changes to the declared expression; applied in elevation order."""

    model_config = ConfigDict(
        json_schema_extra={
            "anyOf": [
                body_rules.filled("register_append", "string"),
                body_rules.filled("walls_add", "array"),
                body_rules.filled("subagents_add", "array"),
                body_rules.filled("wake_text_append", "string"),
            ]
        }
    )

    register_append: str | None = Field(default=None, max_length=20_000)
    walls_add: list[str] | None = Field(default=None, max_length=64)
    subagents_add: list[Subagent] | None = Field(default=None, max_length=64)
    wake_text_append: str | None = Field(default=None, max_length=20_000)

    @model_validator(mode="after")
    def _not_empty(self) -> ExpressionPatch:
        parts = (self.register_append, self.walls_add, self.subagents_add, self.wake_text_append)
        if not any(parts):
            raise ValueError("an expression_patch changes at least one thing")
        return self


class Attestation(Strict):
    attester_did: str = Field(min_length=1, max_length=200)
    signing_key_id: str = Field(min_length=1, max_length=200)
    signature: str = Field(max_length=128, description="standard base64 of 64 bytes")
    public_key: str | None = Field(
        default=None,
        max_length=64,
        description="the witness's Ed25519 key (standard base64); needed unless the DID "
        "names it (did:key) or the service knows it (did:svc)",
    )


class ElevateRequest(Strict):
    tier: ElevatedTier
    expression_patch: ExpressionPatch | None = None
    attestations: list[Attestation] | None = Field(default=None, max_length=16)


class AttestationView(BaseModel):
    attester_did: str
    signing_key_id: str
    public_key: str
    signature: str
    created_at: str


class MemoryView(BaseModel):
    id: str
    agent_id: str | None = Field(description="the identity it is bound to; null: project-level")
    tier: Tier
    key: str | None
    content: str
    created_at: str
    elevated_at: str | None
    expression_patch: JsonObject | None
    weight: float = Field(description="decay weight now: 1 for elevated tiers")
    in_wake: bool = Field(description="whether the wake's selection still considers it")
    attestations: list[AttestationView]
    supersedes: str | None = Field(description="the version this one replaced")
    superseded_by: str | None = Field(description="the version that replaced this one")
    superseded_at: str | None = Field(description="when it stopped being the head of its chain")
    deleted_at: str | None = Field(description="set on a tombstone: its content is erased")
    provenance: MemoryProvenance
    untrusted: bool = Field(description="from outside the project and not yet confirmed")
    confirmed_at: str | None = Field(description="when a bearer call confirmed untrusted content")


class MemoryProvenance(BaseModel):
    """Who wrote the memory and how (docs/memory.md, "Provenance")."""

    channel: MemoryChannel
    api_key_id: str | None = Field(description="the project key of the bearer call")
    runtime_id: str | None = Field(description="the runtime whose think cycle stored it")
    inbox_message_id: str | None = Field(
        description="the inbox message a runtime stored as this memory (untrusted content)"
    )
    signed_by: str | None = Field(description="the identity key (kid) whose root proof signed it")


class MemoryStored(MemoryView):
    binding: Literal["identity", "project"]


class MemoryPage(BaseModel):
    items: list[MemoryView]
    next_cursor: str | None = Field(description="pass as `cursor` for the next page; null: last")


class MemorySearchHit(BaseModel):
    memory: MemoryView
    score: float = Field(
        description="text relevance times the tier's boost and an episodic memory's recency "
        "factor (docs/memory.md); with semantic search on, the reciprocal-rank fusion of the "
        "full-text and meaning rankings; comparable within one search only"
    )
    all_terms: bool = Field(
        description="the memory holds every term of the query: such hits always come first"
    )
    similarity: float | None = Field(
        default=None,
        description="the cosine of the memory's and the query's embeddings when semantic search "
        'is on and the memory is among the nearest (docs/memory.md, "Semantic search"); '
        "else null",
    )
    snippet: str = Field(description="the content around the first match, or its beginning")


class MemorySearchPage(BaseModel):
    items: list[MemorySearchHit]
    next_cursor: str | None = Field(description="pass as `cursor` for the next page; null: last")


class MemoryHistory(BaseModel):
    """A memory's chain of versions, oldest first; a deleted version is its tombstone."""

    items: list[MemoryView]


class ChronicleEntry(BaseModel):
    id: str
    kind: ChronicleKind
    agent_id: str | None
    text: str
    details: JsonObject | None
    created_at: str


class ChronicleCreate(Strict):
    kind: ChronicleKind = Field(
        description="any kind but those the service alone writes (refusal, seal, note: "
        "422 chronicle_kind_reserved)",
        # The document offers the writable kinds only; the service's own are read as kinds
        # and refused by name, so the caller learns why.
        json_schema_extra={"enum": list(WRITABLE_CHRONICLE_KINDS)},
    )
    text: str = Field(min_length=1, max_length=4000)
    agent_id: str | None = Field(
        default=None,
        max_length=64,
        description="the identity (UUID or DID) the entry is about; null: the project",
    )
    details: JsonObject | None = Field(
        default=None,
        description="an object of the caller's; `channel` and `api_key_id` are set by the "
        "service (who wrote it)",
    )
    channel: ClaimedChannel = Field(
        default="api", description="how the caller wrote it: `api` (default) or `mcp`"
    )


class ChroniclePage(BaseModel):
    items: list[ChronicleEntry]
    next_cursor: str | None = Field(description="pass as `cursor` for the next page; null: last")


class ShapedBy(BaseModel):
    memory_id: str
    tier: ElevatedTier
    key: str | None
    elevated_at: str | None
    expression_patch: JsonObject | None


class ExpressionState(ExpressionView):
    """The declared expression, and what elevated memories made of it."""

    effective_expression: ExpressionView
    shaped_by: list[ShapedBy]
