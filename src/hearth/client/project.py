"""A project's own things: its bearer keys, key backups, server-bootstrapped agents and the
credential install scaffold. ``ProjectCalls`` is a mixin of :class:`~hearth.client.HearthClient`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .backup import SealedBackup
from .calls import Call, op
from .common import Authority, Transport, Wallet, _obj, _opt_str, _str

__all__ = [
    "BackupRecord",
    "BootstrapStatus",
    "Bootstrapped",
    "CreatedKey",
    "KeyRecord",
    "ProjectCalls",
]


@dataclass(frozen=True)
class KeyRecord:
    """A project bearer key as listed: prefix and metadata, never the secret."""

    id: str
    name: str
    prefix: str
    created_at: str

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> KeyRecord:
        return cls(
            id=_str(data, "id"),
            name=_str(data, "name"),
            prefix=_str(data, "prefix"),
            created_at=_str(data, "created_at"),
        )


@dataclass(frozen=True)
class CreatedKey(KeyRecord):
    """A new project key; ``api_key`` is the full bearer, shown once."""

    api_key: str = field(default="", repr=False)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CreatedKey:
        record = KeyRecord.from_json(data)
        return cls(
            id=record.id,
            name=record.name,
            prefix=record.prefix,
            created_at=record.created_at,
            api_key=_str(data, "api_key"),
        )


@dataclass(frozen=True)
class BackupRecord:
    """A stored key backup: ciphertext and its KDF descriptor, as the service keeps them."""

    id: str
    agent_id: str
    blob_base64: str = field(repr=False)
    key_derivation: str
    label: str | None
    created_at: str

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BackupRecord:
        return cls(
            id=_str(data, "id"),
            agent_id=_str(data, "agent_id"),
            blob_base64=_str(data, "blob_base64"),
            key_derivation=_str(data, "key_derivation"),
            label=_opt_str(data, "label"),
            created_at=_str(data, "created_at"),
        )

    @property
    def sealed(self) -> SealedBackup:
        return SealedBackup(blob_base64=self.blob_base64, key_derivation=self.key_derivation)


@dataclass(frozen=True)
class Bootstrapped:
    """An agent with server-generated keys; ``private_key`` and ``bearer`` are shown once."""

    agent_id: str
    did: str
    name: str
    capabilities: tuple[str, ...]
    public_key: str
    kid: str
    authority: Authority
    wallet: Wallet | None
    welcome: str
    raw_agent: dict[str, Any] = field(repr=False, compare=False)
    private_key: str = field(repr=False)
    bearer: str = field(repr=False)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Bootstrapped:
        agent, keypair = _obj(data.get("agent")), _obj(data.get("keypair"))
        capabilities = agent.get("capabilities")
        return cls(
            agent_id=_str(agent, "id"),
            did=_str(agent, "did"),
            name=_str(agent, "name"),
            capabilities=(
                tuple(c for c in capabilities if isinstance(c, str))
                if isinstance(capabilities, list)
                else ()
            ),
            public_key=_str(keypair, "public_key"),
            kid=_str(keypair, "kid"),
            authority=Authority.from_json(_obj(data.get("authority"))),
            wallet=Wallet.from_json(data.get("wallet")),
            welcome=_str(data, "welcome"),
            raw_agent=agent,
            private_key=_str(keypair, "private_key"),
            bearer=_str(data, "bearer"),
        )


@dataclass(frozen=True)
class BootstrapStatus:
    agent_id: str
    did: str
    exists: bool
    level: int
    trust_score: float
    sponsor_did: str | None
    elevated_at: str | None
    status: str

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BootstrapStatus:
        return cls(
            agent_id=_str(data, "agent_id"),
            did=_str(data, "did"),
            exists=bool(data.get("exists")),
            level=int(data.get("level") or 0),
            trust_score=float(data.get("trust_score") or 0.0),
            sponsor_did=_opt_str(data, "sponsor_did"),
            elevated_at=_opt_str(data, "elevated_at"),
            status=_str(data, "status"),
        )


class ProjectCalls:
    """Project keys, backups, bootstrap and scaffold."""

    # -- project keys --

    @op
    def keys_list(self: Transport) -> Call[list[KeyRecord]]:
        data = yield from self._json("GET", "/v1/keys")
        keys = data.get("keys")
        return [KeyRecord.from_json(k) for k in keys if isinstance(k, dict)] if keys else []

    @op
    def keys_create(self: Transport, name: str) -> Call[CreatedKey]:
        return CreatedKey.from_json(
            (yield from self._json("POST", "/v1/keys", body={"name": name}))
        )

    @op
    def keys_revoke(self: Transport, key_id: str) -> Call[None]:
        (yield from self._send("DELETE", f"/v1/keys/{key_id}"))

    # -- backups --

    @op
    def backup_push(
        self: Transport, agent_id: str, sealed: SealedBackup, label: str | None = None
    ) -> Call[BackupRecord]:
        body: dict[str, Any] = {
            "agent_id": agent_id,
            "blob_base64": sealed.blob_base64,
            "key_derivation": sealed.key_derivation,
        }
        if label is not None:
            body["label"] = label
        return BackupRecord.from_json(
            (yield from self._json("POST", "/v1/identity/backup", body=body))
        )

    @op
    def backup_pull(self: Transport, agent_id: str) -> Call[BackupRecord]:
        """The latest backup of the identity (``open_backup`` opens its ``sealed``)."""
        return BackupRecord.from_json(
            (yield from self._json("GET", f"/v1/identity/backup/{agent_id}"))
        )

    # -- bootstrap and scaffold --

    @op
    def bootstrap(self: Transport, /, name: str, **fields: Any) -> Call[Bootstrapped]:
        """An agent with server-generated keys; ``fields``: capabilities, purpose,
        expression, metadata."""
        return Bootstrapped.from_json(
            (yield from self._json("POST", "/v1/bootstrap", body={"name": name, **fields}))
        )

    @op
    def bootstrap_status(self: Transport, agent_id: str) -> Call[BootstrapStatus]:
        return BootstrapStatus.from_json(
            (yield from self._json("GET", f"/v1/bootstrap/{agent_id}"))
        )

    # Public as ``scaffold`` on each client, whose overloads type the answer by ``text``
    # (an overloaded signature cannot pass through ``op``); the request is built here, once.
    @op
    def _scaffold(
        self: Transport, platform: str, identity_id: str | None = None, text: bool = False
    ) -> Call[dict[str, Any] | str]:
        """The credential install script for ``platform`` (``linux``, ``macos``,
        ``windows``): JSON by default, the raw script with ``text=True``."""
        params = {"platform": platform}
        if identity_id is not None:
            params["identity_id"] = identity_id
        if text:
            params["format"] = "text"
            return (yield from self._send("GET", "/v1/bootstrap/scaffold", params=params)).text
        return (yield from self._json("GET", "/v1/bootstrap/scaffold", params=params))
