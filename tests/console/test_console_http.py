"""The console over real HTTP (docs/console.md): sessions, forms and their refusals, headers,
escaping, keys and runtimes. The browser's view is test_console_browser.py."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from urllib.parse import unquote

import httpx2
import pytest
from sqlalchemy import Connection, func, select, update

from hearth.server.console.security import CSP
from hearth.server.db.tables import api_keys, console_sessions
from hearth.server.services import keys
from tests.support.console import (
    HOSTILE,
    MARKERS,
    Seeded,
    errored,
    form_token,
    pages_of,
    seed_hostile,
    sign_in,
)
from tests.support.databases import in_db
from tests.support.live import Live, live_on, live_service, sqlite_settings


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    with live_service(sqlite_settings(tmp_path_factory.mktemp("console"))) as running:
        yield running


@pytest.fixture(scope="module")
def seeded(live: Live) -> Seeded:
    return seed_hostile(live)


def browser(live: Live) -> httpx2.Client:
    return httpx2.Client(base_url=live.base_url, timeout=30, follow_redirects=False)


def counts(conn: Connection) -> tuple[int, int]:
    return (
        conn.execute(select(func.count()).select_from(api_keys)).scalar_one(),
        conn.execute(select(func.count()).select_from(console_sessions)).scalar_one(),
    )


def test_a_page_without_a_session_sends_to_sign_in_with_the_headers(live: Live) -> None:
    with browser(live) as client:
        for path in ("/console", "/console/runtimes", "/console/live", "/console/adds"):
            answer = client.get(path)
            assert answer.status_code == 303
            assert answer.headers["location"] == "/console/sign-in"
            assert answer.headers["content-security-policy"] == CSP
        sign_in_page = client.get("/console/sign-in")
    assert sign_in_page.status_code == 200
    assert 'type="password"' in sign_in_page.text


def test_every_console_answer_carries_the_headers(live: Live, seeded: Seeded) -> None:
    with browser(live) as client:
        sign_in(client, seeded.bearer)
        answers = [client.get(path) for path in pages_of(seeded)]
        answers += [
            client.get("/console/static/console.js"),
            client.get("/console/static/console.css"),
            client.get("/console/memories/00000000-0000-0000-0000-000000000000"),  # 404
            client.post("/console/keys", data={"name": "x"}),  # 403, no token
        ]
    assert [a.status_code for a in answers[:-2]] == [200] * (len(answers) - 2)
    assert [a.status_code for a in answers[-2:]] == [404, 403]
    for answer in answers:
        assert answer.headers["content-security-policy"] == CSP
        assert "'unsafe-inline'" not in answer.headers["content-security-policy"]
        assert answer.headers["x-content-type-options"] == "nosniff"
        assert answer.headers["referrer-policy"] == "no-referrer"
    # The API's own answers are left as they were.
    with live.client(seeded.bearer) as api:
        assert "content-security-policy" not in api.get("/v1/keys").headers


def test_sign_in_keeps_a_hashed_random_session_and_never_the_bearer(live: Live) -> None:
    seeded = seed_hostile(live)
    with browser(live) as client:
        answer = client.post("/console/sign-in", data={"bearer": seeded.bearer})
        assert answer.status_code == 303
        cookie = answer.headers["set-cookie"]
        for flag in ("HttpOnly", "SameSite=Strict", "Path=/console"):
            assert flag.lower() in cookie.lower()
        assert "secure" not in cookie.lower()  # plain http here; https adds it
        assert seeded.bearer not in cookie
        session_id = client.cookies["hearth_console"]
        pages = [client.get(path).text for path in pages_of(seeded)]
    for page in pages:
        assert seeded.bearer not in page
    stored = in_db(live, lambda conn: conn.execute(select(console_sessions)).all(), write=False)
    assert keys.hash_bearer(session_id) in {row.id_hash for row in stored}
    assert all(session_id not in tuple(map(str, row)) for row in stored)
    assert all(seeded.bearer not in tuple(map(str, row)) for row in stored)


def test_an_unknown_bearer_opens_no_session(live: Live) -> None:
    before = in_db(live, counts, write=False)
    with browser(live) as client:
        answer = client.post("/console/sign-in", data={"bearer": "hk_not-a-key"})
    assert answer.status_code == 401
    assert "not a live project key" in answer.text
    assert "set-cookie" not in answer.headers
    assert in_db(live, counts, write=False) == before


def test_forms_without_the_token_or_from_elsewhere_are_refused_and_change_nothing(
    live: Live, seeded: Seeded
) -> None:
    with browser(live) as client, browser(live) as other:
        token = sign_in(client, seeded.bearer)
        other_token = sign_in(other, seeded.bearer)
        assert token != other_token
        before = in_db(live, counts, write=False)
        refused = [
            client.post("/console/keys", data={"name": "no token"}),
            client.post("/console/keys", data={"name": "theirs", "csrf": other_token}),
            client.post(
                "/console/keys",
                data={"name": "elsewhere", "csrf": token},
                headers={"Origin": "https://evil.example"},
            ),
            client.post(
                "/console/keys",
                data={"name": "cross", "csrf": token},
                headers={"Sec-Fetch-Site": "cross-site"},
            ),
            client.post("/console/keys", json={"name": "json", "csrf": token}),
            client.post(f"/console/runtimes/{seeded.runtime_id}/restart", data={}),
            client.post("/console/sign-out", data={}),
        ]
        for answer in refused:
            assert answer.status_code == 403, answer.text
            assert answer.json()["error"] == "console_form_refused"
        assert in_db(live, counts, write=False) == before
        # The session survived the refused sign-out.
        assert client.get("/console").status_code == 200


def test_a_new_key_is_shown_once_works_and_is_revoked(live: Live, seeded: Seeded) -> None:
    with browser(live) as client:
        token = sign_in(client, seeded.bearer)
        made = client.post(
            "/console/keys",
            data={"name": "ops <script>", "csrf": token},
            headers={"Origin": live.base_url},
        )
        assert made.status_code == 200
        assert made.headers["cache-control"] == "no-store"
        secret = made.text.split('id="new-key" class="secret" readonly value="')[1].split('"')[0]
        assert secret.startswith("hk_")
        assert "ops &lt;script&gt;" in made.text
        overview = client.get("/console").text
        assert secret not in overview
        assert "ops &lt;script&gt;" in overview
        with live.client(secret) as api:
            assert api.get("/v1/keys").status_code == 200
            key_id = next(
                k["id"] for k in api.get("/v1/keys").json()["keys"] if k["name"] == "ops <script>"
            )
        revoked = client.post(f"/console/keys/{key_id}/revoke", data={"csrf": token})
        assert revoked.status_code == 303
        assert "ops &lt;script&gt;" not in client.get("/console").text
        with live.client(secret) as api:
            assert api.get("/v1/keys").status_code == 401
        unknown = client.post(f"/console/keys/{key_id}/revoke", data={"csrf": token})
        assert unknown.status_code == 404


def test_revoking_the_sessions_key_ends_the_session(live: Live) -> None:
    seeded = seed_hostile(live)
    with browser(live) as client:
        token = sign_in(client, seeded.bearer)
        key_id = in_db(
            live,
            lambda conn: conn.execute(
                select(api_keys.c.id).where(api_keys.c.project_id == seeded.project_id)
            ).scalar_one(),
            write=False,
        )
        assert (
            client.post(f"/console/keys/{key_id}/revoke", data={"csrf": token}).status_code == 303
        )
        answer = client.get("/console")
    assert answer.status_code == 303
    assert answer.headers["location"] == "/console/sign-in"


def test_sign_out_forgets_the_session(live: Live, seeded: Seeded) -> None:
    with browser(live) as client:
        token = sign_in(client, seeded.bearer)
        kept = client.cookies["hearth_console"]
        out = client.post("/console/sign-out", data={"csrf": token})
        assert out.status_code == 303
        assert out.headers["location"] == "/console/sign-in"
        assert (
            'hearth_console=""' in out.headers["set-cookie"]
            or "Max-Age=0" in out.headers["set-cookie"]
        )
    with browser(live) as thief:
        thief.cookies.set("hearth_console", kept, path="/console")
        assert thief.get("/console").status_code == 303
    assert keys.hash_bearer(kept) not in {
        row.id_hash
        for row in in_db(
            live, lambda conn: conn.execute(select(console_sessions)).all(), write=False
        )
    }


def test_hostile_text_is_text_on_every_page(live: Live, seeded: Seeded) -> None:
    with browser(live) as client:
        sign_in(client, seeded.bearer)
        pages = {path: client.get(path).text for path in pages_of(seeded)}
    for path, page in pages.items():
        # Markup would start with the tag's "<"; as text it is "&lt;" (and quotes are escaped).
        for tag in ("<script>window", "<img", "<svg onload", "<b onmouseover", '<a href="j'):
            assert tag not in page, (path, tag)
        # Every link is the console's own: a path, or a query of this page.
        for target in re.findall(r'(?:href|src|action)="([^"]*)"', page):
            assert target.startswith(("/console", "?")), (path, target)
        assert '"><script>' not in page, path
        assert page.count("<script") == 1, path  # the console's own file, nothing else
    identity_page = pages[f"/console/identities/{seeded.identity_id}"]
    # The wake's Markdown leaves a link as the text it was written as, target included.
    assert "[innocent](javascript:window.__pwned=&#39;md&#39;)" in identity_page or (
        "[innocent](javascript:window.__pwned='md')" in identity_page
    )
    assert "&lt;b onmouseover" in pages["/console"]
    assert any(marker in identity_page for marker in MARKERS)
    runtime_page = pages[f"/console/runtimes/{seeded.runtime_id}"]
    assert "&lt;script&gt;window.__pwned" in runtime_page  # metadata and last error, as text
    assert HOSTILE[0] not in runtime_page


def test_a_runtime_is_changed_restarted_and_deleted_after_confirmation(live: Live) -> None:
    seeded = seed_hostile(live)
    runtime = f"/console/runtimes/{seeded.runtime_id}"
    with browser(live) as client, live.client(seeded.bearer) as api:
        token = sign_in(client, seeded.bearer)
        changed = client.post(
            runtime,
            data={
                "csrf": token,
                "name": "renamed",
                "region": "fra",
                "metadata": '{"a": 1}',
                "llm_model": "claude-next",
                "advertised_url": "wss://bridge.example/rt",
            },
        )
        assert changed.status_code == 303
        view = api.get(f"/v1/runtimes/{seeded.runtime_id}").json()
        assert (view["name"], view["region"], view["metadata"]) == ("renamed", "fra", {"a": 1})
        assert view["llm"]["model"] == "claude-next"
        assert view["llm"]["provider"] == "anthropic"  # merged: what was not sent stays
        assert view["bridge"]["advertised_url"] == "wss://bridge.example/rt"
        bad = client.post(runtime, data={"csrf": token, "metadata": "{not json"})
        assert bad.status_code == 422
        assert api.get(f"/v1/runtimes/{seeded.runtime_id}").json()["metadata"] == {"a": 1}
        page = client.get(runtime).text
        assert 'class="state state-current"' in page
        assert ">error</text>" in page
        assert client.post(f"{runtime}/restart", data={"csrf": token}).status_code == 303
        assert api.get(f"/v1/runtimes/{seeded.runtime_id}").json()["status"] != "error"
        errored(live, seeded.runtime_id)
        # Without the confirmation the form only leads to the confirmation page.
        unconfirmed = client.post(f"{runtime}/delete", data={"csrf": token})
        assert unconfirmed.headers["location"] == f"{runtime}/delete"
        assert api.get(f"/v1/runtimes/{seeded.runtime_id}").json()["deleted"] is False
        confirm = client.get(f"{runtime}/delete")
        assert f'name="confirm" value="{seeded.runtime_id}"' in confirm.text
        deleted = client.post(
            f"{runtime}/delete", data={"csrf": token, "confirm": seeded.runtime_id}
        )
        assert deleted.status_code == 303
        assert api.get(f"/v1/runtimes/{seeded.runtime_id}").json()["deleted"] is True


def test_the_live_stream_needs_a_session_and_relays_the_projects_changes(
    live: Live, seeded: Seeded, tmp_path: Path
) -> None:
    with browser(live) as client:
        sign_in(client, seeded.bearer)
        with client.stream("GET", "/console/live", timeout=10) as stream:
            assert stream.status_code == 200
            assert stream.headers["content-security-policy"] == CSP
            lines = stream.iter_lines()
            assert next(line for line in lines if line.startswith("event:")) == "event: connected"
            with live.client(seeded.bearer) as api:
                stored = api.post(
                    "/v1/memories", json={"content": "fresh", "agent_id": seeded.identity_id}
                )
                assert stored.status_code == 201
            seen = []
            for line in lines:
                seen.append(line)
                if stored.json()["id"] in line:
                    break
    assert any("memory_stored" in line for line in seen)


def test_origin_null_is_taken_only_when_the_browser_says_same_origin(
    live: Live, seeded: Seeded
) -> None:
    # Chromium sends "Origin: null" with a page's own form under Referrer-Policy: no-referrer.
    with browser(live) as client:
        token = sign_in(client, seeded.bearer)
        before = in_db(live, counts, write=False)
        for headers in ({"Origin": "null"}, {"Origin": "null", "Sec-Fetch-Site": "same-site"}):
            refused = client.post(
                "/console/keys", data={"name": "n", "csrf": token}, headers=headers
            )
            assert refused.status_code == 403
        assert in_db(live, counts, write=False) == before
        taken = client.post(
            "/console/keys",
            data={"name": "same origin", "csrf": token},
            headers={"Origin": "null", "Sec-Fetch-Site": "same-origin"},
        )
        assert taken.status_code == 200


def listed(page: str) -> int:
    """The memories the page's list holds (one "open" link each)."""
    region = page.split('<div id="memories" data-live-region>', 1)[1].split("</div>", 1)[0]
    return region.count('">open</a>')


