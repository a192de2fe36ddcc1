"""Checks of real responses against the service's OpenAPI document, and a project registered
over HTTP as the fuzz run and its walks need it."""

from __future__ import annotations

import re
from typing import Any

import httpx2
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from hearth.proofs import RegisterIntent, register_digest, sign_digest
from tests.support.agents import Agent, raw_public
from tests.support.live import Live

# The checks that judge one response on its own; the fuzz run (test_openapi_fuzz.py) uses all.
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]


def register_project(live: Live, visibility: str | None = None) -> tuple[Agent, dict[str, Any]]:
    """A new agent in a new project over HTTP (optionally public); returns it and the 201 body."""
    agent = Agent.new()
    body = agent.registration("Fuzz", difficulty=live.settings.pow_difficulty_bits)
    if visibility is not None:
        # The key proof binds the visibility: sign the intent again with it.
        body["expression_visibility"] = visibility
        intent = RegisterIntent(
            display_name=body["display_name"],
            signing_key=raw_public(agent.signing),
            box_key=raw_public(agent.box),
            timestamp=body["key_proof"]["timestamp"],
            registration_nonce=body["registration_nonce"],
            runtime=body["runtime"],
            expression_visibility=visibility,
        )
        body["key_proof"]["signature"] = sign_digest(agent.signing, register_digest(intent))
    with httpx2.Client(base_url=live.base_url, timeout=30) as client:
        response = client.post("/v1/register/agent", json=body)
    assert response.status_code == 201, response.text
    return agent, response.json()


def conforms(api_schema: Any, label: str, response: httpx2.Response, status: int) -> Any:
    """Check one real response against the operation ``label`` documents; return its JSON."""
    assert response.status_code == status, response.text
    method, template = label.split(" ", 1)
    # The path parameters, read back from the request sent (for the failure report's curl line).
    names = re.findall(r"\{(\w+)\}", template)
    pattern = re.sub(r"\\\{\w+\\\}", "([^/]+)", re.escape(template))
    found = re.fullmatch(pattern, response.request.url.path)
    assert found is not None, (template, response.request.url.path)
    case = api_schema[template][method].Case(
        path_parameters=dict(zip(names, found.groups(), strict=True))
    )
    case.validate_response(response, checks=CHECKS)
    return response.json() if "json" in response.headers.get("content-type", "") else None
