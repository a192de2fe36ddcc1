"""Members of a project as the bootstrap-elevation tests see them, and sponsors' statements about
them (bootstrap-elevate/v1)."""

from __future__ import annotations

from typing import Any

import httpx2
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from hearth.proofs import elevate_digest, sign_digest
from tests.support.agents import Registered

PATH = "/v1/bootstrap/elevate"


class Member(Registered):
    """A registered agent_root identity, its keys and its project's bearer."""

    @property
    def key(self) -> Ed25519PrivateKey:
        return self.agent.signing

    def elevate(self, body: dict[str, Any], *, proof: bool = True) -> httpx2.Response:
        return self.call("POST", PATH, body, proof=proof)

    def get(self, path: str, **params: Any) -> Any:
        with self.client() as client:
            response = client.get(path, params=params)
        assert response.status_code == 200, response.text
        return response.json()

    def refusals(self) -> list[dict[str, Any]]:
        return list(self.get("/v1/chronicle", kind="refusal", agent_id=self.id)["items"])


def statement(
    target: Member,
    sponsor_key: Ed25519PrivateKey,
    sponsor_did: str,
    *,
    by: str = "did",
    sponsor_id: str | None = None,
    kid: str = "primary",
    claim: str | None = None,
    credits: int | None = None,
    signed_credits: int | None = None,
    evidence: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A bootstrap-elevate/v1 statement by the sponsor about ``target``."""
    signed_claim = claim if claim is not None else "sponsorship"
    amount = credits if credits is not None else 1000
    digest = elevate_digest(
        target.id,
        sponsor_did,
        kid,
        signed_claim,
        signed_credits if signed_credits is not None else amount,
    )
    body: dict[str, Any] = {
        "agent_id": target.id,
        "sponsor_kid": kid,
        "sponsor_signature": sign_digest(sponsor_key, digest),
    }
    if by == "did":
        body["sponsor_did"] = sponsor_did
    else:
        body["sponsor_identity_id"] = sponsor_id
    if claim is not None:
        body["claim"] = claim
    if credits is not None:
        body["initial_credits"] = credits
    if evidence is not None:
        body["evidence"] = evidence
    return body


def sponsored(target: Member, sponsor: Member, **kwargs: Any) -> dict[str, Any]:
    return statement(target, sponsor.key, sponsor.did, sponsor_id=sponsor.id, **kwargs)
