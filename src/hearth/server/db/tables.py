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
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
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
    Index("ix_ledger_wallet_created", "wallet_id", "created_at", "id"),
)

# --- wallets and vault (docs/service.md, "Wallets and vault") -----------------------------------

# POST /v1/wallets/{id}/fund: one row per transfer. (project, idempotency digest) is unique, so
# a retried request finds the transfer it already made instead of paying twice.
wallet_transfers = Table(
    "wallet_transfers",
    metadata,
    Column("id", UUID, primary_key=True),
    Column("project_id", UUID, ForeignKey("projects.id"), nullable=False),
    Column("idempotency_digest", String(64), nullable=False),
    Column("request_digest", String(64), nullable=False),
    Column("source_wallet_id", UUID, ForeignKey("wallets.id"), nullable=False, index=True),
    Column("target_wallet_id", UUID, ForeignKey("wallets.id"), nullable=False, index=True),
    Column("amount", BigInteger, nullable=False),
    Column("created_at", DateTime, nullable=False),
    CheckConstraint("amount > 0", name="amount_positive"),
    UniqueConstraint("project_id", "idempotency_digest", name="uq_wallet_transfers_idempotency"),
)

# Vault secrets, sealed (services/vault.py): ``sealing`` names the key a value is sealed under.
# A name ``<identity uuid>:<key>`` is in that identity's namespace (``identity_id``).
vault_secrets = Table(
    "vault_secrets",
    metadata,
    Column("id", UUID, primary_key=True),
    Column("project_id", UUID, ForeignKey("projects.id"), nullable=False),
    Column("identity_id", UUID, ForeignKey("identities.id"), nullable=True, index=True),
    Column("name", String(200), nullable=False),
    Column("description", String(500), nullable=True),
    Column("sealing", String(40), nullable=False),
    Column("ciphertext", LargeBinary, nullable=False),
    Column("version", BigInteger, nullable=False),
    Column("created_at", DateTime, nullable=False),
    Column("updated_at", DateTime, nullable=False),
    UniqueConstraint("project_id", "name", name="uq_vault_secrets_project_name"),
)

# The installation's vault key, used when SERVICE_KMS_MASTER_KEY is not set: generated once
# under a fixed id (ON CONFLICT DO NOTHING), so that every worker seals with the same key.
vault_keys = Table(
    "vault_keys",
    metadata,
    Column("id", String(36), primary_key=True),
    Column("key", LargeBinary, nullable=False),
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
    # When the memory reached its current tier above episodic (docs/service.md, "Memory and
    # chronicle"); the effective expression applies patches in this order.
    Column("elevated_at", DateTime, nullable=True),
    Column("expression_patch", JSON, nullable=True),
    # The wake's selection: one identity's memories of one tier, newest first.
    Index("ix_memories_wake", "project_id", "identity_id", "tier", "created_at"),
    Index("ix_memories_project_created", "project_id", "created_at", "id"),
    Index("ix_memories_identity_elevated", "identity_id", "elevated_at", "id"),
)

# External witnesses' Ed25519 signatures (memory-attestation/v1) that made a memory constitutive.
memory_attestations = Table(
    "memory_attestations",
    metadata,
    Column("id", UUID, primary_key=True),
    Column("memory_id", UUID, ForeignKey("memories.id"), nullable=False, index=True),
    Column("position", Integer, nullable=False),  # order in the elevation request
    Column("attester_did", String(200), nullable=False),
    Column("signing_key_id", String(200), nullable=False),
    Column("public_key", String(44), nullable=False),
    Column("signature", String(88), nullable=False),
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
    Column("details", JSON, nullable=True),
    Index("ix_chronicle_project_created", "project_id", "created_at", "id"),
    Index("ix_chronicle_project_kind_created", "project_id", "kind", "created_at", "id"),
    Index("ix_chronicle_identity_created", "identity_id", "created_at", "id"),
)


# --- ADDS provider node (docs/service.md, "Provider node") ---------------------------------------

CID = String(59)  # canonical CIDv1 text: raw codec, sha2-256 (hearth.adds.cid)
B64URL_KEY = String(43)  # an Ed25519 public key as ADDS writes it: base64url, no padding

# Which project holds which block. The bytes live once in the block store (content-addressed),
# whoever uploaded them; a row here is one project's claim on them.
adds_blocks = Table(
    "adds_blocks",
    metadata,
    Column("project_id", UUID, ForeignKey("projects.id"), primary_key=True),
    Column("cid", CID, primary_key=True),
    Column("size", BigInteger, nullable=False),
    Column("created_at", DateTime, nullable=False),
    Index("ix_adds_blocks_cid", "cid"),
    Index("ix_adds_blocks_project_created", "project_id", "created_at", "cid"),
    Index("ix_adds_blocks_created_at", "created_at"),
)

# Control documents a project holds, as their canonical (RFC 8785) bytes. The columns after
# ``signer_key`` are read from the document so that heads and grants can be found by index.
adds_documents = Table(
    "adds_documents",
    metadata,
    Column("project_id", UUID, ForeignKey("projects.id"), primary_key=True),
    Column("cid", CID, primary_key=True),
    Column("kind", String(20), nullable=False),
    Column("canonical", LargeBinary, nullable=False),
    Column("size", BigInteger, nullable=False),
    Column("signer_key", B64URL_KEY, nullable=False),
    # Heads: head_id is any non-empty string, so the index is on its SHA-256 (hex).
    Column("head_id", Text, nullable=True),
    Column("head_digest", String(64), nullable=True),
    Column("sequence", BigInteger, nullable=True),
    # Grants.
    Column("manifest_cid", CID, nullable=True),
    Column("audience", Text, nullable=True),
    Column("created_at", DateTime, nullable=False),
    Index("ix_adds_documents_cid", "cid"),
    Index("ix_adds_documents_head", "signer_key", "head_digest"),
    Index("ix_adds_documents_manifest_cid", "manifest_cid"),
    Index("ix_adds_documents_project_created", "project_id", "created_at", "cid"),
    Index("ix_adds_documents_project_kind_created", "project_id", "kind", "created_at", "cid"),
)

# The service's own Ed25519 provider key, when no key file is configured: generated once and
# shared by every worker. ``wrapping`` says how ``private_key`` is kept: ``none`` (the 32-byte
# seed as is) or ``aes-256-gcm/hkdf-sha256/v1`` (nonce and ciphertext under kms_master_key).
provider_keys = Table(
    "provider_keys",
    metadata,
    Column("id", String(36), primary_key=True),
    Column("public_key", B64URL_KEY, nullable=False),
    Column("private_key", LargeBinary, nullable=False),
    Column("wrapping", String(40), nullable=False),
    Column("created_at", DateTime, nullable=False),
)

# The service's signed provider records, one chain per provider key. The primary key makes a
# new sequence number a claim: of two workers re-signing at once, one inserts, one re-reads.
adds_provider_records = Table(
    "adds_provider_records",
    metadata,
    Column("provider_key", B64URL_KEY, primary_key=True),
    Column("sequence", BigInteger, primary_key=True),
    Column("cid", CID, nullable=False),
    Column("canonical", LargeBinary, nullable=False),
    # SHA-256 of what the record says (provider, endpoints, inventory): unchanged, no re-sign.
    Column("state_digest", String(64), nullable=False),
    Column("expires_at", BigInteger, nullable=False),
    Column("created_at", DateTime, nullable=False),
    Index("ix_adds_provider_records_cid", "cid"),
)