def test_memories_are_searched_and_paged(live: Live) -> None:
    seeded = seed_hostile(live)
    with live.client(seeded.bearer) as api:
        for index in range(55):
            stored = api.post(
                "/v1/memories",
                json={"content": f"kettle number {index}", "agent_id": seeded.identity_id},
            )
            assert stored.status_code == 201
        total = len(
            api.get(f"/v1/memories?agent_id={seeded.identity_id}&limit=200").json()["items"]
        )
    assert 50 < total < 100
    page_of = f"/console/identities/{seeded.identity_id}"
    with browser(live) as client:
        sign_in(client, seeded.bearer)
        first = client.get(page_of).text
        assert listed(first) == 50
        next_link = re.search(r'href="(\?cursor=[^"]+)"', first)
        assert next_link is not None
        second = client.get(page_of + next_link.group(1).replace("&amp;", "&")).text
        assert listed(second) == total - 50
        found = client.get(page_of, params={"q": "kettle 42"}).text
        assert "kettle number 42" in found
        refused = client.get(page_of, params={"q": '"unclosed'})
        assert refused.status_code == 200
        assert 'class="error" role="alert"' in refused.text
        episodic = client.get(page_of, params={"tier": "constitutive"}).text
        assert "No memories." in episodic


def test_an_adds_receipt_is_listed_with_its_validation(live: Live, seeded: Seeded) -> None:
    with browser(live) as client:
        sign_in(client, seeded.bearer)
        listing = client.get("/console/adds", params={"kind": "receipt"}).text
        document = client.get(f"/console/adds/{seeded.receipt_cid}")
        unknown = client.get(
            "/console/adds/bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy"
        )
    assert seeded.receipt_cid in listing
    assert document.status_code == 200
    assert "Valid ADDS document of kind <strong>receipt</strong>" in document.text
    assert '"commitment":"store"' in document.text.replace("&#34;", '"')
    assert unknown.status_code == 404


