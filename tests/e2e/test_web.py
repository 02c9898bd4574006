"""The web page in a real browser: `planledger serve` driven by Playwright's headless Chromium.

Chromium is Debian's (`apt-get install chromium`, done by `.ci/run` when missing): Playwright
cannot download its own here. Every page a test opens records each request it makes, and the
test fails if any left the server's origin or if the page threw. Waits poll with deadlines.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from planledger.service import open_planledger
from tests.e2e.test_cli import Cli
from tests.e2e.test_server import (
    PLAN_1,
    PLAN_2,
    PLAN_3,
    Server,
    get_json,
    open_session,
    propose,
    running_server,
)
from tests.integration.storage import edit_event

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
LIVE_WITHIN = 1.0  # the spec: a commit anywhere shows within 1 s
WAIT_MS = 10_000  # how long a wait may take before the test fails (a deadline, not a sleep)
TOKEN = "web-page-token-0123456789"
HOSTILE = "<img src=x onerror=alert(1)>"
TITLE = "Implement session export"
PLAN_3_STEPS = cast(list[dict[str, str]], PLAN_3["steps"])  # test_server leaves it untyped
PLAN_4 = {"title": TITLE, "steps": [{**step, "status": "completed"} for step in PLAN_3_STEPS]}
PLAN_REMOVING_A_STEP = {"title": TITLE, "steps": list(PLAN_1["steps"])[:1]}


# -- fixtures ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: apt-get install chromium (see .ci/run)")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def web_database(tmp_path_factory: pytest.TempPathFactory) -> str:
    return f"sqlite:///{tmp_path_factory.mktemp('web') / 'ledger.sqlite3'}"


@pytest.fixture(scope="module")
def web_server(web_database: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One SQLite server for the tests that each work in their own sessions."""
    with running_server(web_database, tmp_path_factory.mktemp("home")) as server:
        yield server


@pytest.fixture
def api(web_server: Server) -> Iterator[httpx.Client]:
    with web_server.client() as client:
        yield client


@dataclass
class Viewer:
    """A browser page on the server, with what it requested, alerted and threw."""

    page: Page
    requests: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def steps(self) -> list[tuple[str | None, str | None, str]]:
        """(data-step-id, data-status, text) of every element in #plan."""
        rows: list[list[Any]] = self.page.eval_on_selector_all(
            "#plan > *", "els => els.map(e => [e.dataset.stepId, e.dataset.status, e.textContent])"
        )
        return [(row[0], row[1], row[2]) for row in rows]

    def kinds(self) -> list[str]:
        kinds: list[str] = self.page.eval_on_selector_all(
            "#history > *", "els => els.map(e => e.dataset.kind)"
        )
        return kinds

    def wait_live(self) -> None:
        expect(self.page.locator("#live")).to_have_attribute("data-state", "live", timeout=WAIT_MS)


@contextmanager
def viewer(browser: Browser, server: Server) -> Iterator[Viewer]:
    """A fresh browser context (no cookies); afterwards, every request it made must have gone
    to the server, and the page must not have thrown or opened a dialog."""
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    page = context.new_page()
    seen = Viewer(page)
    context.on("request", lambda request: seen.requests.append(request.url))
    page.on("pageerror", lambda error: seen.errors.append(str(error)))

    def on_dialog(dialog: Any) -> None:
        seen.dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    try:
        yield seen
    finally:
        context.close()
    outside = [url for url in seen.requests if not url.startswith(f"{server.url}/")]
    assert seen.requests and not outside, outside
    assert not seen.errors, seen.errors
    assert not seen.dialogs, seen.dialogs


def expected_steps(payload: dict[str, Any]) -> list[tuple[str | None, str | None, str]]:
    return [(step["id"], step["status"], step["title"]) for step in payload["steps"]]


def wait_for_steps(view: Viewer, payload: dict[str, Any]) -> float:
    """Poll until #plan shows `payload`'s steps; the seconds it took."""
    started = time.monotonic()
    deadline = started + WAIT_MS / 1000
    while view.steps() != expected_steps(payload):
        if time.monotonic() > deadline:
            pytest.fail(f"#plan shows {view.steps()}, expected {expected_steps(payload)}")
        view.page.wait_for_timeout(20)
    return time.monotonic() - started


# -- the pages --------------------------------------------------------------------------------


