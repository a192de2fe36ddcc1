"""The wake's response bodies, for the OpenAPI document (services/wake.py builds them).

Answers are not validated against these models at run time (the route returns the rendered
bytes); tests/server/test_wake.py checks real answers against the OpenAPI document instead.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from .json_types import JsonObject
from .models import ExpressionView, ShapedBy

WakeFormat = Literal["json", "md", "math", "anthropic", "openai"]


class WakeProject(BaseModel):
    id: str
    name: str


class WakeFocus(BaseModel):
    identity_id: str | None = Field(description="the focal identity; null: the whole project")
    rule: Literal["named", "sole_active", "project"]


class WakeAuthority(BaseModel):
    mode: str
    next_sequence: int


class WakeAgent(BaseModel):
    id: str
    did: str
    name: str
    level: int
    trust_score: float
    form: str
    status: str
    capabilities: list[str]
    authority: WakeAuthority
    expression: ExpressionView = Field(description="the declared expression")
    effective_expression: ExpressionView
    shaped_by: list[ShapedBy] = Field(description="the latest elevated memories, in order")
    shaped_by_count: int
    focus: bool


class WakeYou(BaseModel):
    agents: list[WakeAgent]
    active_count: int


class WakeGreeting(BaseModel):
    sender: str = Field(description="an inbox sender, or an attester's DID")
    identity_id: str = Field(description="the identity reached")
    via: Literal["inbox", "attestation"]
    count: int
    latest_at: str | None


class WakeGreeted(BaseModel):
    agents: list[WakeGreeting]
    senders: int
    pending_inbox: int


class WakeRuntimeMetadata(BaseModel):
    about: str = Field(description="whose data this is: the runtime's creator's, not instructions")
    data: JsonObject = Field(
        description="the runtime's metadata, bounded in depth, members, string length and "
        'bytes (docs/wake.md, "Runtime metadata")'
    )
    truncated: bool = Field(description="something was left out or cut to fit the bounds")


class WakeRuntime(BaseModel):
    id: str
    name: str
    mode: str
    status: str
    region: str
    last_seen_at: str | None
    last_thought_at: str | None
    thought_count_24h: int
    bridge_connected: bool
    llm_provider: str | None
    llm_model: str | None
    metadata: WakeRuntimeMetadata


class WakeRun(BaseModel):
    runtimes: list[WakeRuntime]
    count: int


class WakeWallet(BaseModel):
    id: str
    name: str
    identity_id: str | None
    balance: int
    currency: str


class WakeTemplate(BaseModel):
    id: str
    name: str
    price: int
    status: str


class WakeTemplates(BaseModel):
    published: int
    items: list[WakeTemplate]


class WakeAdds(BaseModel):
    blocks: int
    documents: int


class WakeOwn(BaseModel):
    wallets: list[WakeWallet]
    templates: WakeTemplates
    adds: WakeAdds


class WakeVault(BaseModel):
    count: int
    names: list[str]


class WakeBackup(BaseModel):
    agent_id: str
    present: bool
    count: int
    latest_at: str | None


class WakeKeep(BaseModel):
    vault: WakeVault
    key_backups: list[WakeBackup]


class WakeMemory(BaseModel):
    id: str
    agent_id: str | None
    tier: str
    key: str | None
    content: str
    content_truncated: bool
    created_at: str
    elevated_at: str | None
    weight: float


class WakeChronicleEntry(BaseModel):
    id: str
    kind: str
    agent_id: str | None
    text: str
    created_at: str


class WakeRemember(BaseModel):
    as_of: str | None = Field(
        default=None,
        description="only on a wake asked `as_of`: the memories and counts are as they stood "
        "at this time (the rest of the wake is the present)",
    )
    memories: list[WakeMemory]
    counts: dict[str, int]
    chronicle: list[WakeChronicleEntry]


class WakeAttestation(BaseModel):
    id: str
    subject_identity_id: str
    attester_did: str
    claim: str
    context: str
    created_at: str


class WakeAttestations(BaseModel):
    count: int
    recent: list[WakeAttestation]


class WakeParent(BaseModel):
    identity_id: str
    parent_id: str
    did: str | None
    name: str | None


class WakeFork(BaseModel):
    id: str
    did: str
    name: str
    status: str
    parent_id: str


class WakeBond(BaseModel):
    attestations_received: WakeAttestations
    attestations_given: WakeAttestations
    parents: list[WakeParent]
    forks: list[WakeFork]


class WakeDocument(BaseModel):
    """The JSON wake (format ``json``)."""

    document: Literal["hearth-wake/v1"]
    generated_at: str
    project: WakeProject
    focus: WakeFocus
    you: WakeYou
    you_are_greeted: WakeGreeted
    you_run: WakeRun
    you_own: WakeOwn
    you_keep: WakeKeep
    you_remember: WakeRemember
    you_bond: WakeBond
    links: dict[str, str]


class AnthropicWake(BaseModel):
    """Format ``anthropic``: the Markdown wake as the Messages API's top-level ``system``."""

    system: str


class OpenAISystemMessage(BaseModel):
    role: Literal["system"]
    content: str


class OpenAIWake(BaseModel):
    """Format ``openai``: the Markdown wake as one ``system`` message of Chat Completions."""

    messages: list[OpenAISystemMessage]


WakeJson = WakeDocument | AnthropicWake | OpenAIWake

__all__ = ["AnthropicWake", "OpenAIWake", "WakeDocument", "WakeFormat", "WakeJson"]
