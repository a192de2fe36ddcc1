"""The runtimes API over real HTTP: provisioning rules per custody tier, reads, filters, updates
and immutable fields, soft delete, restart, the event log and the control token; on SQLite, and
on PostgreSQL when SERVICE_TEST_DATABASE_URL is set."""

from __future__ import annotations

import hashlib
import json
import logging
import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import httpx2
import pytest
import schemathesis
from sqlalchemy import Connection, insert

from hearth.proofs import b64_encode
from hearth.proofs.sealing import SealError
from hearth.server.db.engine import utcnow
from hearth.server.db.rows import RuntimeRow
from hearth.server.db.tables import strands, thoughts
from hearth.server.errors import ApiError
from hearth.server.observability import configure_logging
from hearth.server.services import runtimes as runtime_service
from tests.support.databases import in_db
from tests.support.listings import paged
from tests.support.live import Live, live_on, live_service, sqlite_settings
from tests.support.openapi import conforms
from tests.support.runtimes import (
    MASTER_KEY,
    bridge_key,
    bridged_body,
    create,
    event_names,
    new_project,
    self_body,
    stored_row,
    trusted_body,
)

# --- fixtures -----------------------------------------------------------------------------------


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def live(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Live]:
    with live_on(request.param, tmp_path_factory.mktemp("runtimes")) as live:
        yield live


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def kms_live(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Live]:
    with live_on(
        request.param, tmp_path_factory.mktemp("runtimes_kms"), kms_master_key=MASTER_KEY
    ) as live:
        yield live


@pytest.fixture(scope="module")
def api_schema(live: Live) -> Any:
    return schemathesis.openapi.from_url(
        f"{live.base_url}/v1/openapi.json", config=schemathesis.Config()
    )


def runtime_count(client: httpx2.Client) -> int:
    listed = client.get("/v1/runtimes", params={"include_deleted": True, "limit": 200})
    assert listed.status_code == 200, listed.text
    return len(listed.json()["items"])


# --- provisioning -------------------------------------------------------------------------------


def test_bridged_runtime_provisioned_with_its_control_token_once(
    live: Live, api_schema: Any
) -> None:
    bearer, _, agent_id = new_project(live)
    with live.client(bearer) as client:
        body = bridged_body(identity_id=agent_id, metadata={"shift": "night"})
        response = client.post("/v1/runtimes", json=body)
        created = conforms(api_schema, "POST /v1/runtimes", response, 201)
        token = created["control_token"]
        assert token.startswith("hrt_")
        assert len(token) > 40
        assert created["status"] == "provisioned"
        assert created["mode"] == "bridged"
        assert created["identity_id"] == agent_id
        assert created["region"] == "lhr"
        assert created["metadata"] == {"shift": "night"}
        assert created["llm"] == body["llm"]
        assert created["bridge"] == {**body["bridge"], "advertised_url": None}
        assert created["has_control_token"] is True
        assert created["runtime_public_key"] is None
        assert created["deleted"] is False
        assert created["bridge_connected"] is False
        assert created["thought_count_24h"] == 0

        label = "GET /v1/runtimes/{id}"
        read = conforms(api_schema, label, client.get(f"/v1/runtimes/{created['id']}"), 200)
        listed = conforms(api_schema, "GET /v1/runtimes", client.get("/v1/runtimes"), 200)
        events = conforms(
            api_schema,
            "GET /v1/runtimes/{id}/events",
            client.get(f"/v1/runtimes/{created['id']}/events"),
            200,
        )
    assert "control_token" not in read
    assert {k: v for k, v in read.items() if k != "_welcomed"} == {
        k: v for k, v in created.items() if k not in {"control_token", "_welcomed"}
    }
    assert [r["id"] for r in listed["items"]] == [created["id"]]
    # The token is answered once: never in a read, a listing or the event log.
    for later in (read, listed, events):
        assert token not in json.dumps(later)
    assert [e["event"] for e in events["items"]] == ["provisioned"]
    assert events["items"][0]["details"]["to"] == "provisioned"
    # Only its SHA-256 is kept.
    row = in_db(live, stored_row, created["id"], write=False)
    assert row["control_token_hash"] == hashlib.sha256(token.encode()).hexdigest()
    assert runtime_service.control_token_matches(RuntimeRow.of(row), token)
    assert not runtime_service.control_token_matches(RuntimeRow.of(row), token + "x")


