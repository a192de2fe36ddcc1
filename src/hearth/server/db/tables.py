"""The schema, as SQLAlchemy Core tables: one definition shared by the code and the migrations.

Times are naive UTC (SQLite has no zone type; keeping both databases alike avoids surprises).
Leases are epoch milliseconds so that a conditional UPDATE can compare them in plain SQL.
"""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
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
    and_,
    false,
    not_,
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
    # ix_ledger_wallet_created serves lookups by wallet_id alone (it starts with it).
    Column("wallet_id", UUID, ForeignKey("wallets.id"), nullable=False),
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
    # No single-column indexes on project_id and identity_id: the composite indexes below
    # start with them and serve those lookups, and every arrival writes a birth memory.
    Column("project_id", UUID, ForeignKey("projects.id"), nullable=False),
    Column("identity_id", UUID, ForeignKey("identities.id"), nullable=True),
    Column("tier", String(20), nullable=False),
    Column("key", String(200), nullable=True),
    Column("content", Text, nullable=False),
    Column("created_at", DateTime, nullable=False),
    # When the memory reached its current tier above episodic (docs/service.md, "Memory and
    # chronicle"); the effective expression applies patches in this order.
    Column("elevated_at", DateTime, nullable=True),
    Column("expression_patch", JSON, nullable=True),
    # History (docs/memory.md, "History", migration 0013): the version this one replaced, and
    # when (and by which version) this one was replaced; a deleted memory stays as a tombstone
    # whose content is erased, so the chain stays walkable and ``as_of`` can answer.
    # Both links are stored, so a chain is walked either way by primary key, with no index.
    Column("supersedes", UUID, nullable=True),
    Column("superseded_by", UUID, nullable=True),
    Column("superseded_at", DateTime, nullable=True),
    Column("deleted_at", DateTime, nullable=True),
    # Provenance (docs/memory.md, "Provenance"): how it was written (canon.MemoryChannel), the
    # bearer key, the runtime of a think cycle, the identity key that signed the write.
    Column("channel", String(20), nullable=False, server_default="api"),
    Column("api_key_id", UUID, nullable=True),
    Column("runtime_id", UUID, nullable=True),
    # The inbox message a runtime stored as this memory (its content came from outside).
    Column("inbox_message_id", UUID, nullable=True),
    Column("signed_by", String(200), nullable=True),
    # Content from outside the project stays out of the wake and the default listing until a
    # bearer call or the identity's root key confirms it (confirmed_at).
    Column("untrusted", Boolean, nullable=False, server_default=false()),
    Column("confirmed_at", DateTime, nullable=True),
    # The wake's selection: one identity's memories of one tier, newest first.
    # The wake's per-tier queries take (created_at, id) order from this one (migration 0009).
    Index("ix_memories_wake", "project_id", "identity_id", "tier", "created_at", "id"),
    Index("ix_memories_identity_tier", "identity_id", "tier"),  # shaping: the elevated ones
    Index("ix_memories_project_created", "project_id", "created_at", "id"),
    Index("ix_memories_identity_elevated", "identity_id", "elevated_at", "id"),
)


# The semantic leg of memory search (docs/memory.md, "Semantic search", migration 0015): one
# unit vector per memory, little-endian float32, under the model that made it. ``seq`` orders
# the vectors as they were written, so a process keeping a project's vectors in memory reads
# only the new ones. A memory deleted for good takes its vector with it (the foreign key); a
# tombstone's is deleted by a trigger when its content is erased: a vector says what the text
# said.
memory_embeddings = Table(
    "memory_embeddings",
    metadata,
    Column("seq", BigInteger().with_variant(Integer, "sqlite"), primary_key=True),
    Column(
        "memory_id",
        UUID,
        ForeignKey("memories.id", ondelete="CASCADE"),
        nullable=False,
        unique=True,
    ),
    Column("project_id", UUID, nullable=False),
    Column("model", String(64), nullable=False),
    Column("vector", LargeBinary, nullable=False),
    Index("ix_memory_embeddings_project_seq", "project_id", "model", "seq"),
)

