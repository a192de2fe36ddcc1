"""The OpenAPI contract, fuzzed over real HTTP with every schemathesis check, on SQLite and on
PostgreSQL: no 5xx, every response as documented, and the document as strict as the service.

``schemathesis run --checks all`` (its command line, as an outside audit runs it) reads
``/v1/openapi.json`` from the live service and runs every phase: schema examples, coverage
cases, random fuzzing (valid and invalid data), and stateful sequences that follow the links
it infers. Every check applies, among them ``positive_data_acceptance`` (a request the document
allows is not refused as invalid), ``negative_data_rejection`` (one it forbids is refused),
``unsupported_method`` and ``allow_header_conformance`` (405 with the path's methods in
``Allow``), ``ignored_auth``, ``use_after_free``, ``ensure_resource_availability`` and
``object_level_authorization`` (two projects: what one creates, the other must not read). The
run is bounded (``MAX_EXAMPLES`` per operation, a fixed seed) so that CI stays fast;
``OPENAPI_FUZZ_MAX_EXAMPLES`` and ``OPENAPI_FUZZ_SEED`` make a deeper or another run by hand.

Some refusals depend on things no JSON Schema can state: whether a signature verifies, a key is
an Ed25519 point, bytes hash to a CID, a wallet can pay, or what the project already holds.
``TOLERATED`` lists, per operation and with the reason, the statuses
``positive_data_acceptance`` also accepts there; docs/service.md ("The OpenAPI document") says
the same. Every other rule of a request is in the document.

Generated ids almost never name a real resource, so success responses of the routes that take
one are checked by walks over real ids (the same response checks, on responses to requests made
here): every bearer route, the root-proof mutation and the memory routes with correct proofs.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
import schemathesis
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat

from hearth.proofs import AUTHORITY_HEADERS
from tests.support.agents import Agent
from tests.support.live import Live, live_on
from tests.support.openapi import conforms, register_project

MAX_EXAMPLES = int(os.environ.get("OPENAPI_FUZZ_MAX_EXAMPLES", "10"))
SEED = int(os.environ.get("OPENAPI_FUZZ_SEED", "1"))
# Generous: a run takes about a minute; this only stops a hung one.
RUN_TIMEOUT_S = 900

# What ``positive_data_acceptance`` accepts for a request the document allows (its default),
# and, per operation, the statuses it accepts besides, with the reason no schema can say.
ACCEPTED = ["2xx", "3xx", "401", "403", "404", "409", "429", "5xx"]
# Every operation that declares the root-proof headers: a request without them is answered 428
# (with the recipe), one with proof headers that do not verify 422. Found in the document.
ROOT_PROOF = (422, 428)
TOLERATED: dict[str, tuple[tuple[int, ...], str]] = {
    "POST /v1/register": ((410,), "retired: always 410 Gone (deprecated in the document)"),
    "POST /v1/register/agent": ((422,), "the key proof's signature and the proof of work"),
    "POST /public/identities/by-pubkey": ((422,), "the signature, and a key that is a point"),
    "POST /v1/attestations": ((422,), "the sponsor's signature"),
    "POST /v1/strands/{id}/thoughts": ((422,), "the signature over the exact thought"),
    "POST /v1/adds/documents": ((422,), "the document's signature and ADDS rules"),
    "PUT /v1/adds/blocks/{cid}": ((422,), "the bytes must hash to the CID"),
    "GET /ipfs/{cid}": ((400,), "the format may come from Accept (no OpenAPI parameter) instead"),
    "HEAD /ipfs/{cid}": ((400,), "the format may come from Accept (no OpenAPI parameter) instead"),
    "POST /v1/runtimes": ((422,), "bridge.pubkey must be an Ed25519 point"),
    "PATCH /v1/runtimes/{id}": ((422,), "what is required depends on the stored runtime"),
    "GET /v1/bootstrap/scaffold": ((422,), "identity_id is required when the project has several"),
    "POST /v1/strands": ((422,), "runtime_id must name a runtime bound to identity_id"),
    "POST /v1/identities/{id}/fork": (
        (402, 422),
        "the paying wallet's balance; new_name and display_name must be equal when both are sent",
    ),
    "POST /v1/templates/{template_id}/purchase": ((402,), "the paying wallet's balance"),
    "GET /v1/memories/search": (
        (422,),
        "q must be read by the query language (closed quotes, a prefix of two letters or more, "
        "at least one word): docs/memory.md",
    ),
    "POST /v1/wallets/{wallet_id}/fund": ((402,), "the source wallet's balance"),
    "POST /v1/identities/import": (
        (422,),
        "the body must be a signed exported life and the headers its root key's proof",
    ),
}

# DELETE /v1/keys/{key_id} revokes a project key. In the main run it could (with the id GET
# /v1/keys lists) revoke the run's own bearer and turn every later call into a 401, so it has a
# run of its own, with the bearer of a throwaway project: whatever it revokes belongs to nobody
# else, and another project's keys do not exist for it.
REVOKING = "DELETE /v1/keys/{key_id}"
# The voice stream sends `connected` at once, then an event every few seconds: one is enough.
STREAMING = "GET /v1/wake/voice"
PEERS = ["owner", "peer"]


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def live(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Live]:
    tmp = tmp_path_factory.mktemp(f"openapi_fuzz_{request.param}")
    # A configured deployment: with no service signing key GET /v1/mathos/public-key is a
    # (documented) 503 by design, and a 5xx is what this test refuses. The route reads the
    # variable on each call, in this process (the service runs on a thread of it).
    key_file = tmp / "service-signing-key.pem"
    key_file.write_bytes(
        Ed25519PrivateKey.generate().private_bytes(
            Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()
        )
    )
    # The limiter stays on (its path is part of the contract) with room for every registration.
    # With a KMS master key, a fuzzed body that is a valid trusted runtime is provisioned
    # (201) instead of the documented 501 the fuzzer would count as a failure.
    overrides = {"self_service_limit": 100_000, "kms_master_key": "ab" * 32}
    with (
        pytest.MonkeyPatch.context() as patch,
        live_on(request.param, tmp, **overrides) as service,
    ):
        patch.setenv("SERVICE_SIGNING_KEY_FILE", str(key_file))
        yield service


@pytest.fixture(scope="module")
def owner(live: Live) -> tuple[Agent, dict[str, Any]]:
    """The run's project: its bearer goes on every call. A public agent elsewhere fills the
    public directory, so its listing and detail answer with real entries too."""
    register_project(live, visibility="public")
    return register_project(live)


@pytest.fixture(scope="module")
def bearer(owner: tuple[Agent, dict[str, Any]]) -> str:
    token: str = owner[1]["project"]["api_key"]
    return token


@pytest.fixture(scope="module")
def api_schema(live: Live) -> Any:
    # An explicit default config: a schemathesis.toml lying around does not change this test.
    return schemathesis.openapi.from_url(
        f"{live.base_url}/v1/openapi.json", config=schemathesis.Config()
    )


def root_proof_operations(document: dict[str, Any]) -> list[str]:
    """The labels of the operations that declare the root-proof headers."""
    return [
        f"{method.upper()} {path}"
        for path, item in document["paths"].items()
        for method, operation in item.items()
        if {p["name"] for p in operation.get("parameters", [])} >= set(AUTHORITY_HEADERS)
    ]


def _toml(value: Any) -> str:
    return json.dumps(value)  # strings, numbers and lists of them are the same in TOML


def fuzz_config(document: dict[str, Any], peers: Path | None = None) -> str:
    """The schemathesis.toml of a run: per-operation settings, and the projects of ``peers``
    (a Web Fuzzing Commons auth file) when given; the rest is on the command line."""
    tolerated = {label: set(statuses) for label, (statuses, _) in TOLERATED.items()}
    for label in root_proof_operations(document):
        tolerated.setdefault(label, set()).update(ROOT_PROOF)
    lines = []
    for label, statuses in sorted(tolerated.items()):
        accepted = ACCEPTED + [str(s) for s in sorted(statuses)]
        lines += [
            "[[operations]]",
            f"include-name = {_toml(label)}",
            f"checks.positive_data_acceptance.expected-statuses = {_toml(accepted)}",
            "",
        ]
    lines += ["[[operations]]", f"include-name = {_toml(STREAMING)}", "max-stream-events = 1", ""]
    if peers is not None:
        lines += ["[auth.wfc]", f"path = {_toml(str(peers))}", f"peers = {_toml(PEERS)}"]
    return "\n".join(lines) + "\n"


def peers_file(path: Path, bearers: list[str]) -> Path:
    """Two projects as the users of ``object_level_authorization``: what one creates, the other
    must not read (``ignored_auth`` probes each operation without them)."""
    users = [
        {"name": name, "fixedHeaders": [{"name": "Authorization", "value": f"Bearer {bearer}"}]}
        for name, bearer in zip(PEERS, bearers, strict=True)
    ]
    path.write_text(json.dumps({"auth": users}))
    return path


def schemathesis_run(live: Live, config: Path, *options: str) -> tuple[int, str]:
    """One ``schemathesis run`` with every check; (operations tested, its report)."""
    command = [
        sys.executable,
        "-m",
        "schemathesis.cli",
        "--no-color",
        "--config-file",
        str(config),
        "run",
        f"{live.base_url}/v1/openapi.json",
        *options,
        "--checks",
        "all",
        "--max-examples",
        str(MAX_EXAMPLES),
        "--seed",
        str(SEED),
        "--workers",
        "1",
        # Hypothesis's health checks that time data generation measure the machine, not the
        # service: on a loaded CI machine they fail a run that found nothing wrong.
        "--suppress-health-check",
        "too_slow",
        "--output-truncate",
        "false",
    ]
    run = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        cwd=config.parent,  # its report directory, and no stray schemathesis.toml, are here
        check=False,
    )
    report = run.stdout + run.stderr
    assert run.returncode == 0, report[-20_000:]
    tested = re.search(r"Tested: +(\d+)", report)
    assert tested is not None, report[-3_000:]
    return int(tested.group(1)), report


def test_every_check_passes(live: Live, bearer: str, tmp_path: Path) -> None:
    with live.client() as client:
        document = client.get("/v1/openapi.json").json()
    peer = register_project(live)[1]["project"]["api_key"]
    config = tmp_path / "schemathesis.toml"
    config.write_text(fuzz_config(document, peers_file(tmp_path / "peers.json", [bearer, peer])))
    tested, _ = schemathesis_run(live, config, "--exclude-name", REVOKING)
    throwaway = register_project(live)[1]["project"]["api_key"]
    alone = tmp_path / "revoking.toml"
    alone.write_text(fuzz_config(document))
    revoking, _ = schemathesis_run(
        live,
        alone,
        "--include-name",
        REVOKING,
        "--header",
        f"Authorization: Bearer {throwaway}",
    )
    # Every operation of the document was run (none skipped for want of a schema it reads).
    assert tested + revoking == sum(len(item) for item in document["paths"].values())


def authed(live: Live, registered: dict[str, Any]) -> httpx2.Client:
    bearer = registered["project"]["api_key"]
    return httpx2.Client(
        base_url=live.base_url, headers={"Authorization": f"Bearer {bearer}"}, timeout=30
    )


def test_real_resources_answer_as_documented(
    live: Live, api_schema: Any, owner: tuple[Agent, dict[str, Any]]
) -> None:
    """Random ids mostly meet 404s, so the success shapes get their own walk over real ids."""
    registered = owner[1]
    identity = registered["agent"]["id"]
    with authed(live, registered) as client:
        conforms(
            api_schema,
            "GET /v1/identities/{id}/authority",
            client.get(f"/v1/identities/{identity}/authority"),
            200,
        )
        conforms(
            api_schema, "GET /v1/bootstrap/{agent_id}", client.get(f"/v1/bootstrap/{identity}"), 200
        )
        backup = {"agent_id": identity, "blob_base64": "AAAA", "key_derivation": "scrypt"}
        conforms(
            api_schema,
            "POST /v1/identity/backup",
            client.post("/v1/identity/backup", json=backup),
            201,
        )
        conforms(
            api_schema,
            "GET /v1/identity/backup/{agent_id}",
            client.get(f"/v1/identity/backup/{identity}"),
            200,
        )
        for query in (
            {"platform": "linux", "identity_id": identity},
            {"platform": "windows", "identity_id": identity, "format": "text"},
        ):
            conforms(
                api_schema,
                "GET /v1/bootstrap/scaffold",
                client.get("/v1/bootstrap/scaffold", params=query),
                200,
            )
        conforms(
            api_schema,
            "POST /v1/bootstrap",
            client.post("/v1/bootstrap", json={"name": "Boot"}),
            201,
        )
        # A second key, then revoke it (never the bearer this walk runs on).
        created = conforms(
            api_schema, "POST /v1/keys", client.post("/v1/keys", json={"name": "spare"}), 201
        )
        conforms(api_schema, "GET /v1/keys", client.get("/v1/keys"), 200)
        conforms(
            api_schema,
            "DELETE /v1/keys/{key_id}",
            client.delete(f"/v1/keys/{created['id']}"),
            204,
        )
        page = conforms(api_schema, "GET /public/agents", client.get("/public/agents"), 200)
        assert page["agents"], "the public agent registered by the fixture is listed"
        did = page["agents"][0]["did"]
        conforms(api_schema, "GET /public/agents/{did}", client.get(f"/public/agents/{did}"), 200)
        conforms(
            api_schema,
            "GET /v1/identities/{id}/authority",
            client.get(f"/v1/identities/{identity}/authority", headers={"Authorization": ""}),
            401,
        )


def test_root_proof_mutation_answers_as_documented(live: Live, api_schema: Any) -> None:
    """PUT /v1/identities/{id}/expression: without the proof, with it, and replayed."""
    agent, registered = register_project(live)
    identity, did = registered["agent"]["id"], registered["agent"]["did"]
    target = f"/v1/identities/{identity}/expression"
    label = "PUT /v1/identities/{id}/expression"
    body = b'{"register":"plain","walls":["no_self_witnessing"],"wake_text":"hello"}'
    with authed(live, registered) as client:
        plain = {"Content-Type": "application/json"}
        refused = conforms(api_schema, label, client.put(target, content=body, headers=plain), 428)
        headers = agent.root_headers(did, "PUT", target, body, refused["details"]["next_sequence"])
        conforms(api_schema, label, client.put(target, content=body, headers=headers), 200)
        conforms(api_schema, label, client.put(target, content=body, headers=headers), 409)


def test_memory_routes_answer_as_documented(live: Live, api_schema: Any) -> None:
    """Memories, elevation (with and without the root proof, refused and accepted), deletion,
    the chronicle and the expression state, on real ids."""
    agent, registered = register_project(live)
    identity, did = registered["agent"]["id"], registered["agent"]["did"]
    plain = {"Content-Type": "application/json"}

    def signed(client: httpx2.Client, method: str, target: str, body: bytes) -> dict[str, str]:
        sequence = client.get(f"/v1/identities/{identity}/authority").json()["next_sequence"]
        return agent.root_headers(did, method, target, body, sequence)

    with authed(live, registered) as client:
        stored = conforms(
            api_schema,
            "POST /v1/memories",
            client.post("/v1/memories", json={"content": "a memory", "agent_id": identity}),
            201,
        )
        memory = f"/v1/memories/{stored['id']}"
        founding = b'{"content":"founding","type":"foundational","agent_id":"%s"}' % (
            identity.encode()
        )
        conforms(
            api_schema,
            "POST /v1/memories",
            client.post("/v1/memories", content=founding, headers=plain),
            428,
        )
        conforms(
            api_schema,
            "POST /v1/memories",
            client.post("/v1/memories", json={"content": "x", "type": "constitutive"}),
            422,
        )
        conforms(api_schema, "GET /v1/memories", client.get("/v1/memories"), 200)
        conforms(api_schema, "GET /v1/memories/{id}", client.get(memory), 200)
        elevate = f"{memory}/elevate"
        label = "POST /v1/memories/{id}/elevate"
        body = b'{"tier":"foundational","expression_patch":{"register_append":"warm"}}'
        conforms(api_schema, label, client.post(elevate, content=body, headers=plain), 428)
        headers = signed(client, "POST", elevate, body)
        conforms(api_schema, label, client.post(elevate, content=body, headers=headers), 200)
        conforms(api_schema, label, client.post(elevate, content=body, headers=headers), 409)
        own = {
            "tier": "constitutive",
            "attestations": [{"attester_did": did, "signing_key_id": "primary", "signature": "A"}],
        }
        own_bytes = json.dumps(own).encode()
        headers = signed(client, "POST", elevate, own_bytes)
        conforms(api_schema, label, client.post(elevate, content=own_bytes, headers=headers), 403)
        conforms(
            api_schema,
            "GET /v1/identities/{id}/expression",
            client.get(f"/v1/identities/{identity}/expression"),
            200,
        )
        conforms(api_schema, "GET /v1/chronicle", client.get("/v1/chronicle"), 200)
        conforms(api_schema, "GET /v1/chronicle", client.get("/v1/chronicle?cursor=bm9wZQ"), 400)
        conforms(api_schema, "DELETE /v1/memories/{id}", client.delete(memory), 428)
        headers = signed(client, "DELETE", memory, b"")
        conforms(
            api_schema, "DELETE /v1/memories/{id}", client.delete(memory, headers=headers), 204
        )
        conforms(api_schema, "GET /v1/memories/{id}", client.get(memory), 404)