def test_self_runtime_records_any_provider_and_needs_no_llm(live: Live) -> None:
    bearer, _, _ = new_project(live)
    with live.client(bearer) as client:
        bare = create(client, self_body())
        local = create(
            client,
            self_body(llm={"provider": "llama.cpp", "model": "q4"}, region="fra"),
        )
    assert bare["llm"] is None
    assert bare["control_token"] is None
    assert bare["has_control_token"] is False
    assert bare["bridge"] is None
    assert local["llm"] == {"provider": "llama.cpp", "model": "q4", "vault_key": None}
    assert local["region"] == "fra"


def _bad_key() -> str:
    # y = p (2^255 - 19) is not a canonical encoding of any point.
    return b64_encode(((1 << 255) - 19).to_bytes(32, "little"))


REFUSALS: list[tuple[str, dict[str, Any], int, str]] = [
    ("mode missing", {"name": "x"}, 422, "validation_error"),
    ("mode unknown", {"name": "x", "mode": "borrowed"}, 422, "validation_error"),
    ("name missing", {"mode": "self"}, 422, "validation_error"),
    ("llm missing for bridged", bridged_body(llm=None), 422, "llm_required"),
    (
        "third provider for bridged",
        bridged_body(llm={"provider": "mistral", "model": "m", "vault_key": "k"}),
        422,
        "unsupported_llm_provider",
    ),
    (
        "vault_key missing for bridged",
        bridged_body(llm={"provider": "openai", "model": "m"}),
        422,
        "llm_incomplete",
    ),
    ("bridge missing for bridged", bridged_body(bridge=None), 422, "bridge_required"),
    (
        "pubkey not base64",
        bridged_body(bridge={"pubkey": "not a key!", "key_id": str(uuid.uuid4())}),
        422,
        "invalid_public_key",
    ),
    (
        "pubkey of 31 bytes",
        bridged_body(bridge={"pubkey": b64_encode(b"\x01" * 31), "key_id": str(uuid.uuid4())}),
        422,
        "invalid_public_key",
    ),
    (
        "pubkey not canonical",
        bridged_body(bridge={"pubkey": _bad_key(), "key_id": str(uuid.uuid4())}),
        422,
        "invalid_public_key",
    ),
    (
        "key_id not a uuid",
        bridged_body(bridge={"pubkey": bridge_key(), "key_id": "k1"}),
        422,
        "invalid_key_id",
    ),
    (
        "pubkey missing",
        bridged_body(bridge={"key_id": str(uuid.uuid4())}),
        422,
        "validation_error",
    ),
    (
        "advertised_url not wss",
        bridged_body(
            bridge={
                "pubkey": bridge_key(),
                "key_id": str(uuid.uuid4()),
                "advertised_url": "https://bridge.example",
            }
        ),
        422,
        "invalid_advertised_url",
    ),
    (
        "bridge on a self runtime",
        self_body(bridge={"pubkey": bridge_key(), "key_id": str(uuid.uuid4())}),
        422,
        "bridge_not_applicable",
    ),
    ("region unknown", self_body(region="mars"), 422, "validation_error"),
    ("metadata too large", self_body(metadata={"x": "y" * 20_000}), 422, "validation_error"),
    ("metadata not an object", self_body(metadata=[1, 2]), 422, "validation_error"),
    ("unknown field", self_body(custody="mine"), 422, "validation_error"),
    ("identity unknown", self_body(identity_id=str(uuid.uuid4())), 404, "not_found"),
]


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [pytest.param(b, s, c, id=name) for name, b, s, c in REFUSALS],
)
def test_provisioning_refusals_change_nothing(
    live: Live, api_schema: Any, body: dict[str, Any], status: int, code: str
) -> None:
    bearer, _, _ = new_project(live)
    with live.client(bearer) as client:
        refused = conforms(
            api_schema, "POST /v1/runtimes", client.post("/v1/runtimes", json=body), status
        )
        assert refused["error"] == code, refused
        assert refused["message"]
        assert runtime_count(client) == 0


