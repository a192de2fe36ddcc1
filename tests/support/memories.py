"""An identity that stores, elevates and reads its memories and its chronicle over HTTP."""

from __future__ import annotations

from typing import Any

import httpx2
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from hearth.proofs import did_key_for_ed25519, memory_attestation_digest, sign_digest
from tests.support.agents import Registered, raw_public


def witness(memory: dict[str, Any]) -> dict[str, Any]:
    """An external did:key witness's attestation over the memory's exact content."""
    key = Ed25519PrivateKey.generate()
    did = did_key_for_ed25519(raw_public(key))
    digest = memory_attestation_digest(memory["id"], memory["content"].encode(), did, "w-1")
    return {"attester_did": did, "signing_key_id": "w-1", "signature": sign_digest(key, digest)}


class Owner(Registered):
    """A registered agent_root identity and its project, talking to the live service."""

    @property
    def root_b64(self) -> str:
        return self.agent.public_b64

    def store(self, content: str, *, proof: bool = False, **fields: Any) -> dict[str, Any]:
        response = self.call("POST", "/v1/memories", {"content": content, **fields}, proof=proof)
        assert response.status_code == 201, response.text
        return dict(response.json())

    def elevate(self, memory_id: str, body: dict[str, Any], *, proof: bool = True) -> Any:
        return self.call("POST", f"/v1/memories/{memory_id}/elevate", body, proof=proof)

    def chronicle(self, **params: Any) -> list[dict[str, Any]]:
        with self.client() as client:
            response = client.get("/v1/chronicle", params=params)
        assert response.status_code == 200, response.text
        return list(response.json()["items"])

    def memory(self, memory_id: str) -> httpx2.Response:
        with self.client() as client:
            return client.get(f"/v1/memories/{memory_id}")
