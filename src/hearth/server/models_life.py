"""Response bodies of an identity's life leaving or arriving (issue 20, docs/export.md)."""

from __future__ import annotations

from pydantic import BaseModel

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