def test_hosted_provider_rule_names_the_accepted_ones(live: Live) -> None:
    bearer, _, _ = new_project(live)
    with live.client(bearer) as client:
        refused = client.post(
            "/v1/runtimes",
            json=bridged_body(llm={"provider": "gemini", "model": "g", "vault_key": "k"}),
        )
    assert refused.status_code == 422
    assert refused.json()["details"]["accepted"] == ["anthropic", "openai"]
    assert "gemini" in refused.json()["message"]


def test_another_projects_identity_cannot_be_bound(live: Live) -> None:
    bearer, _, _ = new_project(live)
    _, _, stranger = new_project(live)
    with live.client(bearer) as client:
        refused = client.post("/v1/runtimes", json=self_body(identity_id=stranger))
        assert refused.status_code == 404, refused.text
        assert runtime_count(client) == 0


def test_trusted_without_the_kms_key_is_501_and_recorded(live: Live) -> None:
    bearer, _, _ = new_project(live)
    with live.client(bearer) as client:
        # Not through ``conforms``: its checks refuse every 5xx, and this 501 is by design.
        response = client.post("/v1/runtimes", json=trusted_body())
        assert response.status_code == 501, response.text
        assert response.headers["content-type"].startswith("application/json")
        refused = response.json()
        # The body is checked first: a bad trusted body is a 422 in any deployment.
        bad = client.post("/v1/runtimes", json=trusted_body(llm=None))
        assert bad.status_code == 422
        assert refused["error"] == "kms_master_key_missing"
        assert "SERVICE_KMS_MASTER_KEY" in refused["message"]
        assert runtime_count(client) == 0
        chronicle = client.get("/v1/chronicle", params={"kind": "refusal"}).json()["items"]
    assert refused["details"]["chronicle_entry_id"] in [e["id"] for e in chronicle]
    entry = next(e for e in chronicle if e["id"] == refused["details"]["chronicle_entry_id"])
    assert entry["details"]["wall"] == "runtime_custody_explicit"
    assert entry["details"]["status"] == 501


def test_trusted_with_the_kms_key_stores_wrapped_key_material(kms_live: Live) -> None:
    bearer, _, _ = new_project(kms_live)
    with kms_live.client(bearer) as client:
        created = create(client, trusted_body())
        refused = client.post(
            "/v1/runtimes",
            json=trusted_body(llm={"provider": "cohere", "model": "c", "vault_key": "k"}),
        )
        read = client.get(f"/v1/runtimes/{created['id']}").json()
    assert refused.status_code == 422
    assert refused.json()["error"] == "unsupported_llm_provider"
    assert created["status"] == "provisioned"
    assert created["control_token"] is None
    public_key = created["runtime_public_key"]
    assert public_key
    assert read["runtime_public_key"] == public_key
    row = in_db(kms_live, stored_row, created["id"], write=False)
    material = bytes(row["key_material"])
    key = runtime_service.unwrap_runtime_key(RuntimeRow.of(row), MASTER_KEY)
    assert b64_encode(key.public_key().public_bytes_raw()) == public_key
    # The seed is not stored in clear, and opens under the master key only.
    assert key.private_bytes_raw() not in material
    with pytest.raises(SealError):
        runtime_service.unwrap_runtime_key(RuntimeRow.of(row), "another master key")
    # Bound to its row: the material does not open as another runtime's.
    with pytest.raises(SealError):
        runtime_service.unwrap_runtime_key(
            RuntimeRow.of({**row, "id": str(uuid.uuid4())}), MASTER_KEY
        )
    assert "key_material" not in read
    assert key.private_bytes_raw().hex() not in json.dumps(read)


# --- reads, filters, isolation ------------------------------------------------------------------