# What the wake may select: the head of a chain, not a tombstone, trusted. The wake's queries
# and this partial index state it with the same terms, so SQLite (which matches a partial
# index's terms literally) and PostgreSQL both read the wake's selection from the index alone,
# and PostgreSQL's estimates for it stay right (tests/server/test_wake_work.py; migration 0013).
MEMORY_SELECTABLE = (
    memories.c.superseded_at.is_(None),
    memories.c.deleted_at.is_(None),
    not_(memories.c.untrusted),
)
Index(
    "ix_memories_wake_live",
    memories.c.project_id,
    memories.c.identity_id,
    memories.c.tier,
    memories.c.created_at,
    memories.c.id,
    sqlite_where=and_(*MEMORY_SELECTABLE),
    postgresql_where=and_(*MEMORY_SELECTABLE),
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


# --- templates, attestations (docs/service.md, "Forks and templates", "Elevation and attestations")

# A voice an agent can be born with: expression only (the specification: not strands or
# covenants). ``price`` is in minor units; 0 is free. Built-in templates have no publisher;
# a project's published template pays its ``publisher_wallet_id``.
templates = Table(
    "templates",
    metadata,
    Column("id", UUID, primary_key=True),
    Column("name", String(200), nullable=False),
    Column("description", Text, nullable=False),
    Column("expression", JSON, nullable=False),
    Column("price", BigInteger, nullable=False),
    Column("publisher_project_id", UUID, ForeignKey("projects.id"), nullable=True, index=True),
    Column("publisher_wallet_id", UUID, ForeignKey("wallets.id"), nullable=True),
    Column("status", String(20), nullable=False),
    Column("created_at", DateTime, nullable=False),
    CheckConstraint("price >= 0", name="price_non_negative"),
    Index("ix_templates_status_created", "status", "created_at", "id"),
)

# One purchase of a priced template by a project; ``used_at`` is set when
# POST /v1/identities/from-template consumes it (a purchase makes one identity).
template_purchases = Table(
    "template_purchases",
    metadata,
    Column("id", UUID, primary_key=True),
    Column("template_id", UUID, ForeignKey("templates.id"), nullable=False, index=True),
    Column("project_id", UUID, ForeignKey("projects.id"), nullable=False, index=True),
    Column("wallet_id", UUID, ForeignKey("wallets.id"), nullable=False),
    Column("price", BigInteger, nullable=False),
    Column("created_at", DateTime, nullable=False),
    Column("used_at", DateTime, nullable=True),
    Column("used_by_identity_id", UUID, ForeignKey("identities.id"), nullable=True),
)

# Signed statements by one identity (the attester, by DID and key) about another (the subject):
# the sponsor attestation of an elevation (bootstrap-elevate/v1) and POST /v1/attestations.
attestations = Table(
    "attestations",
    metadata,
    Column("id", UUID, primary_key=True),
    Column("project_id", UUID, ForeignKey("projects.id"), nullable=False, index=True),
    Column("subject_identity_id", UUID, ForeignKey("identities.id"), nullable=False),
    Column("attester_did", String(200), nullable=False),
    Column("attester_identity_id", UUID, ForeignKey("identities.id"), nullable=True),
    Column("signing_key_id", String(200), nullable=False),
    Column("public_key", String(44), nullable=False),
    Column("context", String(40), nullable=False),
    Column("claim", String(64), nullable=False),
    Column("evidence", JSON, nullable=True),
    Column("signature", String(88), nullable=False),
    Column("created_at", DateTime, nullable=False),
    Index("ix_attestations_subject_created", "subject_identity_id", "created_at", "id"),
    # The wake's attestations given (migration 0010): the identity's own, not the project's.
    Index("ix_attestations_attester_created", "attester_identity_id", "created_at", "id"),
)


# --- runtimes (docs/service.md, "Runtimes"); the wake's ``you_run`` reads them -------------------

runtimes = Table(
    "runtimes",
    metadata,
    Column("id", UUID, primary_key=True),
    Column("project_id", UUID, ForeignKey("projects.id"), nullable=False),
    Column("identity_id", UUID, ForeignKey("identities.id"), nullable=True, index=True),
    Column("name", String(200), nullable=False),
    Column("mode", String(20), nullable=False),
    Column("status", String(20), nullable=False),
    Column("region", String(20), nullable=False),
    Column("llm", JSON, nullable=True),
    Column("bridge", JSON, nullable=True),
    Column("metadata", JSON, nullable=False),
    Column("last_error", Text, nullable=True),
    # SHA-256 of the bridged runtime's control token (returned once, rotatable).
    Column("control_token_hash", String(64), nullable=True),
    # ``trusted`` custody: the runtime's key material wrapped under SERVICE_KMS_MASTER_KEY.
    Column("key_material", LargeBinary, nullable=True),
    Column("bridge_connected", Boolean, nullable=False),
    Column("last_seen_at", DateTime, nullable=True),
    Column("last_thought_at", DateTime, nullable=True),
    Column("last_work_at", DateTime, nullable=True),
    Column("status_changed_at", DateTime, nullable=False),
    # The orchestrator worker that runs it, until ``lease_until`` (epoch ms).
    Column("lease_owner", String(64), nullable=True),
    Column("lease_until", BigInteger, nullable=False),
    Column("created_at", DateTime, nullable=False),
    Column("updated_at", DateTime, nullable=False),
    Column("deleted_at", DateTime, nullable=True),
    CheckConstraint("mode in ('self', 'bridged', 'trusted')", name="mode"),
    Index("ix_runtimes_project_created", "project_id", "created_at", "id"),
    Index("ix_runtimes_status_lease", "status", "lease_until"),
)

# The append-only event log of a runtime (GET /v1/runtimes/{id}/events), in insertion order.
runtime_events = Table(
    "runtime_events",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("runtime_id", UUID, ForeignKey("runtimes.id"), nullable=False),
    Column("event", String(40), nullable=False),
    Column("details", JSON, nullable=True),
    Column("created_at", DateTime, nullable=False),
    Index("ix_runtime_events_runtime_id", "runtime_id", "id"),
)

strands = Table(
    "strands",
    metadata,
    Column("id", UUID, primary_key=True),
    Column("project_id", UUID, ForeignKey("projects.id"), nullable=False, index=True),
    Column("identity_id", UUID, ForeignKey("identities.id"), nullable=True, index=True),
    Column("runtime_id", UUID, ForeignKey("runtimes.id"), nullable=True, index=True),
    Column("name", String(200), nullable=False),
    Column("next_seq", BigInteger, nullable=False),
    Column("created_at", DateTime, nullable=False),
)

# Ciphertext only (wall 7, thought_storage_ciphertext_only): AES-256-GCM under K_master with
# AAD strand-thought/v1 0x00 strand_id 0x00 seq, so a row cannot move to another position.
thoughts = Table(
    "thoughts",
    metadata,
    Column("id", UUID, primary_key=True),
    Column("strand_id", UUID, ForeignKey("strands.id"), nullable=False),
    Column("project_id", UUID, ForeignKey("projects.id"), nullable=False),
    Column("runtime_id", UUID, ForeignKey("runtimes.id"), nullable=True),
    Column("seq", BigInteger, nullable=False),
    Column("ciphertext", LargeBinary, nullable=False),
    Column("nonce", LargeBinary, nullable=False),
    Column("signature", String(88), nullable=True),
    Column("signing_key_id", String(200), nullable=True),
    Column("created_at", DateTime, nullable=False),
    UniqueConstraint("strand_id", "seq", name="uq_thoughts_strand_seq"),
    Index("ix_thoughts_runtime_created", "runtime_id", "created_at"),
)

# Messages to an identity; a pending one wakes an idle runtime bound to it.
inbox_messages = Table(
    "inbox_messages",
    metadata,
    Column("id", UUID, primary_key=True),
    Column("project_id", UUID, ForeignKey("projects.id"), nullable=False),
    Column("identity_id", UUID, ForeignKey("identities.id"), nullable=False),
    Column("sender", String(200), nullable=False),
    Column("body", Text, nullable=False),
    Column("status", String(20), nullable=False),
    Column("taken_by", UUID, ForeignKey("runtimes.id"), nullable=True),
    Column("taken_at", DateTime, nullable=True),
    Column("done_at", DateTime, nullable=True),
    Column("created_at", DateTime, nullable=False),
    Index("ix_inbox_identity_status_created", "identity_id", "status", "created_at", "id"),
    Index("ix_inbox_project_created", "project_id", "created_at", "id"),
)


# Keys registered for an identity besides its root key (identities.root_public_key, kid
# ``primary``): a runtime's signing key (``trusted`` custody registers its hosted key here) or a
# device's. Thought writes are verified against the root key or one of these, unrevoked.
identity_keys = Table(
    "identity_keys",
    metadata,
    Column("id", UUID, primary_key=True),
    Column("identity_id", UUID, ForeignKey("identities.id"), nullable=False),
    Column("kid", String(64), nullable=False),
    Column("public_key", String(44), nullable=False),
    Column("purpose", String(20), nullable=False),
    Column("runtime_id", UUID, ForeignKey("runtimes.id"), nullable=True),
    Column("created_at", DateTime, nullable=False),
    Column("revoked_at", DateTime, nullable=True),
    UniqueConstraint("identity_id", "kid", name="uq_identity_keys_identity_kid"),
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

# Each project's change stamp: bumped (after the write commits, before its response leaves) by
# every change the event bus carries, and read by every wake request, so that a wake cached by
# any process before a change is never served after it (docs/wake.md, "the cache"). A project
# without a row has stamp 0.
change_stamps = Table(
    "change_stamps",
    metadata,
    Column("project_id", UUID, ForeignKey("projects.id"), primary_key=True),
    Column("stamp", BigInteger, nullable=False),
    # Per section of the wake (services/wake_sections.py), the stamp of the last change that
    # wrote a table the section reads (migration 0011).
    *(
        Column(f"{section}_stamp", BigInteger, nullable=False, server_default="0")
        for section in (
            "identities",
            "agents",
            "greeted",
            "runtimes",
            "owned",
            "kept",
            "remembered",
            "bonds",
        )
    ),
)

# The counts the wake shows, one row per (project, scope, kind), kept by triggers in the
# transaction of every write to the counted tables (db/counters.py; migration 0010). ``scope`` is
# an identity id, or '' for counts of the project (and for project-level memories).
wake_counts = Table(
    "wake_counts",
    metadata,
    Column("project_id", UUID, primary_key=True),
    Column("scope", UUID, primary_key=True),
    Column("kind", String(40), primary_key=True),
    Column("total", BigInteger, nullable=False),
)

# The console's signed-in browsers (docs/console.md, "Sessions"): the SHA-256 of the random
# session id the cookie carries (never the id itself, never the bearer), the project key it was
# opened with, and the form token its POSTs must carry. In the database so that every service
# process knows every session; a revoked key ends its sessions (the lookup joins api_keys).
console_sessions = Table(
    "console_sessions",
    metadata,
    Column("id_hash", String(64), primary_key=True),
    Column("api_key_id", UUID, ForeignKey("api_keys.id"), nullable=False, index=True),
    Column("project_id", UUID, ForeignKey("projects.id"), nullable=False),
    Column("csrf_token", String(64), nullable=False),
    Column("created_at", DateTime, nullable=False),
    Column("expires_at", DateTime, nullable=False),
)