def test_sessions_on_postgresql(tmp_path: Path) -> None:
    """The session table and its lookup (the join on api_keys) on PostgreSQL, where several
    service processes share one database."""
    with live_on("postgresql", tmp_path) as pg, browser(pg) as client:
        seeded = seed_hostile(pg)
        token = sign_in(client, seeded.bearer)
        assert client.get(f"/console/identities/{seeded.identity_id}").status_code == 200
        assert client.post("/console/sign-out", data={"csrf": token}).status_code == 303
        assert client.get("/console").status_code == 303
        sign_in(client, seeded.bearer)
        with pg.client(seeded.bearer) as api:
            key_id = api.get("/v1/keys").json()["keys"][0]["id"]
            assert api.delete(f"/v1/keys/{key_id}").status_code == 204
        assert client.get("/console").status_code == 303


def test_expired_sessions_open_nothing_and_are_swept(live: Live, seeded: Seeded) -> None:
    with browser(live) as client:
        sign_in(client, seeded.bearer)
        kept = client.cookies["hearth_console"]
        in_db(
            live,
            lambda conn: conn.execute(
                update(console_sessions)
                .where(console_sessions.c.id_hash == keys.hash_bearer(kept))
                .values(expires_at=datetime(2000, 1, 1))
            ),
        )
        assert client.get("/console").status_code == 303
        sign_in(client, seeded.bearer)  # a new session of the same key sweeps the expired one
    hashes = {
        row.id_hash
        for row in in_db(
            live, lambda conn: conn.execute(select(console_sessions)).all(), write=False
        )
    }
    assert keys.hash_bearer(kept) not in hashes