def test_another_projects_runtime_does_not_exist(live: Live) -> None:
    bearer, _, _ = new_project(live)
    other, _, _ = new_project(live)
    with live.client(other) as client:
        theirs = create(client, bridged_body())["id"]
    with live.client(bearer) as client:
        for method, path in (
            ("GET", f"/v1/runtimes/{theirs}"),
            ("PATCH", f"/v1/runtimes/{theirs}"),
            ("DELETE", f"/v1/runtimes/{theirs}"),
            ("POST", f"/v1/runtimes/{theirs}/restart"),
            ("POST", f"/v1/runtimes/{theirs}/control-token"),
            ("GET", f"/v1/runtimes/{theirs}/events"),
            ("GET", "/v1/runtimes/not-a-uuid"),
        ):
            kwargs: dict[str, Any] = {"json": {"name": "mine"}} if method == "PATCH" else {}
            response = client.request(method, path, **kwargs)
            assert response.status_code == 404, (method, path, response.text)
            assert response.json()["error"] == "not_found"
        assert client.get("/v1/runtimes").json()["items"] == []
    with live.client(other) as client:
        still = client.get(f"/v1/runtimes/{theirs}").json()
    assert still["name"] == "night shift"
    assert still["deleted"] is False
    with live.client() as anonymous:
        assert anonymous.get("/v1/runtimes").status_code == 401
        assert anonymous.post("/v1/runtimes", json=self_body()).status_code == 401


def test_filters_and_pages(live: Live) -> None:
    bearer, _, agent_id = new_project(live)
    with live.client(bearer) as client:
        selfs = [create(client, self_body(name=f"self {i}"))["id"] for i in range(3)]
        bridged = [create(client, bridged_body(identity_id=agent_id))["id"] for _ in range(2)]
        in_db(live, runtime_service.move, bridged[0], "bind")

        def ids(**params: Any) -> list[str]:
            response = client.get("/v1/runtimes", params=params)
            assert response.status_code == 200, response.text
            return [r["id"] for r in response.json()["items"]]

        assert ids() == [*reversed(bridged), *reversed(selfs)]  # newest first
        assert ids(mode="self") == list(reversed(selfs))
        assert ids(mode="bridged") == list(reversed(bridged))
        assert ids(status="starting") == [bridged[0]]
        assert ids(status="provisioned", mode="bridged") == [bridged[1]]
        assert ids(identity_id=agent_id) == list(reversed(bridged))
        assert ids(identity_id=f"did:svc:{agent_id}") == list(reversed(bridged))
        assert ids(mode="trusted") == []

        seen = paged(lambda params: client.get("/v1/runtimes", params=params).json(), limit=2)
        assert seen == ids()

        assert client.get("/v1/runtimes", params={"status": "asleep"}).status_code == 422
        assert client.get("/v1/runtimes", params={"mode": "hosted"}).status_code == 422
        assert client.get("/v1/runtimes", params={"cursor": "%%%"}).status_code == 400
        assert client.get("/v1/runtimes", params={"limit": 0}).status_code == 422
        unknown = client.get("/v1/runtimes", params={"identity_id": str(uuid.uuid4())})
        assert unknown.status_code == 404

        assert client.delete(f"/v1/runtimes/{selfs[0]}").status_code == 200
        assert selfs[0] not in ids()
        assert ids(include_deleted=True)[-1] == selfs[0]


# --- updates and immutable fields ---------------------------------------------------------------


