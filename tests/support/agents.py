"""Agents as the callers' side of arrival: keys, registration bodies built from ``hearth.proofs``
alone (independent of the SDK), root-proof headers, and a registered identity that calls the
service."""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Self

import httpx2
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from hearth.proofs import (
    RegisterIntent,
    authority_digest,
    b64_encode,
    format_timestamp,
    register_digest,
    sign_digest,
    solve_pow,
)
from hearth.server.settings import Settings
from tests.support.live import Live

# Every wallet is born with the default creation grant (Settings.creation_grant_minor).
GRANT = Settings.model_fields["creation_grant_minor"].default


def raw_public(key: Ed25519PrivateKey | X25519PrivateKey) -> bytes:
    return key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)


def now_text(offset_s: float = 0) -> str:
    return format_timestamp(datetime.now(UTC) + timedelta(seconds=offset_s))


@dataclass
class Agent:
    signing: Ed25519PrivateKey
    box: X25519PrivateKey

    @classmethod
    def new(cls) -> Agent:
        return cls(Ed25519PrivateKey.generate(), X25519PrivateKey.generate())

    @property
    def public_b64(self) -> str:
        return b64_encode(raw_public(self.signing))

    def registration(
        self,
        name: str = "Wren",
        *,
        difficulty: int = 8,
        timestamp: str | None = None,
        nonce: str | None = None,
        registrar_bearer: str | None = None,
        parent: str | None = None,
        sign_with: Ed25519PrivateKey | None = None,
        capabilities: list[str] | None = None,
    ) -> dict[str, Any]:
        timestamp = timestamp or now_text()
        nonce = nonce or secrets.token_urlsafe(24)
        mode = "registrar_bearer" if registrar_bearer else "self_service"
        runtime = {"provider": "local", "model": "test"}
        intent = RegisterIntent(
            display_name=name,
            signing_key=raw_public(self.signing),
            box_key=raw_public(self.box),
            timestamp=timestamp,
            registration_nonce=nonce,
            capabilities=capabilities,
            runtime=runtime,
            registrar_kind=mode,
            parent_identity_id=parent,
            registrar_bearer=registrar_bearer,
        )
        body: dict[str, Any] = {
            "display_name": name,
            "agent_public_key": self.public_b64,
            "box_public_key": b64_encode(raw_public(self.box)),
            "runtime": runtime,
            "key_proof": {
                "timestamp": timestamp,
                "signature": sign_digest(sign_with or self.signing, register_digest(intent)),
            },
            "registration_nonce": nonce,
        }
        if capabilities is not None:
            body["capabilities"] = capabilities
        if registrar_bearer:
            body["registrar"] = {"bearer": registrar_bearer}
            if parent:
                body["registrar"]["parent_identity_id"] = parent
        else:
            body["pow_nonce"] = solve_pow(self.public_b64, name, timestamp, difficulty)
        return body

    def root_headers(
        self,
        did: str,
        method: str,
        target: str,
        body: bytes,
        sequence: int,
        *,
        timestamp: str | None = None,
    ) -> dict[str, str]:
        timestamp = timestamp or now_text()
        digest = authority_digest(did, method, target, body, sequence=sequence, timestamp=timestamp)
        return {
            "X-Service-Authority-Sequence": str(sequence),
            "X-Service-Authority-Timestamp": timestamp,
            "X-Service-Authority-Signature": sign_digest(self.signing, digest),
            "Content-Type": "application/json",
        }


def register(live: Live, agent: Agent | None = None, **kwargs: Any) -> tuple[Agent, dict[str, Any]]:
    agent = agent or Agent.new()
    with live.client() as client:
        response = client.post(
            "/v1/register/agent",
            json=agent.registration(difficulty=live.settings.pow_difficulty_bits, **kwargs),
        )
    assert response.status_code == 201, response.text
    return agent, response.json()


def body_bytes(value: Any) -> bytes:
    """A JSON body as the tests send it: compact, so the signed bytes are the sent bytes."""
    return json.dumps(value, separators=(",", ":")).encode()


@dataclass
class Registered:
    """A registered agent_root identity, its keys and its project's bearer, on a live service."""

    live: Live
    agent: Agent
    reg: dict[str, Any]

    @classmethod
    def new(cls, live: Live) -> Self:
        agent, reg = register(live)
        return cls(live, agent, reg)

    @property
    def id(self) -> str:
        return str(self.reg["agent"]["id"])

    @property
    def did(self) -> str:
        return str(self.reg["agent"]["did"])

    def client(self) -> httpx2.Client:
        return self.live.client(self.reg["project"]["api_key"])

    def next_sequence(self) -> int:
        with self.client() as client:
            return int(client.get(f"/v1/identities/{self.id}/authority").json()["next_sequence"])

    def call(
        self, method: str, path: str, body: Any = None, *, proof: bool = False
    ) -> httpx2.Response:
        """``method path`` with ``body`` as JSON; with ``proof``, signed by the root key."""
        content = body_bytes(body) if body is not None else b""
        headers = {"Content-Type": "application/json"} if body is not None else {}
        if proof:
            headers = self.agent.root_headers(self.did, method, path, content, self.next_sequence())
        with self.client() as client:
            return client.request(method, path, content=content or None, headers=headers)