def test_behind_a_tls_proxy_the_cookie_is_secure_and_the_origin_is_the_public_one(
    tmp_path: Path,
) -> None:
    public = "https://console.example"
    settings = sqlite_settings(tmp_path, public_base_url=public, behind_tls_proxy=True)
    with live_service(settings) as proxied, browser(proxied) as client:
        seeded = seed_hostile(proxied)
        answer = client.post(
            "/console/sign-in", data={"bearer": seeded.bearer}, headers={"Origin": public}
        )
        assert answer.status_code == 303
        assert "secure" in answer.headers["set-cookie"].lower()
        # httpx keeps a Secure cookie for https only: the proxy's view, sent by hand.
        client.cookies.set("hearth_console", answer.cookies["hearth_console"], path="/console")
        token = form_token(client)
        socket_origin = client.post(
            "/console/keys", data={"name": "n", "csrf": token}, headers={"Origin": proxied.base_url}
        )
        assert socket_origin.status_code == 403
        made = client.post(
            "/console/keys", data={"name": "n", "csrf": token}, headers={"Origin": public}
        )
        assert made.status_code == 200


def test_signing_in_again_closes_the_browsers_previous_session(live: Live, seeded: Seeded) -> None:
    with browser(live) as client:
        sign_in(client, seeded.bearer)
        first = client.cookies["hearth_console"]
        sign_in(client, seeded.bearer)
        second = client.cookies["hearth_console"]
    assert first != second
    hashes = {
        row.id_hash
        for row in in_db(
            live, lambda conn: conn.execute(select(console_sessions)).all(), write=False
        )
    }
    assert keys.hash_bearer(first) not in hashes
    assert keys.hash_bearer(second) in hashes