def test_session_list_newest_first_links_to_each(
    browser: Browser, web_server: Server, api: httpx.Client
) -> None:
    open_session(api, "list-older")
    open_session(api, "list-newer", mode="plan")
    listed = [item["session_id"] for item in get_json(api, "/sessions")["sessions"]]
    assert listed.index("list-newer") < listed.index("list-older")
    with viewer(browser, web_server) as view:
        response = view.page.goto(f"{web_server.url}/ui")
        assert response is not None and response.status == 200
        rows = view.page.locator("#sessions tbody tr")
        assert rows.evaluate_all("rows => rows.map(r => r.dataset.sessionId)") == listed
        newer = view.page.locator('tr[data-session-id="list-newer"]')
        expect(newer).to_contain_text("plan")
        newer.get_by_role("link", name="list-newer").click()
        view.page.wait_for_url(f"{web_server.url}/ui/sessions/list-newer")
        expect(view.page.locator("#revision")).to_have_text("0", timeout=WAIT_MS)
        expect(view.page.locator("#plan-empty")).to_be_visible()
        assert view.steps() == []


def test_session_list_filters_by_source_and_searches_titles(
    browser: Browser, web_server: Server, web_database: str, api: httpx.Client, tmp_path: Path
) -> None:
    """The list shows each session's plan at a glance and where it comes from; the form keeps
    one source's sessions or those whose title holds the words (served, no script)."""
    open_session(api, "filter-http")
    propose(api, "filter-http", {"title": "Ship the filter export", "steps": PLAN_3_STEPS}, 200)
    with open_planledger(web_database, home=None) as service:
        service.open_session("filter-hook", source="claude-code", cwd="/work/filters")
        service.submit("filter-hook", {"op": "create", "title": "Write the filter test"})
        service.submit("filter-hook", {"op": "update", "id": "1", "status": "in_progress"})
        service.open_session("filter-sub", source="claude-code", parent_session_id="filter-hook")
    with viewer(browser, web_server) as view:
        page = view.page
        page.goto(f"{web_server.url}/ui")
        hook_row = page.locator('tr[data-session-id="filter-hook"]')
        expect(hook_row).to_contain_text("Write the filter test")  # its task in progress
        expect(hook_row).to_contain_text("0/1")
        expect(hook_row).to_contain_text("/work/filters")
        expect(page.locator('tr[data-session-id="filter-sub"]')).to_contain_text("from filter-hook")
        page.locator('select[name="source"]').select_option("claude-code")
        page.get_by_role("button", name="filter").click()
        page.wait_for_url(f"{web_server.url}/ui?source=claude-code&q=")
        shown = page.locator("#sessions tbody tr").evaluate_all(
            "rows => rows.map(r => r.dataset.sessionId)"
        )
        assert set(shown) == {"filter-hook", "filter-sub"}
        shot = tmp_path / "session-list.png"
        page.screenshot(path=str(shot), full_page=True)
        print(f"screenshot: {shot}")
        page.goto(f"{web_server.url}/ui?q=FILTER+EXPORT")
        shown = page.locator("#sessions tbody tr").evaluate_all(
            "rows => rows.map(r => r.dataset.sessionId)"
        )
        assert shown == ["filter-http"]
        page.goto(f"{web_server.url}/ui?q=nothing-like-this")
        expect(page.locator("#sessions")).to_have_text("No session matches.")
        page.goto(f"{web_server.url}/ui/sessions/filter-sub")
        expect(page.locator("#source")).to_have_text("claude-code")
        page.locator("#parent").get_by_role("link", name="filter-hook").click()
        page.wait_for_url(f"{web_server.url}/ui/sessions/filter-hook")
        expect(page.locator("#cwd")).to_have_text("/work/filters")


