"""Request and response bodies of bootstrap elevation, attestations and the pulse
(docs/elevation.md); the OpenAPI document is generated from these."""

from __future__ import annotations

import json
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from . import body_rules
from .json_types import JsonObject
from .models import (
    AuthorityView,
    LedgerEntry,
    Strict,
    VaultSecret,
    WalletRecord,
    WholeNumber,
)

# The identity is named by its canonical id: the signature covers agent_id exactly as sent, and
# the stored attestation names its subject by this id, so one spelling keeps it re-verifiable.
CANONICAL_UUID = r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
# Bounded so that one grant cannot mint an unbounded balance: 10,000.00 GBP, the same bound as a
# single fund request.
MAX_INITIAL_CREDITS = 1_000_000
DEFAULT_INITIAL_CREDITS = 1000
MAX_EVIDENCE_BYTES = 16_384


class SponsorStatement(Strict):
    """A sponsor's signed statement (``bootstrap-elevate/v1``) about one identity: the body of
    POST /v1/bootstrap/elevate, and of POST /v1/attestations, its manual fallback."""

    model_config = ConfigDict(
        json_schema_extra=body_rules.exactly_one("sponsor_identity_id", "sponsor_did")
    )

    agent_id: str = Field(
        pattern=CANONICAL_UUID,
        description="the identity the statement is about: its id, as a lower-case UUID",
    )
    sponsor_kid: str = Field(
        min_length=1, max_length=200, description="the sponsor's key label (`primary`)"
    )
    sponsor_signature: str = Field(
        max_length=128,
        description="standard base64 of the 64-byte Ed25519 signature (bootstrap-elevate/v1): "
        "agent_id, sponsor DID, sponsor_kid, claim, initial_credits (decimal)",
    )
    sponsor_identity_id: str | None = Field(
        default=None, max_length=64, description="the sponsor by id; exactly one of the two"
    )
    sponsor_did: str | None = Field(
        default=None, max_length=200, description="the sponsor by DID; exactly one of the two"
    )
    initial_credits: WholeNumber = Field(
        default=DEFAULT_INITIAL_CREDITS,
        ge=0,
        le=MAX_INITIAL_CREDITS,
        description="minor units of GBP (1 credit = 1) granted into the agent's wallet",
    )
    claim: str = Field(default="sponsorship", min_length=1, max_length=64)
    evidence: JsonObject | None = Field(
        default=None, description="any JSON object, kept with the attestation (at most 16 KiB)"
    )

    @model_validator(mode="after")
    def _one_sponsor(self) -> SponsorStatement:
        if (self.sponsor_identity_id is None) == (self.sponsor_did is None):
            raise ValueError("name the sponsor by exactly one of sponsor_identity_id, sponsor_did")
        if self.evidence is not None:
            size = len(json.dumps(self.evidence, separators=(",", ":")).encode("utf-8"))
            if size > MAX_EVIDENCE_BYTES:
                raise ValueError("evidence is over 16 KiB of JSON")
        return self

    @property
    def sponsor_ref(self) -> str:
        ref = self.sponsor_identity_id or self.sponsor_did
        assert ref is not None
        return ref


class AttestationRecord(BaseModel):
    id: str
    agent_id: str = Field(description="the identity the attestation is about")
    attester_did: str
    attester_identity_id: str | None
    signing_key_id: str
    public_key: str = Field(description="the attester's Ed25519 key that verified it")
    context: str = Field(description="the signing recipe: bootstrap-elevate/v1")
    claim: str
    initial_credits: int = Field(description="as signed (part of the statement)")
    evidence: JsonObject | None
    signature: str
    created_at: str


class AttestationPage(BaseModel):
    items: list[AttestationRecord] = Field(description="newest first")
    next_cursor: str | None = Field(description="pass as `cursor` for the next page; null: last")


class AttestationStored(AttestationRecord):
    replayed: bool = Field(description="true when this exact signed statement was already kept")


class SponsorView(BaseModel):
    identity_id: str
    did: str
    kid: str


class VaultNamespace(BaseModel):
    identity_id: str
    name: str = Field(description="`<agent_id>:config`")
    created: bool = Field(description="false when the project had already written it")
    secret: VaultSecret


class ElevationResult(BaseModel):
    agent_id: str
    did: str
    level: int
    sponsor_did: str
    elevated_at: str
    sponsor: SponsorView
    attestation: AttestationRecord
    ledger_entry: LedgerEntry | None = Field(description="null when initial_credits is 0")
    wallet: WalletRecord
    vault_namespace: VaultNamespace
    chronicle_entry_id: str
    authority: AuthorityView


PulseState = Literal["active", "quiet", "resting"]


class PulseLatest(BaseModel):
    memory: str | None
    chronicle: str | None
    runtime_seen: str | None
    runtime_thought: str | None
    thought: str | None
    ledger: str | None


class PulseCounts(BaseModel):
    memories: int
    chronicle: int
    thoughts: int
    ledger: int


class PulseThresholds(BaseModel):
    active_within_s: int
    quiet_within_s: int


class Pulse(BaseModel):
    identity_id: str
    did: str
    status: str
    state: PulseState
    last_activity_at: str | None
    born_at: str
    latest: PulseLatest
    last_24h: PulseCounts
    thresholds: PulseThresholds
    as_of: str
    note: str
