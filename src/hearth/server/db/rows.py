"""Rows as frozen dataclasses: what a service returns where a row crosses a module boundary
(docs/architecture.md, "Rows and JSON").

One class per table, its fields the table's columns (``db/tables.py``) in the same order and
types; one constructor, ``of``, from a SQLAlchemy ``RowMapping`` (``row._mapping``) or the mapping
a service inserted. A changed copy is ``dataclasses.replace``. A JSON column's value stays a
``JsonObject``; it is the row that is typed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Self

from sqlalchemy import RowMapping

from ..canon import CustodyMode
from ..json_types import JsonObject


@dataclass(frozen=True, slots=True)
class IdentityRow:
    """A row of ``identities``."""

    id: str
    project_id: str
    did: str
    name: str
    mode: str
    root_public_key: str | None
    box_public_key: str | None
    kid: str
    key_created_at: datetime | None
    capabilities: list[str]
    form: str
    language: str | None
    expression_visibility: str
    runtime: JsonObject | None
    expression: JsonObject | None
    metadata: JsonObject
    status: str
    level: int
    trust_score: float
    sponsor_did: str | None
    elevated_at: datetime | None
    parent_identity_id: str | None
    origin: str
    next_sequence: int
    authority_lease_until: int
    created_at: datetime

    @classmethod
    def of(cls, row: RowMapping | Mapping[str, Any]) -> Self:
        return cls(**row)


@dataclass(frozen=True, slots=True)
class MemoryRow:
    """A row of ``memories``."""

    id: str
    project_id: str
    identity_id: str | None
    tier: str
    key: str | None
    content: str
    created_at: datetime
    elevated_at: datetime | None
    expression_patch: JsonObject | None
    supersedes: str | None
    superseded_by: str | None
    superseded_at: datetime | None
    deleted_at: datetime | None
    channel: str
    api_key_id: str | None
    runtime_id: str | None
    inbox_message_id: str | None
    signed_by: str | None
    untrusted: bool
    confirmed_at: datetime | None

    @classmethod
    def of(cls, row: RowMapping | Mapping[str, Any]) -> Self:
        return cls(**row)


@dataclass(frozen=True, slots=True)
class RuntimeRow:
    """A row of ``runtimes`` (every write of it is ``services/runtimes``'s)."""

    id: str
    project_id: str
    identity_id: str | None
    name: str
    mode: CustodyMode  # the table's check constraint holds it to the canon's modes
    status: str
    region: str
    llm: JsonObject | None
    bridge: JsonObject | None
    metadata: JsonObject
    last_error: str | None
    control_token_hash: str | None
    key_material: bytes | None
    bridge_connected: bool
    last_seen_at: datetime | None
    last_thought_at: datetime | None
    last_work_at: datetime | None
    status_changed_at: datetime
    lease_owner: str | None
    lease_until: int
    created_at: datetime
    updated_at: datetime
    deleted_at: datetime | None

    @classmethod
    def of(cls, row: RowMapping | Mapping[str, Any]) -> Self:
        return cls(**row)


@dataclass(frozen=True, slots=True)
class WalletRow:
    """A row of ``wallets``."""

    id: str
    project_id: str
    identity_id: str | None
    name: str
    currency: str
    balance: int
    created_at: datetime

    @classmethod
    def of(cls, row: RowMapping | Mapping[str, Any]) -> Self:
        return cls(**row)


@dataclass(frozen=True, slots=True)
class LedgerRow:
    """A row of ``ledger``: one entry of a wallet."""

    id: str
    wallet_id: str
    amount: int
    reason: str
    created_at: datetime

    @classmethod
    def of(cls, row: RowMapping | Mapping[str, Any]) -> Self:
        return cls(**row)


@dataclass(frozen=True, slots=True)
class StrandRow:
    """A row of ``strands``."""

    id: str
    project_id: str
    identity_id: str | None
    runtime_id: str | None
    name: str
    next_seq: int
    created_at: datetime

    @classmethod
    def of(cls, row: RowMapping | Mapping[str, Any]) -> Self:
        return cls(**row)


@dataclass(frozen=True, slots=True)
class ThoughtRow:
    """A row of ``thoughts``: one sealed thought of a strand."""

    id: str
    strand_id: str
    project_id: str
    runtime_id: str | None
    seq: int
    ciphertext: bytes
    nonce: bytes
    signature: str | None
    signing_key_id: str | None
    created_at: datetime

    @classmethod
    def of(cls, row: RowMapping | Mapping[str, Any]) -> Self:
        return cls(**row)


@dataclass(frozen=True, slots=True)
class TemplateRow:
    """A row of ``templates``."""

    id: str
    name: str
    description: str
    expression: JsonObject
    price: int
    publisher_project_id: str | None
    publisher_wallet_id: str | None
    status: str
    created_at: datetime

    @classmethod
    def of(cls, row: RowMapping | Mapping[str, Any]) -> Self:
        return cls(**row)


@dataclass(frozen=True, slots=True)
class InboxMessageRow:
    """A row of ``inbox_messages``."""

    id: str
    project_id: str
    identity_id: str
    sender: str
    body: str
    status: str
    taken_by: str | None
    taken_at: datetime | None
    done_at: datetime | None
    created_at: datetime

    @classmethod
    def of(cls, row: RowMapping | Mapping[str, Any]) -> Self:
        return cls(**row)


@dataclass(frozen=True, slots=True)
class AttestationRow:
    """A row of ``attestations``."""

    id: str
    project_id: str
    subject_identity_id: str
    attester_did: str
    attester_identity_id: str | None
    signing_key_id: str
    public_key: str
    context: str
    claim: str
    evidence: JsonObject | None
    signature: str
    created_at: datetime

    @classmethod
    def of(cls, row: RowMapping | Mapping[str, Any]) -> Self:
        return cls(**row)


@dataclass(frozen=True, slots=True)
class ChronicleRow:
    """A row of ``chronicle``: one entry."""

    id: str
    project_id: str
    identity_id: str | None
    kind: str
    text: str
    created_at: datetime
    details: JsonObject | None

    @classmethod
    def of(cls, row: RowMapping | Mapping[str, Any]) -> Self:
        return cls(**row)
