"""Runtimes as the tests make them: request bodies per custody tier, a new project, the stored
row and the event log of one runtime."""

from __future__ import annotations

import uuid
from typing import Any

import httpx2
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from sqlalchemy import Connection, select

from hearth.proofs import b64_encode
from hearth.server.db.tables import runtimes as runtimes_table
from tests.support.agents import raw_public, register
from tests.support.live import Live

MASTER_KEY = "runtime tests master key"


def new_project(live: Live) -> tuple[str, str, str]:
    """(bearer, project id, agent id) of a new project."""
    _, registered = register(live)
    return (
        registered["project"]["api_key"],
        registered["project"]["id"],
        registered["agent"]["id"],
    )


def bridge_key() -> str:
    return b64_encode(raw_public(Ed25519PrivateKey.generate()))


def bridged_body(**overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "name": "night shift",
        "mode": "bridged",
        "llm": {"provider": "anthropic", "model": "claude-test", "vault_key": "anthropic-key"},
        "bridge": {"pubkey": bridge_key(), "key_id": str(uuid.uuid4())},
    }
    body.update(overrides)
    return body


def self_body(**overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"name": "laptop", "mode": "self"}
    body.update(overrides)
    return body


def trusted_body(**overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "name": "vault keeper",
        "mode": "trusted",
        "llm": {"provider": "openai", "model": "gpt-test", "vault_key": "openai-key"},
    }
    body.update(overrides)
    return body


def stored_row(conn: Connection, runtime_id: str) -> dict[str, Any]:
    return dict(
        conn.execute(select(runtimes_table).where(runtimes_table.c.id == runtime_id)).one()._mapping
    )


def create(client: httpx2.Client, body: dict[str, Any]) -> dict[str, Any]:
    response = client.post("/v1/runtimes", json=body)
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


def event_names(client: httpx2.Client, runtime_id: str) -> list[str]:
    response = client.get(f"/v1/runtimes/{runtime_id}/events")
    assert response.status_code == 200, response.text
    return [e["event"] for e in response.json()["items"]]