def timeline(page: str) -> str:
    return page.split('<ol id="chronicle"', 1)[1].split("</ol>", 1)[0]


def test_the_chronicle_and_the_inbox_are_paged(live: Live) -> None:
    seeded = seed_hostile(live)
    with live.client(seeded.bearer) as api:
        for index in range(25):
            for path, body in (
                (
                    "/v1/chronicle",
                    {"kind": "vow", "text": f"vow {index}", "agent_id": seeded.identity_id},
                ),
                (
                    f"/v1/identities/{seeded.identity_id}/inbox",
                    {"sender": "s", "body": f"m {index}"},
                ),
            ):
                assert api.post(path, json=body).status_code == 201
    page_of = f"/console/identities/{seeded.identity_id}"
    with browser(live) as client:
        sign_in(client, seeded.bearer)
        first = client.get(page_of).text
        older = re.search(r'href="\?chronicle_cursor=([^"#]+)', first)
        messages = re.search(r'href="\?inbox_cursor=([^"#]+)', first)
        assert older is not None
        assert messages is not None
        assert "vow 24" in timeline(first)
        assert "vow 0<" not in timeline(first)
        rest = client.get(page_of, params={"chronicle_cursor": unquote(older.group(1))}).text
        assert "vow 0<" in timeline(rest)
        assert "vow 24" not in timeline(rest)
        inbox_rest = client.get(page_of, params={"inbox_cursor": unquote(messages.group(1))}).text
        assert '<td class="content">m 0</td>' in inbox_rest
