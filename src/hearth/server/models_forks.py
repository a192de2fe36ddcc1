"""Request and response bodies of forks and templates (docs/forks-templates.md)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from . import body_rules
from .memory_tiers import Tier
from .models import (
    AuthorityView,
    BootstrapAgent,
    Expression,
    ExpressionView,
    Keypair,
    Name,
    Strict,
    WalletView,
    WholeNumber,
)

MAX_PRICE_MINOR = 1_000_000  # 10,000.00 GBP: the largest amount one fund request moves too
UuidText = Field(max_length=64)

# --- arrival (fork and from-template share the bootstrap birth response) ------------------------


class ArrivedAgent(BootstrapAgent):
    parent_identity_id: str | None = Field(description="the identity this one was forked from")
    origin: str = Field(description="`fork` or `template`")


class ArrivalResponse(BaseModel):
    """The birth response of the specification's Agent resource (as POST /v1/bootstrap)."""

    agent: ArrivedAgent
    keypair: Keypair
    wallet: WalletView | None = Field(
        description="the new agent's own wallet, opened empty (no creation grant); null if it "
        "could not be opened"
    )
    bearer: str = Field(description="a new project bearer for this agent; shown once")
    welcome: str
    authority: AuthorityView


# --- forks --------------------------------------------------------------------------------------


class MemorySelection(Strict):
    """Which of the parent's memories the child receives: the union of ``memory_ids`` and the
    parent's memories of ``tiers`` (at most ``limit`` of those, elevated tiers first)."""

    model_config = ConfigDict(
        json_schema_extra=body_rules.all_of(
            body_rules.at_least_one("tiers", "memory_ids"), body_rules.needs("limit", "tiers")
        )
    )

    tiers: list[Tier] | None = Field(
        default=None, min_length=1, max_length=3, json_schema_extra={"uniqueItems": True}
    )
    memory_ids: list[str] | None = Field(
        default=None, min_length=1, max_length=1000, json_schema_extra={"uniqueItems": True}
    )
    limit: WholeNumber | None = Field(
        default=None, ge=1, le=1000, description="cap on the memories `tiers` selects (100)"
    )

    @model_validator(mode="after")
    def _selects_something(self) -> MemorySelection:
        if self.tiers is None and self.memory_ids is None:
            raise ValueError("name `tiers`, `memory_ids` or both")
        if self.limit is not None and self.tiers is None:
            raise ValueError("`limit` caps what `tiers` selects; it needs `tiers`")
        if self.tiers is not None and len(set(self.tiers)) != len(self.tiers):
            raise ValueError("`tiers` names a tier twice")
        if self.memory_ids is not None and len(set(self.memory_ids)) != len(self.memory_ids):
            raise ValueError("`memory_ids` names a memory twice")
        return self


class ForkRequest(Strict):
    # Both names may be sent when they are equal, which no JSON Schema can say.
    model_config = ConfigDict(json_schema_extra=body_rules.at_least_one("new_name", "display_name"))

    new_name: str | None = Field(default=None, min_length=1, max_length=200)
    display_name: str | None = Field(
        default=None,
        min_length=1,
        max_length=200,
        description="the same as `new_name`; when both are sent they must be equal",
    )
    inherit_expression: bool = True
    inherit_capabilities: bool = True
    inherit_metadata: bool = False
    memories: MemorySelection | None = Field(
        default=None, description="the parent's memories to copy; none when absent"
    )
    fork_note: str | None = Field(default=None, min_length=1, max_length=2000)

    @model_validator(mode="after")
    def _one_name(self) -> ForkRequest:
        if self.new_name is None and self.display_name is None:
            raise ValueError("`new_name` (or `display_name`) is required")
        if (
            self.new_name is not None
            and self.display_name is not None
            and self.new_name != self.display_name
        ):
            raise ValueError("`new_name` and `display_name` name the child twice, differently")
        return self

    @property
    def name(self) -> str:
        name = self.new_name or self.display_name
        assert name is not None
        return name


class CopiedMemory(BaseModel):
    source_memory_id: str
    memory_id: str
    tier: Tier = Field(description="the child's tier: constitutive arrives as foundational")


class Charge(BaseModel):
    wallet_id: str
    amount: int
    currency: str
    balance: int = Field(description="the paying wallet's balance after the charge")


class ForkResponse(ArrivalResponse):
    memories: list[CopiedMemory]
    charged: Charge


# --- templates ----------------------------------------------------------------------------------


class ExpressionPreview(BaseModel):
    register_excerpt: str = Field(description="the register's first 280 characters")
    walls: list[str]
    subagents: list[str] = Field(description="the subagents' names")


class TemplateSummary(BaseModel):
    id: str
    name: str
    description: str
    price: int = Field(description="minor units of GBP; 0 is free")
    currency: str
    built_in: bool
    mine: bool = Field(description="published by the caller's project")
    created_at: str
    expression_preview: ExpressionPreview


class TemplateDetail(TemplateSummary):
    expression: ExpressionView


class TemplatePage(BaseModel):
    items: list[TemplateSummary]
    next_cursor: str | None = Field(description="pass as `cursor` for the next page; null: last")


class TemplatePublish(Strict):
    model_config = ConfigDict(json_schema_extra=body_rules.exactly_one("identity_id", "expression"))

    name: str = Name
    description: str = Field(min_length=1, max_length=2000)
    price: WholeNumber = Field(
        ge=0, le=MAX_PRICE_MINOR, description="minor units of GBP; 0 is free"
    )
    identity_id: str | None = Field(
        default=None, max_length=64, description="publish this identity's effective expression"
    )
    expression: Expression | None = Field(default=None, description="or publish this one")
    wallet_id: str | None = Field(
        default=None,
        max_length=64,
        description="the wallet of this project that purchases pay; by default the identity's "
        "wallet, else the project's first",
    )

    @model_validator(mode="after")
    def _one_source(self) -> TemplatePublish:
        if (self.identity_id is None) == (self.expression is None):
            raise ValueError("send exactly one of `identity_id` and `expression`")
        return self


class PurchaseResponse(BaseModel):
    purchase_id: str
    template_id: str
    price: int
    currency: str
    created_at: str
    charged: Charge


class FromTemplateRequest(Strict):
    template_id: str = UuidText
    new_name: str = Name
    purchase_id: str | None = Field(
        default=None, max_length=64, description="required for priced templates"
    )


class FromTemplateResponse(ArrivalResponse):
    template_id: str
    purchase_id: str | None