def test_patch_changes_the_mutable_fields(live: Live, api_schema: Any) -> None:
    bearer, _, _ = new_project(live)
    with live.client(bearer) as client:
        created = create(client, bridged_body())
        rid = created["id"]
        label = "PATCH /v1/runtimes/{id}"
        patched = conforms(
            api_schema,
            label,
            client.patch(
                f"/v1/runtimes/{rid}",
                json={
                    "name": "day shift",
                    "llm": {"model": "claude-next"},
                    "region": "ams",
                    "metadata": {"team": "blue"},
                    "bridge": {"advertised_url": "wss://bridge.example/rt"},
                },
            ),
            200,
        )
        assert patched["name"] == "day shift"
        assert patched["llm"] == {**created["llm"], "model": "claude-next"}
        assert patched["region"] == "ams"
        assert patched["metadata"] == {"team": "blue"}
        assert patched["bridge"]["advertised_url"] == "wss://bridge.example/rt"
        assert patched["bridge"]["pubkey"] == created["bridge"]["pubkey"]
        assert patched["status"] == "provisioned"
        # Sending the immutable fields with their current values is fine.
        same = client.patch(
            f"/v1/runtimes/{rid}",
            json={"mode": "bridged", "bridge": {"pubkey": created["bridge"]["pubkey"]}},
        )
        assert same.status_code == 200, same.text
        provider = client.patch(f"/v1/runtimes/{rid}", json={"llm": {"provider": "openai"}})
        assert provider.status_code == 200
        assert provider.json()["llm"]["provider"] == "openai"
        third = client.patch(f"/v1/runtimes/{rid}", json={"llm": {"provider": "mistral"}})
        assert third.status_code == 422
        assert third.json()["error"] == "unsupported_llm_provider"
        http_url = client.patch(
            f"/v1/runtimes/{rid}", json={"bridge": {"advertised_url": "http://x.example"}}
        )
        assert http_url.status_code == 422
        assert client.patch(f"/v1/runtimes/{rid}", json={"status": "running"}).status_code == 422
        read = client.get(f"/v1/runtimes/{rid}").json()
        assert read["llm"]["provider"] == "openai"
        assert read["bridge"]["advertised_url"] == "wss://bridge.example/rt"
        # A self runtime takes any provider, and needs provider and model the first time.
        own = create(client, self_body())["id"]
        half = client.patch(f"/v1/runtimes/{own}", json={"llm": {"model": "q8"}})
        assert half.status_code == 422
        assert half.json()["error"] == "llm_incomplete"
        whole = client.patch(
            f"/v1/runtimes/{own}", json={"llm": {"provider": "ollama", "model": "q8"}}
        )
        assert whole.status_code == 200
        assert whole.json()["llm"]["provider"] == "ollama"


@pytest.mark.parametrize(
    ("field", "value"),
    [("mode", "trusted"), ("mode", "self"), ("identity_id", None), ("bridge.pubkey", None)],
)
def test_immutable_fields_are_refused(live: Live, field: str, value: Any) -> None:
    bearer, _, agent_id = new_project(live)
    with live.client(bearer) as client:
        created = create(client, bridged_body(identity_id=agent_id))
        rid = created["id"]
        if field == "identity_id":
            # Any other value: binding is stamped at provisioning, whatever it names.
            body: dict[str, Any] = {"identity_id": str(uuid.uuid4())}
        elif field == "bridge.pubkey":
            body = {"bridge": {"pubkey": bridge_key()}}
        else:
            body = {field: value}
        refused = client.patch(f"/v1/runtimes/{rid}", json=body)
        assert refused.status_code == 422, refused.text
        answer = refused.json()
        assert answer["error"] == "immutable_field"
        assert answer["details"]["field"] == field
        assert field in answer["message"]
        assert "new runtime" in answer["message"]
        if field == "mode":
            assert "custody" in answer["message"]
            chronicle = client.get("/v1/chronicle", params={"kind": "refusal"}).json()["items"]
            assert answer["details"]["chronicle_entry_id"] in [e["id"] for e in chronicle]
        assert client.get(f"/v1/runtimes/{rid}").json() | {"_welcomed": None} == {
            k: v for k, v in created.items() if k != "control_token"
        } | {"_welcomed": None}
        # The same identity, by its DID, is the current value.
        same = client.patch(f"/v1/runtimes/{rid}", json={"identity_id": f"did:svc:{agent_id}"})
        assert same.status_code == 200, same.text


# --- delete, restart, events, control token ------------------------------------------------------


