"""`planledger export` as a reviewer gets it: the JSON shape of the spec, Markdown, and one HTML
file that opens in headless Chromium with no request outside itself and shows hostile text as
text; a corrupt session is reported up to where it breaks, and exits 1."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import Browser

from planledger.service import open_planledger
from tests.e2e import test_web
from tests.e2e.test_cli import Cli
from tests.e2e.test_web import HOSTILE
from tests.integration.storage import edit_event

browser = test_web.browser  # headless Chromium, as the web page's tests launch it


def codex(*steps: tuple[str, str]) -> str:
    return json.dumps({"plan": [{"step": text, "status": status} for text, status in steps]})


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    cli = Cli(tmp_path / "home")
    cli("session", "open", "s1")
    cli("goal", "start", "s1", "g1", f"Ship it {HOSTILE}")
    cli("plan", "update", "s1", stdin=codex(("Look", "in_progress"), (HOSTILE, "pending")))
    cli("plan", "update", "s1", stdin=codex(("Look", "in_progress"), ("Fix", "in_progress")))
    cli("plan", "update", "s1", stdin=codex(("Look", "completed"), (HOSTILE, "in_progress")))
    return cli


def test_the_json_report_has_the_specs_shape(cli: Cli) -> None:
    result = cli("export", "s1", "--format", "json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert {"session", "goals", "revisions", "rejections", "chain_head", "verified"} <= set(report)
    assert report["verified"] is True and len(report["chain_head"]) == 64
    assert [g["goal_id"] for g in report["goals"]] == ["g1"]
    assert [r["revision"] for r in report["revisions"]] == [1, 2]
    first, second = report["revisions"]
    assert {"revision", "at", "actor", "plan", "transitions"} <= set(first)
    assert first["actor"] and first["plan"]["steps"][1]["title"] == HOSTILE
    assert second["transitions"] == [
        {"step_id": "look", "from": "in_progress", "to": "completed"},
        {"step_id": second["plan"]["steps"][1]["id"], "from": "pending", "to": "in_progress"},
    ]
    (rejection,) = report["rejections"]
    assert {"proposal_id", "at", "actor", "violations"} <= set(rejection)
    assert [v["code"] for v in rejection["violations"]] == ["multiple_in_progress"]


def test_markdown_names_revisions_rejections_and_the_verdict(cli: Cli, tmp_path: Path) -> None:
    out = tmp_path / "report.md"
    assert cli("export", "s1", "--out", str(out)).returncode == 0
    text = out.read_text()
    assert "verified: every rule" in text and "### Revision 2" in text
    assert "multiple_in_progress" in text
    assert "\\<img src=x" in text  # hostile text is escaped, never markup
    assert not re.search(r"(?<!\\)<img", text)


def test_the_html_report_opens_offline_and_shows_hostile_text_as_text(
    cli: Cli, tmp_path: Path, browser: Browser
) -> None:
    out = tmp_path / "report.html"
    assert cli("export", "s1", "--format", "html", "--out", str(out)).returncode == 0
    page = browser.new_page()
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.goto(out.as_uri())
    assert requests == [out.as_uri()]  # nothing from anywhere else
    assert "verified" in page.inner_text("#verdict")
    assert page.locator("section.rev").count() == 2
    assert page.locator("img").count() == 0 and not dialogs
    assert HOSTILE in page.inner_text("body")
    page.close()


def test_a_corrupt_session_is_reported_up_to_where_it_breaks(cli: Cli) -> None:
    url = f"sqlite:///{cli.home / 'ledger.sqlite3'}"
    with open_planledger(url, home=None):  # (the schema is there)
        pass

    def reopen(data: dict[str, object]) -> None:
        snapshot = data["snapshot"]
        assert isinstance(snapshot, dict)
        snapshot["_data_"]["steps"][0]["status"] = "pending"

    edit_event(url, "plan:s1", 7, reopen)  # the second commit, re-chained: a rule breaks
    result = cli("export", "s1", "--format", "json")
    assert result.returncode == 1
    report = json.loads(result.stdout)
    assert report["verified"] is False
    assert [r["revision"] for r in report["revisions"]] == [1]
    assert report["problems"][0]["position"] == 7
