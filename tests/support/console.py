"""The console as the tests use it (docs/console.md): signing in over HTTP, a page's form
token, and hostile text stored in every field the console shows."""

from __future__ import annotations

import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
from playwright.sync_api import Browser, sync_playwright

from hearth.adds.cid import cid_for_bytes
from hearth.server.services.runtimes import moves
from tests.support.agents import register
from tests.support.blocks import make_block
from tests.support.databases import in_db
from tests.support.live import Live
from tests.support.redis_server import skip_or_fail
from tests.support.runtimes import bridged_body, create

TOKEN = re.compile(r'name="csrf" value="([^"]+)"')

# Each would run script, load a page, or hide a link if it were ever markup. ``__pwned`` is set
# by every payload that executes, so a browser test needs only check one flag.
HOSTILE = (
    '<script>window.__pwned = "script"</script>',
    "<img src=x onerror=\"window.__pwned = 'img'\">",
    "<a href=\"javascript:window.__pwned='href'\">click me</a>",
    "[innocent](javascript:window.__pwned='md')",
    "[also innocent][ref]\n\n[ref]: javascript:window.__pwned='ref'",
    "<svg onload=\"window.__pwned = 'svg'\"></svg>",
    '"><script>window.__pwned = "attr"</script>',
)
HOSTILE_TEXT = "\n".join(HOSTILE)
MARKERS = ("window.__pwned", "javascript:")


def sign_in(client: httpx2.Client, bearer: str) -> str:
    """Sign ``client`` in (its cookie jar keeps the session); returns the session's form token."""
    response = client.post("/console/sign-in", data={"bearer": bearer})
    assert response.status_code == 303, response.text
    return form_token(client)


def form_token(client: httpx2.Client) -> str:
    page = client.get("/console")
    assert page.status_code == 200, page.text
    found = TOKEN.search(page.text)
    assert found is not None
    return found.group(1)


@dataclass
class Seeded:
    bearer: str
    project_id: str
    identity_id: str
    memory_id: str
    runtime_id: str
    wallet_id: str
    receipt_cid: str


def seed_hostile(live: Live) -> Seeded:
    """A project whose every field the console shows holds hostile text: the identity's name,
    a memory, a chronicle note, an inbox message, and a runtime's name, metadata and error."""
    _, registered = register(live, name='<b onmouseover="window.__pwned=1">Wren</b>')
    bearer = registered["project"]["api_key"]
    identity_id = registered["agent"]["id"]
    with live.client(bearer) as client:
        memory = client.post(
            "/v1/memories", json={"content": HOSTILE_TEXT, "agent_id": identity_id}
        )
        assert memory.status_code == 201, memory.text
        note = client.post(
            "/v1/chronicle", json={"kind": "vow", "text": HOSTILE_TEXT, "agent_id": identity_id}
        )
        assert note.status_code == 201, note.text
        message = client.post(
            f"/v1/identities/{identity_id}/inbox", json={"sender": HOSTILE[0], "body": HOSTILE_TEXT}
        )
        assert message.status_code == 201, message.text
        runtime = create(
            client,
            bridged_body(
                name=HOSTILE[1][:200],
                identity_id=identity_id,
                metadata={"note": HOSTILE_TEXT, HOSTILE[0]: HOSTILE[2]},
            ),
        )
        wallet_id = client.get("/v1/wallets").json()["wallets"][0]["id"]
        receipt_cid = adds_receipt(client)
    errored(live, runtime["id"], HOSTILE_TEXT)
    return Seeded(
        bearer,
        registered["project"]["id"],
        identity_id,
        memory.json()["id"],
        runtime["id"],
        wallet_id,
        receipt_cid,
    )


def adds_receipt(client: httpx2.Client) -> str:
    """A block stored and a signed receipt for it (kept as one of the project's documents);
    the receipt's CID."""
    cid, data = make_block("console")
    stored = client.put(
        f"/v1/adds/blocks/{cid}", content=data, headers={"Content-Type": "application/octet-stream"}
    )
    assert stored.status_code in {200, 201}, stored.text
    issued = client.post("/v1/adds/receipts", json={"items": [cid], "commitment": "store"})
    assert issued.status_code == 201, issued.text
    return cid_for_bytes(issued.content)


def errored(live: Live, runtime_id: str, why: str = "provider unreachable") -> None:
    """The runtime crashed, as the orchestrator would record it (its ``crash`` move)."""
    # In a thread of its own: under Playwright's sync API this thread already runs a loop.
    with ThreadPoolExecutor(1) as pool:
        pool.submit(in_db, live, moves.move, runtime_id, "crash", detail=why).result()


def named_pages(seeded: Seeded) -> dict[str, str]:
    """Every page of the console, by a name fit for a screenshot's file."""
    return {
        "project": "/console",
        "identity": f"/console/identities/{seeded.identity_id}",
        "memory": f"/console/memories/{seeded.memory_id}",
        "runtimes": "/console/runtimes",
        "runtime": f"/console/runtimes/{seeded.runtime_id}",
        "runtime_delete": f"/console/runtimes/{seeded.runtime_id}/delete",
        "adds": "/console/adds",
        "adds_document": f"/console/adds/{seeded.receipt_cid}",
        "wallet": f"/console/wallets/{seeded.wallet_id}",
    }


def pages_of(seeded: Seeded) -> list[str]:
    return list(named_pages(seeded).values())


def json_of(response: httpx2.Response) -> Any:
    return response.json()


CHROMIUM = Path("/usr/bin/chromium")
# Where the browser tests leave their screenshots (ignored by git; CI keeps the folder).
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "console"


@contextmanager
def chromium() -> Iterator[Browser]:
    """Debian's Chromium, headless, with a fresh profile, driven by Playwright: never a browser
    Playwright downloads. Skips without it (fails under CI=true)."""
    if not CHROMIUM.exists():
        skip_or_fail(
            "the console's browser tests need Debian's chromium at /usr/bin/chromium "
            "(apt-get install chromium chromium-driver; .ci/run installs it)"
        )
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM),
            args=["--headless", "--no-sandbox", "--disable-gpu"],
        )
        try:
            yield browser
        finally:
            browser.close()


# Every form control a person fills in or presses, without an accessible label.
UNLABELLED = """() => Array.from(document.querySelectorAll(
    'input:not([type=hidden]), select, textarea, button')).filter(el => {
  if (el.labels && el.labels.length > 0) return false;
  if (el.getAttribute('aria-label')) return false;
  if (el.tagName === 'BUTTON' && el.textContent.trim()) return false;
  return true;
}).map(el => el.outerHTML)"""

# The focused element as "tag#id" or "tag[name]" or its text: what Tab reaches.
FOCUSED = """() => {
  const el = document.activeElement;
  if (!el) return '';
  return el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') +
    (el.name ? '[' + el.name + ']' : '') + ':' + (el.textContent || '').trim().slice(0, 30);
}"""
