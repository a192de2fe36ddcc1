"""Think cycles as the orchestrator tests drive them: settings against the fake LLM, trusted
runtimes with their vault secret, inbox messages, and reads of runtimes, events and thoughts."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import httpx2
from sqlalchemy import Connection, select

from hearth.server.db.tables import inbox_messages
from hearth.server.events import Change
from tests.support.databases import in_db
from tests.support.fake_llm import FakeLlm
from tests.support.live import Live
from tests.support.runtimes import MASTER_KEY

T = TypeVar("T")


# Timings short enough that a test waits seconds, not minutes; tests never assert durations.
FAST: dict[str, Any] = {
    "worker_in_process": True,  # explicit: only `hearth serve` runs a worker by default
    "kms_master_key": MASTER_KEY,
    "runtime_poll_seconds": 0.05,
    "runtime_heartbeat_seconds": 0.5,
    "runtime_lease_seconds": 3.0,
    "runtime_retry_seconds": 0.2,
    "llm_max_retries": 0,
    "llm_timeout_seconds": 20.0,
}


WAIT_S = 60.0


def llm_settings(fake: FakeLlm) -> dict[str, Any]:
    return {
        **FAST,
        "llm_anthropic_base_url": fake.anthropic_base_url,
        "llm_openai_base_url": fake.openai_base_url,
    }


def put_secret(client: httpx2.Client, name: str, value: str) -> None:
    response = client.put(f"/v1/vault/{name}", json={"value": value})
    assert response.status_code in {200, 201}, response.text


def trusted_runtime(
    client: httpx2.Client, agent_id: str, provider: str = "openai", vault_key: str = "llm-key"
) -> dict[str, Any]:
    response = client.post(
        "/v1/runtimes",
        json={
            "name": "hosted",
            "mode": "trusted",
            "identity_id": agent_id,
            "llm": {"provider": provider, "model": f"{provider}-model", "vault_key": vault_key},
        },
    )
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


def runtime_of(client: httpx2.Client, runtime_id: str) -> dict[str, Any]:
    response = client.get(f"/v1/runtimes/{runtime_id}")
    assert response.status_code == 200, response.text
    found: dict[str, Any] = response.json()
    return found


def status_is(client: httpx2.Client, runtime_id: str, status: str) -> Callable[[], bool]:
    return lambda: runtime_of(client, runtime_id)["status"] == status


def events_of(client: httpx2.Client, runtime_id: str) -> list[dict[str, Any]]:
    response = client.get(f"/v1/runtimes/{runtime_id}/events", params={"limit": 200})
    assert response.status_code == 200, response.text
    items: list[dict[str, Any]] = response.json()["items"]
    return items


def names(events: list[dict[str, Any]]) -> list[str]:
    return [e["event"] for e in events]


def post_message(client: httpx2.Client, agent_id: str, body: str) -> dict[str, Any]:
    response = client.post(
        f"/v1/identities/{agent_id}/inbox", json={"sender": "tester", "body": body}
    )
    assert response.status_code == 201, response.text
    posted: dict[str, Any] = response.json()
    return posted


def message_status(live: Live, message_id: str) -> str:
    def read(conn: Connection) -> str:
        return str(
            conn.execute(
                select(inbox_messages.c.status).where(inbox_messages.c.id == message_id)
            ).scalar_one()
        )

    return str(in_db(live, read, write=False))


def strand_thoughts(client: httpx2.Client, runtime_id: str) -> tuple[str, list[dict[str, Any]]]:
    listed = client.get("/v1/strands", params={"runtime_id": runtime_id})
    assert listed.status_code == 200, listed.text
    items = listed.json()["items"]
    assert len(items) == 1, items
    strand_id = items[0]["id"]
    page = client.get(f"/v1/strands/{strand_id}/thoughts", params={"limit": 100})
    assert page.status_code == 200, page.text
    return strand_id, page.json()["items"]


def recorder(live: Live) -> list[Change]:
    """Every change published in the service's process from now on."""
    seen: list[Change] = []
    live.app.state.hearth.events.add_listener(seen.append)
    return seen