def test_a_task_lists_blockers_owners_and_operations(
    browser: Browser, web_server: Server, api: httpx.Client, tmp_path: Path
) -> None:
    """The step's text stays its title; blockers and owner are shown beside it (data
    attributes and the style sheet), and each proposal's operation in the history."""
    sid = "task-page"
    open_session(api, sid)
    for payload in (
        {"op": "create", "title": "Write the test"},
        {"op": "create", "title": "Fix the bug"},
        {"op": "update", "id": "2", "add_blocked_by": ["1"], "owner": "sub-agent"},
        {"op": "update", "id": "1", "status": "in_progress"},
    ):
        propose(api, sid, payload, 200)
    with viewer(browser, web_server) as view:
        page = view.page
        page.goto(f"{web_server.url}/ui/sessions/{sid}")
        expect(page.locator("#revision")).to_have_text("4", timeout=WAIT_MS)
        assert view.steps() == [
            ("1", "in_progress", "Write the test"),
            ("2", "pending", "Fix the bug"),
        ]
        second = page.locator('#plan > [data-step-id="2"]')
        expect(second).to_have_attribute("data-blocked-by", "1")
        expect(second).to_have_attribute("data-owner", "sub-agent")
        expect(page.locator("#history")).to_contain_text("update 2: owner sub-agent, blocked by 1")
        shot = tmp_path / "task-page.png"
        page.screenshot(path=str(shot), full_page=True)
        print(f"screenshot: {shot}")


def test_session_page_markup(
    browser: Browser, web_server: Server, api: httpx.Client, tmp_path: Path
) -> None:
    sid = "markup"
    open_session(api, sid)
    api.post(f"/sessions/{sid}/goals", json={"goal_id": "export", "objective": "Ship the export"})
    propose(api, sid, PLAN_1, 200)
    propose(api, sid, PLAN_2, 200)
    rejected = propose(api, sid, PLAN_REMOVING_A_STEP, 422)
    history = get_json(api, f"/sessions/{sid}/plan/history")["entries"]
    with viewer(browser, web_server) as view:
        view.page.goto(f"{web_server.url}/ui/sessions/{sid}")
        wait_for_steps(view, PLAN_2)
        page = view.page
        expect(page.locator("#revision")).to_have_text("2")
        expect(page.locator("#plan-title")).to_have_text(TITLE)
        assert view.kinds() == [entry["kind"] for entry in reversed(history)]
        rejection = page.locator('#history > [data-kind="rejected"]')
        for violation in rejected["violations"]:
            expect(rejection).to_contain_text(violation["code"])
        commit = page.locator(f'#history > [data-position="{history[3]["position"]}"]')
        expect(commit).to_have_attribute("data-kind", "committed")
        expect(commit).to_contain_text("revision 2")
        expect(commit).to_contain_text("inspect in_progress → completed")
        expect(commit).to_contain_text("verify added → pending")
        expect(page.locator('[data-goal-id="export"]')).to_contain_text("Ship the export")
        view.wait_live()
        shot = tmp_path / "web-session.png"
        page.screenshot(path=str(shot), full_page=True)
        print(f"screenshot: {shot}")
    assert {
        f"{web_server.url}/ui/static/ledger.js",
        f"{web_server.url}/ui/static/ledger.css",
    } <= set(view.requests)
    assert any(url.startswith(f"{web_server.url}/sessions/{sid}/events") for url in view.requests)


def test_unknown_session_is_a_404_page(browser: Browser, web_server: Server) -> None:
    with viewer(browser, web_server) as view:
        for sid in ("no-such-session", ".not-an-id"):
            response = view.page.goto(f"{web_server.url}/ui/sessions/{sid}")
            assert response is not None and response.status == 404
            assert response.headers["content-type"].startswith("text/html")
            expect(view.page.locator("h1")).to_have_text("Session not found")
            expect(view.page.locator("#not-found")).to_contain_text(sid)


def test_a_session_with_a_broken_chain_is_a_409_page_naming_where(
    browser: Browser, tmp_path: Path
) -> None:
    database = f"sqlite:///{tmp_path / 'ledger.sqlite3'}"
    with running_server(database, tmp_path / "home") as server:
        with server.client() as client:
            open_session(client, "edited")
            propose(client, "edited", PLAN_1, 200)

        def change(data: dict[str, Any]) -> None:
            data["mode"] = "plan"

        edit_event(database, "session:edited", 1, change, rechain=False)
        with viewer(browser, server) as view:
            response = view.page.goto(f"{server.url}/ui/sessions/edited")
            assert response is not None and response.status == 409
            assert response.headers["content-type"].startswith("text/html")
            expect(view.page.locator("h1")).to_have_text("Corrupt history")
            text = view.page.locator("#corrupt-history").inner_text()
            assert "edited" in text and "chain_broken" in text, text
            assert view.page.locator("#plan").count() == 0  # no history shown as the truth
            shot = tmp_path / "corrupt-session.png"
            view.page.screenshot(path=str(shot), full_page=True)
            print(f"screenshot: {shot}")


