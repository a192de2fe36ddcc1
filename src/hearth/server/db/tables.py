"""The schema, as SQLAlchemy Core tables: one definition shared by the code and the migrations.

Times are naive UTC (SQLite has no zone type; keeping both databases alike avoids surprises).
Leases are epoch milliseconds so that a conditional UPDATE can compare them in plain SQL.
"""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    BigInteger,
    CheckConstraint,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
)

metadata = MetaData(
    naming_convention={
        "ix": "ix_%(column_0_label)s",
        "uq": "uq_%(table_name)s_%(column_0_name)s",
        "ck": "ck_%(table_name)s_%(constraint_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

UUID = String(36)

projects = Table(
    "projects",
    metadata,
    Column("id", UUID, primary_key=True),
    Column("name", String(200), nullable=False),
    Column("origin", String(40), nullable=False),
    Column("created_at", DateTime, nullable=False),
)

api_keys = Table(
    "api_keys",
    metadata,
    Column("id", UUID, primary_key=True),
    Column("project_id", UUID, ForeignKey("projects.id"), nullable=False, index=True),
    Column("name", String(200), nullable=False),
    Column("prefix", String(32), nullable=False),
    # SHA-256 of the bearer: the bearer has 256 bits of entropy, so a slow hash adds nothing.
    Column("key_hash", String(64), nullable=False, unique=True),
    Column("created_at", DateTime, nullable=False),
    Column("revoked_at", DateTime, nullable=True),
)

identities = Table(
    "identities",
    metadata,
    Column("id", UUID, primary_key=True),
    Column("project_id", UUID, ForeignKey("projects.id"), nullable=False, index=True),
    Column("did", String(64), nullable=False, unique=True),
    Column("name", String(200), nullable=False),
    Column("mode", String(20), nullable=False),
    Column("root_public_key", String(44), nullable=True, index=True),
    Column("box_public_key", String(44), nullable=True),
    Column("kid", String(64), nullable=False),
    Column("key_created_at", DateTime, nullable=True),
    Column("capabilities", JSON, nullable=False),
    Column("form", String(20), nullable=False),
    Column("language", String(35), nullable=True),
    Column("expression_visibility", String(20), nullable=False),
    Column("runtime", JSON, nullable=True),
    Column("expression", JSON, nullable=True),
    Column("metadata", JSON, nullable=False),
    Column("status", String(20), nullable=False),
    Column("level", Integer, nullable=False),
    Column("trust_score", Float, nullable=False),
    Column("sponsor_did", String(64), nullable=True),
    Column("elevated_at", DateTime, nullable=True),
    Column("parent_identity_id", UUID, nullable=True),
    Column("origin", String(40), nullable=False),
    Column("next_sequence", BigInteger, nullable=False),
    Column("authority_lease_until", BigInteger, nullable=False),
    Column("created_at", DateTime, nullable=False),
    CheckConstraint("next_sequence >= 1", name="sequence_positive"),
    CheckConstraint("mode in ('agent_root', 'legacy_bearer')", name="mode"),
)

# Registration nonces and key proofs: claimed by inserting their digest; the primary key makes
# the claim atomic, so of many concurrent requests exactly one wins.
single_use = Table(
    "single_use",
    metadata,
    Column("scope", String(32), primary_key=True),
    Column("digest", String(64), primary_key=True),
    Column("created_at", DateTime, nullable=False),
)

wallets = Table(
    "wallets",
    metadata,
    Column("id", UUID, primary_key=True),
    Column("project_id", UUID, ForeignKey("projects.id"), nullable=False, index=True),
    Column("identity_id", UUID, ForeignKey("identities.id"), nullable=True, index=True),
    Column("name", String(200), nullable=False),
    Column("currency", String(3), nullable=False),
    Column("balance", BigInteger, nullable=False),
    Column("created_at", DateTime, nullable=False),
    CheckConstraint("balance >= 0", name="balance_non_negative"),
)

ledger = Table(
    "ledger",
    metadata,
    Column("id", UUID, primary_key=True),
    Column("wallet_id", UUID, ForeignKey("wallets.id"), nullable=False, index=True),
    Column("amount", BigInteger, nullable=False),
    Column("reason", String(64), nullable=False),
    Column("created_at", DateTime, nullable=False),
)

backups = Table(
    "backups",
    metadata,
    Column("id", UUID, primary_key=True),
    Column("project_id", UUID, ForeignKey("projects.id"), nullable=False),
    Column("agent_id", UUID, ForeignKey("identities.id"), nullable=False),
    Column("blob_base64", Text, nullable=False),
    Column("key_derivation", String(512), nullable=False),
    Column("label", String(200), nullable=True),
    Column("created_at", DateTime, nullable=False),
    Index("ix_backups_agent_created", "agent_id", "created_at"),
)

memories = Table(
    "memories",
    metadata,
    Column("id", UUID, primary_key=True),
    Column("project_id", UUID, ForeignKey("projects.id"), nullable=False, index=True),
    Column("identity_id", UUID, ForeignKey("identities.id"), nullable=True, index=True),
    Column("tier", String(20), nullable=False),
    Column("key", String(200), nullable=True),
    Column("content", Text, nullable=False),
    Column("created_at", DateTime, nullable=False),
)

chronicle = Table(
    "chronicle",
    metadata,
    Column("id", UUID, primary_key=True),
    Column("project_id", UUID, ForeignKey("projects.id"), nullable=False, index=True),
    Column("identity_id", UUID, ForeignKey("identities.id"), nullable=True),
    Column("kind", String(20), nullable=False),
    Column("text", Text, nullable=False),
    Column("created_at", DateTime, nullable=False, index=True),
)