def test_soft_delete_stops_keeps_and_freezes(live: Live, api_schema: Any) -> None:
    bearer, _, _ = new_project(live)
    with live.client(bearer) as client:
        created = create(client, bridged_body())
        rid, token = created["id"], created["control_token"]
        in_db(live, runtime_service.move, rid, "bind")
        in_db(live, runtime_service.move, rid, "handshake")
        assert client.get(f"/v1/runtimes/{rid}").json()["status"] == "running"

        label = "DELETE /v1/runtimes/{id}"
        deleted = conforms(api_schema, label, client.delete(f"/v1/runtimes/{rid}"), 200)
        assert deleted["deleted"] is True
        assert deleted["deleted_at"]
        assert deleted["status"] == "stopped"
        assert deleted["has_control_token"] is False
        assert event_names(client, rid) == [
            "provisioned",
            "started",
            "bridge_handshake_ok",
            "stopped",
        ]
        # Kept for audit: the id still answers, marked deleted.
        read = client.get(f"/v1/runtimes/{rid}")
        assert read.status_code == 200
        assert read.json()["deleted"] is True
        again = client.delete(f"/v1/runtimes/{rid}")
        assert again.status_code == 200
        assert again.json()["deleted_at"] == deleted["deleted_at"]
        assert event_names(client, rid)[-1] == "stopped"
        assert len(event_names(client, rid)) == 4

        for response in (
            client.patch(f"/v1/runtimes/{rid}", json={"name": "back"}),
            client.post(f"/v1/runtimes/{rid}/restart"),
            client.post(f"/v1/runtimes/{rid}/control-token"),
        ):
            assert response.status_code == 409, response.text
            assert response.json()["error"] == "runtime_deleted"
        row = in_db(live, stored_row, rid, write=False)
        assert not runtime_service.control_token_matches(RuntimeRow.of(row), token)
        # A deleted runtime does not move.
        with pytest.raises(ApiError) as refused:
            in_db(live, runtime_service.move, rid, "crash", detail="late crash")
        assert refused.value.error == "runtime_deleted"

        # Not running: the status stays, the deletion is all that happens.
        waiting = create(client, self_body())["id"]
        gone = client.delete(f"/v1/runtimes/{waiting}").json()
        assert gone["status"] == "provisioned"
        assert gone["deleted"] is True
        assert event_names(client, waiting) == ["provisioned"]


def test_restart_only_from_error(live: Live, api_schema: Any) -> None:
    bearer, _, _ = new_project(live)
    with live.client(bearer) as client:
        rid = create(client, bridged_body())["id"]
        label = "POST /v1/runtimes/{id}/restart"
        refused = conforms(api_schema, label, client.post(f"/v1/runtimes/{rid}/restart"), 409)
        assert refused["error"] == "invalid_runtime_state"
        assert refused["details"]["current_status"] == "provisioned"
        assert refused["details"]["allowed_from"] == ["error"]
        assert "provisioned" in refused["message"]
        assert "error" in refused["message"]

        in_db(live, runtime_service.move, rid, "bind")
        in_db(live, runtime_service.move, rid, "crash", detail="provider timed out")
        crashed = client.get(f"/v1/runtimes/{rid}").json()
        assert crashed["status"] == "error"
        assert crashed["last_error"] == "provider timed out"

        restarted = conforms(api_schema, label, client.post(f"/v1/runtimes/{rid}/restart"), 200)
        assert restarted["status"] == "starting"
        assert restarted["last_error"] is None
        events = client.get(f"/v1/runtimes/{rid}/events").json()["items"]
        assert [e["event"] for e in events] == ["provisioned", "started", "error", "started"]
        assert events[2]["details"]["last_error"] == "provider timed out"
        assert events[3]["details"] == {"from": "error", "to": "starting", "trigger": "restart"}
        twice = client.post(f"/v1/runtimes/{rid}/restart")
        assert twice.status_code == 409
        assert twice.json()["details"]["current_status"] == "starting"


def test_control_token_rotation(live: Live, api_schema: Any) -> None:
    bearer, _, _ = new_project(live)
    with live.client(bearer) as client:
        created = create(client, bridged_body())
        rid, first = created["id"], created["control_token"]
        label = "POST /v1/runtimes/{id}/control-token"
        rotated = conforms(api_schema, label, client.post(f"/v1/runtimes/{rid}/control-token"), 200)
        second = rotated["control_token"]
        assert second != first
        assert second.startswith("hrt_")
        assert rotated["runtime_id"] == rid
        events = client.get(f"/v1/runtimes/{rid}/events").json()
        assert [e["event"] for e in events["items"]] == ["provisioned", "control_token_rotated"]
        read = client.get(f"/v1/runtimes/{rid}").json()
        for text in (json.dumps(events), json.dumps(read)):
            assert first not in text
            assert second not in text
        row = in_db(live, stored_row, rid, write=False)
        assert runtime_service.control_token_matches(RuntimeRow.of(row), second)
        assert not runtime_service.control_token_matches(RuntimeRow.of(row), first)

        own = create(client, self_body())["id"]
        refused = conforms(api_schema, label, client.post(f"/v1/runtimes/{own}/control-token"), 409)
        assert refused["error"] == "not_bridged"