# -- live updates and the slider --------------------------------------------------------------


@pytest.mark.parametrize("database", ["sqlite", "postgres"])
def test_a_commit_anywhere_shows_within_a_second_without_reload(
    browser: Browser, tmp_path: Path, request: pytest.FixtureRequest, database: str
) -> None:
    url = str(request.getfixturevalue(f"{database}_url"))
    home = tmp_path / "home"
    sid = "live"
    with running_server(url, home) as server, server.client() as api:
        open_session(api, sid)
        propose(api, sid, PLAN_1, 200)
        with viewer(browser, server) as view:
            view.page.goto(f"{server.url}/ui/sessions/{sid}")
            wait_for_steps(view, PLAN_1)
            view.wait_live()
            view.page.evaluate("window.sameDocument = true")
            propose(api, sid, PLAN_2, 200)  # through this server's API
            assert wait_for_steps(view, PLAN_2) <= LIVE_WITHIN
            expect(view.page.locator("#revision")).to_have_text("2")
            written = Cli(home, url)("plan", "update", sid, "-", stdin=json.dumps(PLAN_3))
            assert written.returncode == 0, written.stderr  # another process, same database
            assert wait_for_steps(view, PLAN_3) <= LIVE_WITHIN
            expect(view.page.locator("#revision")).to_have_text("3")
            assert len(view.kinds()) == 6  # three proposals, three commits
            assert view.page.evaluate("window.sameDocument") is True  # never reloaded


def test_slider_shows_older_revisions_and_stays_put(
    browser: Browser, web_server: Server, api: httpx.Client, tmp_path: Path
) -> None:
    sid = "slider"
    open_session(api, sid)
    for payload in (PLAN_1, PLAN_2, PLAN_3):
        propose(api, sid, payload, 200)
    with viewer(browser, web_server) as view:
        page = view.page
        page.goto(f"{web_server.url}/ui/sessions/{sid}")
        wait_for_steps(view, PLAN_3)
        view.wait_live()
        revision, newer = page.locator("#revision"), page.locator("#newer")
        expect(newer).to_be_hidden()
        slider = page.locator("#slider")
        slider.focus()
        slider.press("ArrowLeft")
        slider.press("ArrowLeft")
        expect(revision).to_have_text("1")
        wait_for_steps(view, PLAN_1)
        slider.press("Home")
        expect(revision).to_have_text("0")
        expect(page.locator("#plan-empty")).to_be_visible()
        assert view.steps() == []
        slider.press("ArrowRight")
        wait_for_steps(view, PLAN_1)

        propose(api, sid, PLAN_4, 200)  # a new commit while looking back
        expect(newer).to_be_visible(timeout=WAIT_MS)
        expect(newer).to_contain_text("the latest is 4")
        expect(page.locator("#latest")).to_have_text("4")
        expect(revision).to_have_text("1")
        assert view.steps() == expected_steps(PLAN_1)
        assert slider.input_value() == "1"
        shot = tmp_path / "web-slider.png"
        page.screenshot(path=str(shot), full_page=True)
        print(f"screenshot: {shot}")

        page.locator("#compare summary").click()  # two revisions compared
        page.locator("#diff-from").fill("1")
        expect(page.locator("#diff-to")).to_have_value("4")
        page.locator("#diff-form button").click()
        changes = page.locator("#diff li")
        expect(changes.first).to_be_visible(timeout=WAIT_MS)
        assert [
            (item.get_attribute("data-change"), item.get_attribute("data-step-id"))
            for item in changes.all()
        ] == [("added", "verify"), ("status", "inspect"), ("status", "implement")]
        shot = tmp_path / "web-compare.png"
        page.screenshot(path=str(shot), full_page=True)
        print(f"screenshot: {shot}")

        page.locator('#history button:text-is("revision 2")').click()
        expect(revision).to_have_text("2")
        wait_for_steps(view, PLAN_2)
        page.locator("#to-latest").click()
        expect(revision).to_have_text("4")
        wait_for_steps(view, PLAN_4)
        expect(newer).to_be_hidden()


