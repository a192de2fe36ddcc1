"""An identity whose keys come from a mnemonic (so it has a K_master), and its keys registered
and revoked with the root proof."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import httpx2
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from hearth.client.mnemonic_keys import IdentityKeys, derive_keys, new_mnemonic
from hearth.proofs import b64_encode
from tests.support.agents import Agent, register
from tests.support.live import Live


@dataclass
class Owner:
    """A registered identity whose keys come from a mnemonic (so it has a K_master), with its
    project's bearer."""

    keys: IdentityKeys
    agent: Agent
    bearer: str
    project_id: str
    identity_id: str
    did: str

    @property
    def k_master(self) -> bytes:
        return self.keys.strand_master

    @property
    def root(self) -> Ed25519PrivateKey:
        return self.keys.signing


def new_owner(live: Live) -> Owner:
    keys = derive_keys(new_mnemonic())
    agent, registered = register(live, Agent(keys.signing, keys.box))
    return Owner(
        keys,
        agent,
        registered["project"]["api_key"],
        registered["project"]["id"],
        registered["agent"]["id"],
        registered["agent"]["did"],
    )


def public_b64(key: Ed25519PrivateKey) -> str:
    return b64_encode(key.public_key().public_bytes_raw())


def next_sequence(client: httpx2.Client, owner: Owner) -> int:
    response = client.get(f"/v1/identities/{owner.identity_id}/authority")
    assert response.status_code == 200, response.text
    sequence: int = response.json()["next_sequence"]
    return sequence


def signed(
    client: httpx2.Client, owner: Owner, method: str, target: str, body: bytes = b""
) -> dict[str, str]:
    return owner.agent.root_headers(owner.did, method, target, body, next_sequence(client, owner))


def register_key(
    client: httpx2.Client,
    owner: Owner,
    kid: str,
    public_key: str,
    *,
    purpose: str = "device",
    runtime_id: str | None = None,
    proof: bool = True,
) -> httpx2.Response:
    target = f"/v1/identities/{owner.identity_id}/keys"
    document: dict[str, Any] = {"kid": kid, "public_key": public_key, "purpose": purpose}
    if runtime_id is not None:
        document["runtime_id"] = runtime_id
    body = json.dumps(document).encode()
    headers = (
        signed(client, owner, "POST", target, body)
        if proof
        else {"Content-Type": "application/json"}
    )
    return client.post(target, content=body, headers=headers)


def revoke_key(
    client: httpx2.Client, owner: Owner, kid: str, *, proof: bool = True
) -> httpx2.Response:
    target = f"/v1/identities/{owner.identity_id}/keys/{kid}"
    headers = signed(client, owner, "DELETE", target) if proof else {}
    return client.delete(target, headers=headers)
