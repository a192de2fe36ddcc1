"""Service settings, read from the environment with the prefix ``SERVICE_``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import Field, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from .client_address import parse_network

DEFAULT_DATABASE_URL = "sqlite+aiosqlite:///var/hearth.sqlite3"


def async_database_url(url: str) -> str:
    """Accept the plain spellings operators write and pick the async driver for them."""
    for plain, driver in (
        ("sqlite://", "sqlite+aiosqlite://"),
        ("postgresql://", "postgresql+asyncpg://"),
        ("postgres://", "postgresql+asyncpg://"),
    ):
        if url.startswith(plain):
            return driver + url[len(plain) :]
    return url


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="SERVICE_", extra="ignore")

    database_url: str = DEFAULT_DATABASE_URL
    redis_url: str | None = None
    auto_migrate: bool = True

    # The public address the service is reached at (links in bodies, package manifests, the
    # provider record). Never taken from a request (a client writes Host). Required by
    # `hearth serve` when it binds beyond loopback; on loopback it defaults to the bound address
    # (docs/operations.md, "Behind a TLS proxy").
    public_base_url: str | None = None

    pow_difficulty_bits: int = Field(default=18, ge=0, le=64)
    freshness_ms: int = Field(default=300_000, ge=1_000)
    limiter_enabled: bool = True
    self_service_limit: int = Field(default=5, ge=1)
    self_service_window_s: int = Field(default=3600, ge=1)
    registrar_limit: int = Field(default=60, ge=1)
    registrar_window_s: int = Field(default=60, ge=1)
    creation_grant_minor: int = Field(default=500, ge=0)

    max_body_bytes: int = Field(default=1_048_576, ge=1024)
    # Request heads (server/request_heads.py): the request line and all header lines together,
    # and how many header fields there may be (431 beyond either), and how long a head may take
    # from its first byte (a new connection: from its start) before 408 and a close.
    max_header_bytes: int = Field(default=32_768, ge=1024, le=1_048_576)
    max_header_count: int = Field(default=100, ge=8, le=10_000)
    header_timeout_seconds: float = Field(default=10.0, gt=0, le=3600)
    trust_proxy: bool = False  # read the client address from X-Forwarded-For
    # The proxies whose X-Forwarded-For entries are believed (addresses or CIDR networks): the
    # client is the rightmost entry that is not one of them, never the client's own claim.
    # SERVICE_TRUSTED_PROXIES: a comma-separated list or a JSON array; a bad entry stops loading.
    trusted_proxies: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: ["127.0.0.1/32", "::1/128"]
    )
    tls_certfile: Path | None = None
    tls_keyfile: Path | None = None
    behind_tls_proxy: bool = False

    packages_dir: Path = Path("var/dist")
    federation_enabled: bool = False
    kms_master_key: str | None = None

    # ADDS provider node (docs/service.md, "Provider node").
    blocks_dir: Path = Path("var/blocks")
    # Unset: the blocks are a FileBlockStore at blocks_dir. ``s3://bucket/prefix``: an
    # S3-compatible object store, reached with the standard AWS_* settings, which several
    # service processes on several machines can share (docs/blockstore.md, "S3BlockStore").
    blockstore_url: str | None = None
    # PKCS#8 PEM Ed25519. Unset: one key is generated on first use and kept in the database
    # (wrapped under kms_master_key when that is set), so that every worker signs with it.
    provider_key_file: Path | None = None
    # The provider's principal id in its records and receipts. Unset: the host (and port) of
    # public_base_url.
    provider_id: str | None = Field(default=None, min_length=1, max_length=200)
    # POST /v1/identities/import: a whole exported life (a CAR file), spooled to disk.
    max_import_bytes: int = Field(default=256 * 1024 * 1024, ge=1024)
    # A block is at most one chunk of 16 MiB (the largest chunk_size) plus its 16-byte tag.
    max_block_bytes: int = Field(default=16 * 1024 * 1024 + 16, ge=16)
    receipt_retention_days: int = Field(default=365, ge=1, le=36_500)
    # A stored block is in the provider record at once when no record was signed in this many
    # seconds, else at the end of them: a burst of uploads is one new record, not one per block.
    provider_record_delay_seconds: float = Field(default=5.0, ge=0, le=3600)
    # Temporary files a crashed upload left in the block store are removed at start and then
    # every interval, once older than the age (a live upload's temp file is never touched).
    blocks_sweep_interval_seconds: float = Field(default=600.0, gt=0)
    blocks_sweep_age_seconds: float = Field(default=3600.0, ge=0)

    # The semantic leg of memory search (docs/memory.md, "Semantic search"): off by default; on,
    # the service embeds memories with all-MiniLM-L6-v2 (the 'semantic' extra) and fuses the
    # meaning ranking with the full-text one. Memories written around the service are embedded
    # at start and then every interval.
    semantic_search: bool = False
    semantic_catch_up_seconds: float = Field(default=30.0, gt=0)
    # Vectors a process keeps in memory for searching (1.5 kB each; the least recently searched
    # projects are dropped beyond it): 250,000 is about 384 MB.
    semantic_cache_vectors: int = Field(default=250_000, ge=1)

    # The voice stream (GET /v1/wake/voice): seconds between `welcome` events (spec: about 15),
    # and how many changes may wait for a slow client before its stream is ended.
    voice_welcome_seconds: float = Field(default=15.0, gt=0, le=3600)
    voice_queue_size: int = Field(default=256, ge=2, le=100_000)

    # The console (docs/console.md): how long a browser's session lasts after signing in.
    console_session_hours: float = Field(default=12.0, gt=0, le=24 * 30)

    # Hosted runtimes (docs/orchestrator.md). Seconds are floats so that tests run them short.
    runtime_idle_seconds: float = Field(default=300.0, gt=0)  # running -> idle without work
    runtime_auto_stop_seconds: float = Field(default=86_400.0, gt=0)  # idle -> stopped (free)
    runtime_heartbeat_seconds: float = Field(default=30.0, gt=0)  # lease renewal, last_seen_at
    # A lease outlives a few missed heartbeats before another worker may take the runtime over.
    runtime_lease_seconds: float = Field(default=90.0, gt=0)
    runtime_poll_seconds: float = Field(default=1.0, gt=0)  # how often a worker looks for work
    runtime_retry_seconds: float = Field(default=30.0, ge=0)  # pause after a failed cycle
    runtime_max_per_worker: int = Field(default=500, ge=1)  # runtimes one worker holds
    runtime_concurrency: int = Field(default=16, ge=1)  # think cycles one worker runs at once
    runtime_recent_thoughts: int = Field(default=20, ge=0, le=200)  # read into each prompt
    worker_in_process: bool = True  # `hearth serve` runs an orchestrator worker too
    llm_anthropic_base_url: str | None = None  # None: the SDK's default (api.anthropic.com)
    llm_openai_base_url: str | None = None  # None: the SDK's default (api.openai.com/v1)
    llm_timeout_seconds: float = Field(default=60.0, gt=0)
    llm_max_retries: int = Field(default=2, ge=0, le=10)
    llm_max_tokens: int = Field(default=1024, ge=1, le=65_536)

    # Redis is optional: a Redis that hangs, refuses or is absent adds at most this much to a
    # request (each call's whole deadline), and then a breaker skips it for a while.
    redis_timeout_ms: int = Field(default=50, ge=1, le=10_000)
    # After a failed call, how long Redis is skipped (the limiter fails open, changes reach this
    # process only) before one call probes it again.
    redis_breaker_seconds: float = Field(default=5.0, ge=0, le=3600)

    log_format: Literal["json", "console"] = "json"
    log_level: str = "info"

    @field_validator("database_url")
    @classmethod
    def _driver(cls, value: str) -> str:
        return async_database_url(value)

    @field_validator("public_base_url")
    @classmethod
    def _strip(cls, value: str | None) -> str | None:
        if not value:
            return None
        # Links, the provider record's endpoint and its id are built on it: an address only.
        parts = urlsplit(value)
        if (
            parts.scheme not in {"http", "https"}
            or not parts.hostname
            or parts.username is not None
            or parts.query
            or parts.fragment
        ):
            raise ValueError(
                "public_base_url must be an http(s) URL of host, port and path only, "
                "such as https://hearth.example.org"
            )
        return value.rstrip("/")

    @field_validator("trusted_proxies", mode="before")
    @classmethod
    def _proxy_list(cls, value: object) -> object:
        if isinstance(value, str):  # from the environment
            text = value.strip()
            if text.startswith("["):
                try:
                    return json.loads(text)
                except json.JSONDecodeError as exc:
                    raise ValueError(f"trusted_proxies is not a JSON array: {exc}") from None
            return [entry.strip() for entry in text.split(",") if entry.strip()]
        return value

    @field_validator("trusted_proxies")
    @classmethod
    def _proxy_networks(cls, value: list[str]) -> list[str]:
        return [parse_network(entry).with_prefixlen for entry in value]

    @model_validator(mode="after")
    def _lease_outlives_heartbeat(self) -> Settings:
        # A lease renewed every heartbeat must not lapse between two renewals.
        if self.runtime_lease_seconds <= self.runtime_heartbeat_seconds:
            raise ValueError("runtime_lease_seconds must be longer than runtime_heartbeat_seconds")
        return self

    @property
    def is_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite")