def test_a_proposal_shows_pending_until_decided(
    browser: Browser, web_server: Server, web_database: str, api: httpx.Client
) -> None:
    sid = "two-stage"
    open_session(api, sid)
    with viewer(browser, web_server) as view, open_planledger(web_database, home=None) as ledger:
        page = view.page
        page.goto(f"{web_server.url}/ui/sessions/{sid}")
        view.wait_live()
        proposal_id = ledger.propose(sid, PLAN_1, client="harness")  # the Python API, no server
        pending = page.locator('#history > [data-kind="proposed"].pending')
        expect(pending).to_have_count(1, timeout=WAIT_MS)
        expect(pending).to_contain_text("from harness")
        expect(page.locator("#revision")).to_have_text("0")
        assert ledger.decide(sid, proposal_id).status == "committed"
        wait_for_steps(view, PLAN_1)
        expect(pending).to_have_count(0)
        assert view.kinds() == ["committed", "proposed"]


# -- the token and hostile text ---------------------------------------------------------------


def test_token_opens_the_page_once_then_a_cookie_carries_it(
    browser: Browser, sqlite_url: str, tmp_path: Path
) -> None:
    sid = "guarded"
    with running_server(sqlite_url, tmp_path / "home", token=TOKEN) as server:
        with server.client() as api:
            open_session(api, sid)
            propose(api, sid, PLAN_1, 200)
        with server.client(anonymous=True) as anonymous:
            for path in ("/ui", f"/ui/sessions/{sid}", "/ui/static/ledger.js", "/ui?token=wrong"):
                response = anonymous.get(path)
                assert response.status_code == 401, (path, response.text)
                assert response.json()["error"]["code"] == "unauthorized"
        with viewer(browser, server) as view:
            page = view.page
            refused = page.goto(f"{server.url}/ui/sessions/{sid}")
            assert refused is not None and refused.status == 401
            opened = page.goto(f"{server.url}/ui/sessions/{sid}?token={TOKEN}")
            assert opened is not None and opened.status == 200
            assert page.url == f"{server.url}/ui/sessions/{sid}"  # the token left the address
            cookies = {c["name"]: c for c in page.context.cookies()}
            assert cookies["planledger_token"]["httpOnly"] is True
            wait_for_steps(view, PLAN_1)
            view.wait_live()  # the EventSource got in with the cookie
            with server.client() as api:
                propose(api, sid, PLAN_2, 200)
            assert wait_for_steps(view, PLAN_2) <= LIVE_WITHIN
            listing = page.goto(f"{server.url}/ui")
            assert listing is not None and listing.status == 200
            expect(page.locator(f'tr[data-session-id="{sid}"]')).to_be_visible()


def test_hostile_titles_stay_text(browser: Browser, web_server: Server, api: httpx.Client) -> None:
    sid = "hostile"
    open_session(api, sid)
    api.post(f"/sessions/{sid}/goals", json={"goal_id": "g", "objective": HOSTILE})
    first = {
        "title": HOSTILE,
        "steps": [
            {"id": "a", "title": HOSTILE, "status": "in_progress"},
            {"id": "b", "title": '"><script>alert(2)</script>', "status": "pending"},
        ],
    }
    propose(api, sid, first, 200)
    bad_id = {"title": "x", "steps": [{"id": HOSTILE, "title": "x", "status": "in_progress"}]}
    propose(api, sid, bad_id, 422)  # its violation quotes the id
    with viewer(browser, web_server) as view:
        page = view.page
        page.goto(f"{web_server.url}/ui/sessions/{sid}")
        wait_for_steps(view, first)
        view.wait_live()
        expect(page.locator("#plan-title")).to_have_text(HOSTILE)
        expect(page.locator('[data-goal-id="g"]')).to_contain_text(HOSTILE)
        expect(page.locator('#history > [data-kind="rejected"]')).to_contain_text(HOSTILE)
        live = {
            "title": HOSTILE,
            "steps": [*first["steps"], {"id": "c", "title": f"{HOSTILE}!", "status": "pending"}],
        }
        propose(api, sid, live, 200)  # arrives over the SSE stream
        wait_for_steps(view, live)
        assert page.locator("img").count() == 0
        assert page.locator("script").count() == 1  # the page's own
    assert not [url for url in view.requests if url.endswith("/x")]