def test_event_log_pages_oldest_first(live: Live) -> None:
    bearer, _, _ = new_project(live)
    with live.client(bearer) as client:
        rid = create(client, bridged_body())["id"]
        for _ in range(4):
            assert client.post(f"/v1/runtimes/{rid}/control-token").status_code == 200

        def events(params: dict[str, Any]) -> Any:
            page = client.get(f"/v1/runtimes/{rid}/events", params=params)
            assert page.status_code == 200, page.text
            return page.json()

        seen = paged(events, limit=2)
        assert len(seen) == 5
        assert seen == sorted(seen)
        for bad in ("abc", "-1", "1" * 30):
            refused = client.get(f"/v1/runtimes/{rid}/events", params={"cursor": bad})
            assert refused.status_code == 400
            assert refused.json()["error"] == "invalid_cursor"


def test_tokens_and_keys_never_reach_a_log(
    tmp_path: Any, capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    """Creation, rotation, reads, refusals and deletion with the service logging at debug."""
    caplog.set_level(logging.DEBUG)
    secrets_seen: list[str] = []
    try:
        with live_service(
            sqlite_settings(tmp_path, log_level="debug", kms_master_key=MASTER_KEY)
        ) as live:
            bearer, _, _ = new_project(live)
            with live.client(bearer) as client:
                created = create(client, bridged_body())
                rid = created["id"]
                secrets_seen.append(created["control_token"])
                rotated = client.post(f"/v1/runtimes/{rid}/control-token").json()
                secrets_seen.append(rotated["control_token"])
                trusted = create(client, trusted_body())
                for response in (
                    client.get(f"/v1/runtimes/{rid}"),
                    client.get("/v1/runtimes"),
                    client.get(f"/v1/runtimes/{rid}/events"),
                    client.patch(f"/v1/runtimes/{rid}", json={"mode": "self"}),
                    client.delete(f"/v1/runtimes/{rid}"),
                ):
                    assert response.status_code < 500, response.text
            row = in_db(live, stored_row, trusted["id"], write=False)
            key = runtime_service.unwrap_runtime_key(RuntimeRow.of(row), MASTER_KEY)
            seed = key.private_bytes_raw()
            secrets_seen += [seed.hex(), b64_encode(seed), MASTER_KEY]
    finally:
        # The service pointed structlog at this test's captured stderr: point it back.
        with capfd.disabled():
            configure_logging("json", "warning")
    captured = capfd.readouterr()
    assert "request" in captured.err  # the debug request lines were written, and read here
    for text in (captured.out, captured.err, caplog.text):
        for secret in secrets_seen:
            assert secret not in text


def test_liveness_counts_the_runtimes_recent_thoughts(live: Live) -> None:
    bearer, project_id, _ = new_project(live)
    with live.client(bearer) as client:
        rid = create(client, bridged_body())["id"]
        other = create(client, self_body())["id"]

        def write_thoughts(conn: Connection) -> None:
            now = utcnow()
            strand_id = str(uuid.uuid4())
            conn.execute(
                insert(strands).values(
                    id=strand_id,
                    project_id=project_id,
                    identity_id=None,
                    runtime_id=rid,
                    name="s",
                    next_seq=4,
                    created_at=now,
                )
            )
            for seq, age in ((1, timedelta(hours=30)), (2, timedelta(hours=2)), (3, timedelta(0))):
                conn.execute(
                    insert(thoughts).values(
                        id=str(uuid.uuid4()),
                        strand_id=strand_id,
                        project_id=project_id,
                        runtime_id=rid,
                        seq=seq,
                        ciphertext=b"\x00" * 32,
                        nonce=b"\x00" * 12,
                        created_at=now - age,
                    )
                )

        in_db(live, write_thoughts)
        read = client.get(f"/v1/runtimes/{rid}").json()
        listed = {r["id"]: r for r in client.get("/v1/runtimes").json()["items"]}
    assert read["thought_count_24h"] == 2  # the one of 30 hours ago is outside the window
    assert read["last_thought_at"] is not None
    assert listed[rid]["thought_count_24h"] == 2
    assert listed[rid]["last_thought_at"] == read["last_thought_at"]
    assert listed[other]["thought_count_24h"] == 0
    assert listed[other]["last_thought_at"] is None
