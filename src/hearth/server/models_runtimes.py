"""Request and response bodies of the runtimes routes (docs/runtimes.md)."""

from __future__ import annotations

import json
from typing import Literal

from pydantic import BaseModel, Field, field_validator

from .canon import CustodyMode
from .json_types import JsonObject
from .models import Strict
from .runtime_states import EventName, Status

# Hosting region codes (IATA codes of the metro). One list so that a typo is a 422, not a
# silently new region; `lhr` is the specification's default (docs/runtimes.md, "Regions").
Region = Literal["lhr", "ams", "fra", "cdg", "iad", "sjc", "sin", "syd"]
REGIONS: tuple[str, ...] = Region.__args__  # type: ignore[attr-defined]
DEFAULT_REGION = "lhr"

# The metadata object surfaces in the wake: bounded so that one runtime cannot swell it.
METADATA_MAX_BYTES = 16_384


def _bounded_metadata(value: JsonObject | None) -> JsonObject | None:
    if value is None:
        return None
    try:
        size = len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))
    except (TypeError, ValueError, UnicodeEncodeError):
        raise ValueError(
            "metadata must be plain JSON (UTF-8 text, numbers, lists, objects)"
        ) from None
    if size > METADATA_MAX_BYTES:
        raise ValueError(
            f"metadata is {size} bytes as compact JSON; at most {METADATA_MAX_BYTES} are kept"
        )
    return value


class LlmSpec(Strict):
    provider: str = Field(
        min_length=1,
        max_length=100,
        description="hosted modes accept only `anthropic` and `openai`; `self` records any",
    )
    model: str = Field(min_length=1, max_length=200)
    vault_key: str | None = Field(
        default=None,
        min_length=1,
        max_length=200,
        description="the vault secret holding the provider key; required for hosted modes",
    )


class BridgeSpec(Strict):
    pubkey: str = Field(max_length=64, description="standard base64 Ed25519 key (32 bytes)")
    key_id: str = Field(max_length=64, description="uuid")
    advertised_url: str | None = Field(
        default=None, max_length=2048, description="optional wss:// hint"
    )


class RuntimeCreate(Strict):
    name: str = Field(min_length=1, max_length=200)
    mode: CustodyMode = Field(description="custody tier; immutable")
    identity_id: str | None = Field(
        default=None,
        max_length=64,
        description="an active identity of the project (UUID or DID); immutable",
    )
    llm: LlmSpec | None = Field(default=None, description="required for bridged and trusted")
    bridge: BridgeSpec | None = Field(default=None, description="required for bridged")
    region: Region = "lhr"  # DEFAULT_REGION, the specification's default
    metadata: JsonObject = Field(
        default_factory=dict, description=f"freeform, at most {METADATA_MAX_BYTES} bytes"
    )

    @field_validator("metadata")
    @classmethod
    def _metadata(cls, value: JsonObject | None) -> JsonObject | None:
        return _bounded_metadata(value)


class LlmPatch(Strict):
    provider: str | None = Field(default=None, min_length=1, max_length=100)
    model: str | None = Field(default=None, min_length=1, max_length=200)
    vault_key: str | None = Field(default=None, min_length=1, max_length=200)


class BridgePatch(Strict):
    pubkey: str | None = Field(default=None, max_length=64, description="immutable")
    key_id: str | None = Field(default=None, max_length=64, description="immutable")
    advertised_url: str | None = Field(default=None, max_length=2048)


class RuntimePatch(Strict):
    """Only the fields sent change; ``llm`` and ``bridge`` merge into the stored objects and
    ``metadata`` replaces the stored object. ``mode`` and ``identity_id`` may be sent only with
    their current values."""

    name: str | None = Field(default=None, min_length=1, max_length=200)
    mode: CustodyMode | None = Field(default=None, description="immutable: only the current value")
    identity_id: str | None = Field(
        default=None, max_length=64, description="immutable: only the current value"
    )
    llm: LlmPatch | None = None
    bridge: BridgePatch | None = None
    region: Region | None = None
    metadata: JsonObject | None = None

    @field_validator("metadata")
    @classmethod
    def _metadata(cls, value: JsonObject | None) -> JsonObject | None:
        return _bounded_metadata(value)


class LlmView(BaseModel):
    provider: str
    model: str
    vault_key: str | None


class BridgeView(BaseModel):
    pubkey: str
    key_id: str
    advertised_url: str | None


class RuntimeView(BaseModel):
    id: str
    name: str
    mode: CustodyMode
    identity_id: str | None
    llm: LlmView | None
    bridge: BridgeView | None
    region: str
    metadata: JsonObject
    status: Status
    last_error: str | None = Field(description="populated in the error state")
    runtime_public_key: str | None = Field(
        description="trusted: the runtime's Ed25519 public key (standard base64)"
    )
    has_control_token: bool = Field(description="bridged: a control token is set")
    bridge_connected: bool
    last_seen_at: str | None
    last_thought_at: str | None
    thought_count_24h: int
    status_changed_at: str
    created_at: str
    updated_at: str
    deleted: bool
    deleted_at: str | None


class RuntimeCreated(RuntimeView):
    control_token: str | None = Field(
        description="bridged: the bridge's control token; shown once, never again"
    )


class ControlToken(BaseModel):
    runtime_id: str
    control_token: str = Field(description="the new control token; shown once, never again")
    rotated_at: str


class RuntimePage(BaseModel):
    items: list[RuntimeView]
    next_cursor: str | None = Field(description="pass as `cursor` for the next page; null: last")


class RuntimeEvent(BaseModel):
    id: int
    runtime_id: str
    event: EventName
    details: JsonObject | None
    created_at: str


class RuntimeEventPage(BaseModel):
    items: list[RuntimeEvent]
    next_cursor: str | None = Field(description="pass as `cursor` for the next page; null: last")
