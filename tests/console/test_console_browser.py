"""The console in a real browser (docs/console.md, "Tests"): Debian's Chromium, headless, driven
by Playwright against a live service on a real socket. One browser for the module; each test
its own context (a fresh cookie jar). Screenshots of every page go to test-artifacts/console/."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, BrowserContext, ConsoleMessage, Dialog, Page, expect

from tests.support.console import (
    ARTIFACTS,
    FOCUSED,
    HOSTILE,
    UNLABELLED,
    Seeded,
    chromium,
    errored,
    named_pages,
    pages_of,
    seed_hostile,
)
from tests.support.live import Live, live_service, sqlite_settings


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    with live_service(sqlite_settings(tmp_path_factory.mktemp("console-browser"))) as running:
        yield running


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as running:
        yield running


@pytest.fixture
def context(browser: Browser) -> Iterator[BrowserContext]:
    made = browser.new_context()
    try:
        yield made
    finally:
        made.close()


class Watch:
    """What a page did that it must not: dialogs opened, console errors (a CSP violation is
    one), uncaught errors."""

    def __init__(self, page: Page) -> None:
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        page.on("dialog", self._dialog)
        page.on("console", self._console)
        page.on("pageerror", lambda error: self.errors.append(str(error)))

    def _dialog(self, dialog: Dialog) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def _console(self, message: ConsoleMessage) -> None:
        if message.type == "error":
            self.errors.append(message.text)


def signed_in(context: BrowserContext, live: Live, bearer: str) -> Page:
    page = context.new_page()
    page.goto(f"{live.base_url}/console")
    expect(page).to_have_url(f"{live.base_url}/console/sign-in")
    page.get_by_label("Project bearer").fill(bearer)
    page.get_by_label("Project bearer").press("Enter")
    expect(page).to_have_url(f"{live.base_url}/console")
    return page


def shot(page: Page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def test_sign_in_walk_every_page_then_sign_out(context: BrowserContext, live: Live) -> None:
    seeded = seed_hostile(live)
    page = signed_in(context, live, seeded.bearer)
    watch = Watch(page)
    cookie = next(c for c in context.cookies() if c["name"] == "hearth_console")
    assert cookie["httpOnly"]
    assert cookie["sameSite"] == "Strict"
    assert cookie["path"] == "/console"
    assert page.evaluate("document.cookie") == ""  # out of the page's reach
    for name, path in named_pages(seeded).items():
        page.goto(f"{live.base_url}{path}")
        assert page.url == f"{live.base_url}{path}"
        assert seeded.bearer not in page.content()
        assert page.evaluate(UNLABELLED) == [], path
        shot(page, name)
    page.goto(f"{live.base_url}/console/runtimes/{seeded.runtime_id}")
    expect(page.locator("svg.machine .state-current text")).to_have_text("error")
    page.get_by_role("button", name="Sign out").click()
    expect(page).to_have_url(f"{live.base_url}/console/sign-in")
    page.goto(f"{live.base_url}/console")
    expect(page).to_have_url(f"{live.base_url}/console/sign-in")
    assert page.evaluate(UNLABELLED) == []
    shot(page, "sign_in")
    assert watch.dialogs == []
    assert watch.errors == []


def test_tab_reaches_every_form_control_of_the_project_page(
    context: BrowserContext, live: Live
) -> None:
    seeded = seed_hostile(live)
    page = signed_in(context, live, seeded.bearer)
    reached = []
    for _ in range(60):
        page.keyboard.press("Tab")
        reached.append(page.evaluate(FOCUSED))
    assert "input#key-name[name]:" in reached
    assert any(r.startswith("button:Create key") for r in reached)
    assert any(r.startswith("button:Revoke") for r in reached)
    assert any(r.startswith("button:Sign out") for r in reached)
    # The key form works from the keyboard alone.
    page.focus("#key-name")
    page.keyboard.type("typed")
    page.keyboard.press("Enter")
    expect(page.locator("#new-key")).to_have_value(re.compile(r"^hk_"))


def test_a_key_is_created_shown_once_and_revoked(context: BrowserContext, live: Live) -> None:
    seeded = seed_hostile(live)
    page = signed_in(context, live, seeded.bearer)
    page.get_by_label("New key's name").fill("browser key")
    page.get_by_role("button", name="Create key").click()
    secret = page.locator("#new-key").input_value()
    assert secret.startswith("hk_")
    shot(page, "key_created")
    with live.client(secret) as api:
        assert api.get("/v1/keys").status_code == 200
    page.get_by_role("link", name="Back to the project").click()
    assert secret not in page.content()
    page.get_by_role("button", name="Revoke the key browser key").click()
    expect(page.get_by_role("button", name="Revoke the key browser key")).to_have_count(0)
    with live.client(secret) as api:
        assert api.get("/v1/keys").status_code == 401


def test_a_memory_stored_through_the_api_appears_live(context: BrowserContext, live: Live) -> None:
    seeded = seed_hostile(live)
    page = signed_in(context, live, seeded.bearer)
    page.goto(f"{live.base_url}/console/identities/{seeded.identity_id}")
    expect(page.locator("body")).to_have_attribute("data-live-connected", "true")
    page.evaluate("window.__sameDocument = true")
    with live.client(seeded.bearer) as api:
        stored = api.post(
            "/v1/memories",
            json={"content": "the kettle sings at seven", "agent_id": seeded.identity_id},
        )
    assert stored.status_code == 201
    expect(page.locator("#memories")).to_contain_text("the kettle sings at seven")
    assert page.evaluate("window.__sameDocument") is True  # no reload: the same document
    shot(page, "identity_live")


def test_an_errored_runtime_is_restarted(context: BrowserContext, live: Live) -> None:
    seeded = seed_hostile(live)
    page = signed_in(context, live, seeded.bearer)
    page.goto(f"{live.base_url}/console/runtimes/{seeded.runtime_id}")
    expect(page.locator("#runtime-status")).to_have_text("error")
    page.get_by_role("button", name="Restart").click()
    expect(page.locator("#runtime-status")).not_to_have_text("error")
    with live.client(seeded.bearer) as api:
        status = api.get(f"/v1/runtimes/{seeded.runtime_id}").json()["status"]
    expect(page.locator("svg.machine .state-current text")).to_have_text(status)
    # A crash seen live: the orchestrator's move, announced, redraws the page without a reload.
    expect(page.locator("body")).to_have_attribute("data-live-connected", "true")
    errored(live, seeded.runtime_id)
    with live.client(seeded.bearer) as api:
        # The orchestrator announces its moves; a test's move is announced by an update.
        assert api.patch(f"/v1/runtimes/{seeded.runtime_id}", json={"name": "after"}).is_success
    expect(page.locator("#runtime-status")).to_have_text("error")
    shot(page, "runtime_restarted")


def test_hostile_content_is_shown_as_text_and_never_runs(
    context: BrowserContext, live: Live
) -> None:
    seeded: Seeded = seed_hostile(live)
    page = signed_in(context, live, seeded.bearer)
    watch = Watch(page)
    for path in pages_of(seeded):
        page.goto(f"{live.base_url}{path}")
        page.mouse.move(5, 5)
        for link in page.locator("main a").all()[:5]:
            link.hover()
        assert page.evaluate("typeof window.__pwned") == "undefined", path
        assert page.locator("main img").count() == 0, path
        assert page.locator("main a[href^='javascript']").count() == 0, path
        assert page.locator("main script").count() == 0, path
    page.goto(f"{live.base_url}/console/identities/{seeded.identity_id}")
    text = page.locator("main").inner_text()
    for hostile in (HOSTILE[0], "[innocent](javascript:window.__pwned='md')"):
        assert hostile in text  # visible, as the characters that were stored
    page.goto(f"{live.base_url}/console/runtimes/{seeded.runtime_id}")
    assert HOSTILE[0] in page.locator("main").inner_text()
    shot(page, "hostile_runtime")
    assert watch.dialogs == []
    assert watch.errors == []  # not even a CSP violation: nothing tried to run
