"""`planledger tui`: Textual pilot tests on a real store (directly and through a real server),
the installed command's exit code, the cost of a key press on a long history, and snapshots."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from rich.text import Text
from textual.pilot import Pilot
from textual.widgets import DataTable, Static

from planledger.clients.tui.app import PlanLedgerTui
from planledger.clients.tui.direct import DirectSource
from planledger.clients.tui.remote import HttpSource
from planledger.clients.tui.source import Loaded, PlanSource
from planledger.service import FeedEvent, PlanLedger, open_planledger
from planledger.service.ledger import Call
from planledger.service.results import SessionView
from projections.shapes import PlanView
from tests.e2e.test_cli import planledger_command
from tests.e2e.test_server import running_server
from tests.integration.storage import chain_again

SIZE = (110, 32)
LIVE_DEADLINE = 1.0  # the spec: a commit by any writer shows within 1 s at the latest


def strict(revision: int) -> dict[str, Any]:
    """Revision r of a 4-step strict plan: steps done one by one (r = 1..4)."""
    steps = []
    for i, (step_id, title) in enumerate(
        [
            ("inspect", "Inspect durable state"),
            ("implement", "Implement archive writer"),
            ("tests", "Write the tests"),
            ("docs", "Document the format"),
        ]
    ):
        status = (
            "completed" if i < revision - 1 else "in_progress" if i == revision - 1 else "pending"
        )
        steps.append({"id": step_id, "title": title, "status": status})
    return {"title": "Implement session export", "goal_id": "export", "steps": steps}


def seed(service: PlanLedger, session_id: str, revisions: int) -> None:
    service.open_session(session_id)
    service.start_goal(session_id, "export", "Ship session export")
    for revision in range(1, revisions + 1):
        # (an actor of its own: the local user's name would differ from machine to machine)
        service.submit(
            session_id, strict(revision), client="test", proposal_id=f"r{revision}", actor="agent"
        )
        if revision == 1:  # one refused proposal in the history
            bad = {"title": " ", "steps": [{"id": "inspect", "title": "x", "status": "done"}]}
            service.submit(session_id, bad, client="test", proposal_id="refused", actor="agent")


@pytest.fixture
def service(sqlite_url: str) -> Iterator[PlanLedger]:
    with open_planledger(sqlite_url, home=None) as opened:
        yield opened


def text_of(app: PlanLedgerTui, selector: str) -> str:
    content = app.query_one(selector, Static).content
    return content.plain if isinstance(content, Text) else str(content)


async def until(pilot: Pilot[None], check: Callable[[], bool], timeout: float) -> float:
    """Seconds until `check()` holds; fails the test past `timeout`."""
    started = time.monotonic()
    while not check():
        if time.monotonic() - started > timeout:
            raise AssertionError(f"not true within {timeout} s")
        await pilot.pause(0.02)
    return time.monotonic() - started


def run_app(
    source: PlanSource, scenario: Callable[[PlanLedgerTui, Pilot[None]], Awaitable[None]]
) -> None:
    async def main() -> None:
        app = PlanLedgerTui(source, await asyncio.to_thread(source.load))
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            await scenario(app, pilot)

    try:
        asyncio.run(main())
    finally:
        source.close()


# -- keys ---------------------------------------------------------------------------------------


def test_arrow_home_and_end_walk_the_revisions(service: PlanLedger) -> None:
    seed(service, "keys", 3)

    async def scenario(app: PlanLedgerTui, pilot: Pilot[None]) -> None:
        assert text_of(app, "#status").startswith("revision 3 of 3 · live")
        assert "[>] Write the tests" in text_of(app, "#plan")
        assert "[>] → [x] implement" in text_of(app, "#changes")
        await pilot.press("left")
        assert text_of(app, "#status").startswith("revision 2 of 3 · 1 newer")
        assert "[>] Implement archive writer" in text_of(app, "#plan")
        await pilot.press("home", "left")
        assert text_of(app, "#status").startswith("revision 1 of 3 · 2 newer")
        assert "∅   → [>] inspect" in text_of(app, "#changes")
        await pilot.press("right")
        assert text_of(app, "#status").startswith("revision 2 of 3")
        await pilot.press("end", "right")
        assert text_of(app, "#status").startswith("revision 3 of 3 · live")
        goals = text_of(app, "#session")
        assert "session keys  mode work" in goals and "goal export [active]" in goals
        await pilot.press("q")
        await pilot.pause()
        assert app.return_code == 0 and not app.is_running

    run_app(DirectSource(service, "keys"), scenario)


def test_h_shows_focuses_and_hides_the_history_and_enter_jumps_to_a_revision(
    service: PlanLedger,
) -> None:
    seed(service, "hist", 2)

    async def scenario(app: PlanLedgerTui, pilot: Pilot[None]) -> None:
        table = app.query_one("#history", DataTable)
        kinds = [str(table.get_row_at(row)[2]) for row in range(table.row_count)]
        assert kinds == ["proposed", "committed", "proposed", "rejected", "proposed", "committed"]
        assert table.cursor_row == 5  # on the commit of the revision on display
        await pilot.press("h")
        assert table.display and table.has_focus
        await pilot.press("end")  # a focused DataTable would take End: the app's binding wins
        assert text_of(app, "#status").startswith("revision 2 of 2 · live")
        await pilot.press("up", "up", "enter")  # the rejected proposal: revision 1 was in force
        assert text_of(app, "#status").startswith("revision 1 of 2")
        await pilot.press("h")
        assert not table.display
        await pilot.press("h")
        assert table.display and table.has_focus

    run_app(DirectSource(service, "hist"), scenario)


# -- live ---------------------------------------------------------------------------------------


def test_a_commit_by_another_writer_shows_within_a_second(database_url: str) -> None:
    with open_planledger(database_url, home=None) as writer:
        seed(writer, "live", 1)
        reader = open_planledger(database_url, home=None)  # its own connections and feed

        async def scenario(app: PlanLedgerTui, pilot: Pilot[None]) -> None:
            await pilot.pause(0.3)  # let the feed start waiting
            await asyncio.to_thread(writer.submit, "live", strict(2), proposal_id="r2")
            waited = await until(
                pilot, lambda: text_of(app, "#status").startswith("revision 2 of 2 · live"), 3.0
            )
            assert waited < LIVE_DEADLINE, f"the commit showed after {waited:.2f} s"
            assert "[>] Implement archive writer" in text_of(app, "#plan")
            assert app.query_one("#history", DataTable).row_count == 6

        run_app(DirectSource(reader, "live", owned=True), scenario)


def test_scrubbed_back_the_view_stays_put_and_says_newer_revisions_exist(
    sqlite_url: str, tmp_path: Path
) -> None:
    with open_planledger(sqlite_url, home=None) as writer:
        seed(writer, "scrub", 2)
    reader = open_planledger(sqlite_url, home=None)

    async def scenario(app: PlanLedgerTui, pilot: Pilot[None]) -> None:
        await pilot.press("left")
        before = text_of(app, "#plan")
        done = await asyncio.to_thread(plan_update_process, sqlite_url, tmp_path, "scrub", 3)
        assert done.returncode == 0, done.stderr
        await until(pilot, lambda: "revision 1 of 3 · 2 newer" in text_of(app, "#status"), 3.0)
        assert text_of(app, "#plan") == before
        assert "[>] Inspect durable state" in before
        await pilot.press("end")
        assert text_of(app, "#status").startswith("revision 3 of 3 · live")
        assert "[>] Write the tests" in text_of(app, "#plan")

    run_app(DirectSource(reader, "scrub", owned=True), scenario)


def plan_update_process(
    database: str, home: Path, session_id: str, revision: int
) -> subprocess.CompletedProcess[str]:
    """`planledger plan update` in a process of its own: another writer."""
    env = {**os.environ, "PLANLEDGER_HOME": str(home / "writer")}
    env.pop("PLANLEDGER_DATABASE_URL", None)
    return subprocess.run(
        [planledger_command(), "--database", database, "plan", "update", session_id],
        input=json.dumps(strict(revision)),
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


# -- through a server ---------------------------------------------------------------------------


class Counting:
    """A source that counts the calls made to it (the app's only way to the data)."""

    def __init__(self, source: PlanSource) -> None:
        self.source = source
        self.session_id = source.session_id
        self.label = source.label
        self.calls: Counter[str] = Counter()

    def load(self) -> Loaded:
        self.calls["load"] += 1
        return self.source.load()

    def session(self) -> SessionView:
        self.calls["session"] += 1
        return self.source.session()

    def plan_at(self, revision: int) -> PlanView:
        self.calls["plan_at"] += 1
        return self.source.plan_at(revision)

    def follow(self, after: int) -> AsyncIterator[FeedEvent]:
        self.calls["follow"] += 1
        return self.source.follow(after)

    def close(self) -> None:
        self.source.close()


def test_server_source_reads_the_api_and_follows_the_sse_stream(
    sqlite_url: str, tmp_path: Path
) -> None:
    with open_planledger(sqlite_url, home=None) as writer:
        seed(writer, "remote", 2)
    with running_server(sqlite_url, tmp_path / "home", token="t0k") as server:
        env = {**os.environ, "PLANLEDGER_TOKEN": "t0k"}
        unknown = subprocess.run(
            [planledger_command(), "tui", "nope", "--server", server.url],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        assert unknown.returncode == 2 and unknown.stdout == ""
        assert unknown.stderr.count("\n") == 1 and "session_not_found" in unknown.stderr
        source = Counting(HttpSource(server.url, "remote", token="t0k"))

        async def scenario(app: PlanLedgerTui, pilot: Pilot[None]) -> None:
            assert text_of(app, "#status").startswith("revision 2 of 2 · live")
            await pilot.pause(0.3)
            with server.client() as api:
                api.post("/sessions/remote/plan", json=strict(3)).raise_for_status()
            waited = await until(
                pilot, lambda: text_of(app, "#status").startswith("revision 3 of 3 · live"), 3.0
            )
            assert waited < LIVE_DEADLINE, f"the commit showed after {waited:.2f} s"
            assert "[>] Write the tests" in text_of(app, "#plan")
            await pilot.press("home")  # not known yet over HTTP: fetched once, then kept
            await until(pilot, lambda: "[>] Inspect durable state" in text_of(app, "#plan"), 3.0)
            await pilot.press("right")
            await until(pilot, lambda: "[>] Implement archive" in text_of(app, "#plan"), 3.0)
            await pilot.press("left", "right", "left")
            assert "[>] Inspect durable state" in text_of(app, "#plan")
            # revision 1 fetched once; 2 came with the load, 3 with its event
            assert source.calls["plan_at"] == 1
            assert source.calls["load"] == 1

        run_app(source, scenario)


def test_an_unknown_session_exits_2_with_one_line_before_any_screen(tmp_path: Path) -> None:
    database = f"sqlite:///{tmp_path / 'ledger.sqlite3'}"
    env = {**os.environ, "PLANLEDGER_HOME": str(tmp_path)}

    def tui(session_id: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [planledger_command(), "--database", database, "tui", session_id],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )

    unknown = tui("nope")
    assert (unknown.returncode, unknown.stdout) == (2, "")
    assert (
        unknown.stderr == "planledger: error: session_not_found: no session 'nope'; open it first\n"
    )
    with open_planledger(database, home=None) as service:
        service.open_session("known")
    no_terminal = tui("known")  # a known session, but no terminal to draw on
    assert (no_terminal.returncode, no_terminal.stdout) == (2, "")
    assert no_terminal.stderr == (
        "planledger: error: planledger tui needs a terminal (use `plan show` or `plan history`)\n"
    )


def test_a_corrupt_session_exits_1_naming_the_rule(tmp_path: Path) -> None:
    database = tmp_path / "ledger.sqlite3"
    with open_planledger(f"sqlite:///{database}", home=None) as service:
        seed(service, "bad", 1)
    with sqlite3.connect(database) as conn:  # an edited row: revision 7 right after none
        (state,) = conn.execute(
            "SELECT state FROM stored_events WHERE originator_id='plan:bad' AND topic LIKE "
            "'%PlanCommitted' ORDER BY originator_version LIMIT 1"
        ).fetchone()
        conn.execute(
            "UPDATE stored_events SET state=? WHERE originator_id='plan:bad' AND state=?",
            (json.dumps({**json.loads(state), "revision": 7}).encode(), state),
        )
    chain_again(f"sqlite:///{database}", "plan:bad")  # the chain holds: the rules catch it
    env = {**os.environ, "PLANLEDGER_HOME": str(tmp_path)}
    command = [planledger_command(), "--database", f"sqlite:///{database}"]
    subprocess.run([*command, "projections", "rebuild"], capture_output=True, env=env, timeout=60)
    result = subprocess.run(
        [*command, "tui", "bad"], capture_output=True, text=True, env=env, timeout=60
    )
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.count("\n") == 1 and "[revision_sequence]" in result.stderr


# -- a long history -----------------------------------------------------------------------------


def codex(revision: int, steps: int) -> dict[str, Any]:
    active = revision % steps
    return {
        "plan": [
            {"step": f"Step {i:03d}", "status": "in_progress" if i == active else "pending"}
            for i in range(steps)
        ]
    }


def test_a_key_press_on_a_thousand_revisions_reads_nothing_from_the_store(
    service: PlanLedger,
) -> None:
    """1,000 revisions, the last 50 of them 100-step plans (bench/tui_scrub.py times it)."""
    service.open_session("long")
    calls = [Call(codex(r, 100 if r > 950 else 10), proposal_id=f"r{r}") for r in range(1, 1001)]
    for start in range(0, 1000, 250):
        service.submit_batch("long", calls[start : start + 250])
    reads: list[tuple[str, tuple[Any, ...]]] = []
    for name in ("events_after", "history", "plan", "session"):
        original = getattr(service, name)

        def counted(*args: Any, _name: str = name, _original: Any = original) -> Any:
            reads.append((_name, args))
            return _original(*args)

        setattr(service, name, counted)
    source = Counting(DirectSource(service, "long"))

    async def scenario(app: PlanLedgerTui, pilot: Pilot[None]) -> None:
        assert text_of(app, "#status").startswith("revision 1000 of 1000 · live")
        assert app.query_one("#history", DataTable).row_count == 2000
        await pilot.pause(0.3)  # the feed is up and waiting
        first = len(reads)
        for _ in range(10):
            await pilot.press("left")
        assert "[>] Step 090" in text_of(app, "#plan")  # revision 990 (990 % 100)
        await pilot.press("home", "right", "end", "left", "h", "up", "enter")
        await pilot.pause()
        assert text_of(app, "#status").startswith("revision 998 of 1000")
        assert "[>] Step 098" in text_of(app, "#plan")
        assert len(text_of(app, "#plan").splitlines()) == 101
        # The only reads while keys were pressed: the live feed asking for events after the
        # position it had reached (never the history from the start, never a plan).
        during = reads[first:]
        assert {name for name, _ in during} <= {"events_after", "session"}
        assert all(args[0] >= app.cursor > 0 for name, args in during if name == "events_after")
        assert source.calls["plan_at"] == 0 and source.calls["load"] == 1

    run_app(source, scenario)
    # The load: the session, its current view, then the history once, in pages of 500 each
    # after the last.
    loading = reads[:7]
    assert [name for name, _ in loading] == ["session", "plan"] + ["events_after"] * 5
    starts = [args[0] for _, args in loading[2:]]
    assert starts[0] == 0 and starts == sorted(set(starts))


# -- snapshots ----------------------------------------------------------------------------------

FROZEN = datetime(2026, 1, 2, 9, 0, tzinfo=UTC)


class Frozen(Counting):
    """The real source with its clock frozen: each entry at 09:00 + its position minutes."""

    def __init__(self, source: PlanSource) -> None:
        super().__init__(source)
        self.label = "sqlite (snapshot)"  # not the test's temporary path

    def load(self) -> Loaded:
        loaded = self.source.load()
        loaded.entries = [
            entry.model_copy(update={"at": FROZEN + timedelta(minutes=entry.position)})
            for entry in loaded.entries
        ]
        return loaded


@pytest.fixture
def snapshot_app(service: PlanLedger) -> Iterator[PlanLedgerTui]:
    seed(service, "snap", 3)
    source = Frozen(DirectSource(service, "snap"))
    yield PlanLedgerTui(source, source.load())
    source.close()


def test_snapshot_latest_revision(snap_compare: Any, snapshot_app: PlanLedgerTui) -> None:
    assert snap_compare(snapshot_app, terminal_size=SIZE)


def test_snapshot_scrubbed_back(snap_compare: Any, snapshot_app: PlanLedgerTui) -> None:
    assert snap_compare(snapshot_app, press=["left", "left"], terminal_size=SIZE)


def test_snapshot_history_focused(snap_compare: Any, snapshot_app: PlanLedgerTui) -> None:
    assert snap_compare(snapshot_app, press=["h", "up", "up"], terminal_size=SIZE)
