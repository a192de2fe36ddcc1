"""Response bodies of an identity's life leaving or arriving (issue 20, docs/export.md)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from .models import AuthorityView


class ProviderBoxKey(BaseModel):
    """The service's X25519 key, to which an export's objects are granted for an import."""

    x25519_public_key: str
    ed25519_public_key: str
    derivation: str


class ImportedIdentity(BaseModel):
    authority: AuthorityView
    root: str
    records: dict[str, int]


class MoveRequest(BaseModel):
    """Where the identity went: the new service's address and the identity's DID there."""

    model_config = ConfigDict(extra="forbid")

    service: str = Field(min_length=8, max_length=500, pattern=r"^https?://[^\s]+$")
    did: str = Field(min_length=5, max_length=200, pattern=r"^did:[a-z0-9]+:[^\s]+$")


class MovedTo(BaseModel):
    service: str
    did: str
    moved_at: str | None = None


class MovedIdentity(BaseModel):
    identity_id: str
    did: str
    status: str
    moved_to: MovedTo
    # The identity's runtimes this service stopped with the move (move_away, docs/runtimes.md).
    runtimes_stopped: list[str]
