"""The app against an in-memory source: the feed's retry after a failure, and a plan that
cannot be read (no database: the source is the app's only way to data)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from rich.text import Text
from textual.widgets import DataTable, Static

from domain.errors import RevisionNotFound
from planledger.clients.tui import app as app_module
from planledger.clients.tui.app import PlanLedgerTui
from planledger.clients.tui.remote import ServerUnavailable
from planledger.clients.tui.source import Loaded
from planledger.service import FeedEvent
from planledger.service.results import SessionView
from projections.shapes import PlanView
from tests.unit.tui_samples import entry, plan


class MemorySource:
    """Two revisions; plans known only for the latest; a feed that fails `failures` times."""

    session_id = "mem"
    label = "memory"

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.follows: list[int] = []
        self.events: asyncio.Queue[FeedEvent] = asyncio.Queue()

    def load(self) -> Loaded:
        entries = [entry(2, "proposed"), entry(3, "committed", 1)]
        entries += [entry(4, "proposed"), entry(5, "committed", 2)]
        return Loaded(self.session(), entries, {2: plan(2, "in_progress")}, cursor=50)

    def session(self) -> SessionView:
        return SessionView(session_id="mem", mode="plan", goals=[], should_continue=False)

    def plan_at(self, revision: int) -> PlanView:
        raise RevisionNotFound(f"no revision {revision} here")

    async def follow(self, after: int) -> AsyncIterator[FeedEvent]:
        self.follows.append(after)
        if self.failures:
            self.failures -= 1
            raise ServerUnavailable("the server went away")
        while True:
            yield await self.events.get()

    def close(self) -> None:
        pass


def commit(revision: int, position: int, store_position: int) -> FeedEvent:
    return FeedEvent(
        store_position=store_position,
        session_id="mem",
        kind="committed",
        entry=entry(position, "committed", revision),
        plan=plan(revision, "completed"),
    )


def text_of(app: PlanLedgerTui, selector: str) -> str:
    content = app.query_one(selector, Static).content
    return content.plain if isinstance(content, Text) else str(content)


def test_the_feed_says_it_is_interrupted_then_resumes_from_its_position(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(app_module, "RETRY_SECONDS", 1.0)
    source = MemorySource(failures=1)
    notice = "live feed interrupted, retrying: ServerUnavailable: the server went away"

    async def main() -> None:
        app = PlanLedgerTui(source, source.load())
        async with app.run_test() as pilot:
            deadline = asyncio.get_running_loop().time() + 3
            while notice not in text_of(app, "#status"):  # shown while it waits to retry
                assert asyncio.get_running_loop().time() < deadline, "the failure was not shown"
                await pilot.pause(0.02)
            deadline = asyncio.get_running_loop().time() + 5
            while len(source.follows) < 2:
                assert asyncio.get_running_loop().time() < deadline, "no retry"
                await pilot.pause(0.05)
            while "interrupted" in text_of(app, "#status"):  # reconnected: the error clears
                assert asyncio.get_running_loop().time() < deadline, "the error stays"
                await pilot.pause(0.05)
            source.events.put_nowait(commit(3, 7, 60))
            while not text_of(app, "#status").startswith("revision 3 of 3 · live"):
                assert asyncio.get_running_loop().time() < deadline, text_of(app, "#status")
                await pilot.pause(0.05)
            assert "interrupted" not in text_of(app, "#status")
            assert "[x] Step 0" in text_of(app, "#plan")
            assert app.cursor == 60

    asyncio.run(main())
    assert source.follows == [50, 50]  # the retry resumes where the load left off


def test_a_revision_that_cannot_be_read_says_so() -> None:
    source = MemorySource(failures=0)

    async def main() -> None:
        app = PlanLedgerTui(source, source.load())
        async with app.run_test() as pilot:
            assert "session mem  mode plan" in text_of(app, "#session")
            await pilot.press("left")
            deadline = asyncio.get_running_loop().time() + 3
            while "cannot read" not in text_of(app, "#plan"):
                assert asyncio.get_running_loop().time() < deadline, text_of(app, "#plan")
                await pilot.pause(0.05)
            expected = "cannot read revision 1: RevisionNotFound: no revision 1 here"
            assert text_of(app, "#plan") == expected

    asyncio.run(main())


def test_history_entries_arriving_twice_are_shown_once() -> None:
    source = MemorySource(failures=0)

    async def main() -> None:
        app = PlanLedgerTui(source, source.load())
        async with app.run_test() as pilot:
            await pilot.pause()
            source.events.put_nowait(commit(2, 5, 55))  # already loaded (same position)
            source.events.put_nowait(commit(3, 6, 56))
            while not text_of(app, "#status").startswith("revision 3"):
                await pilot.pause(0.05)
            assert app.timeline.latest == 3
            assert app.query_one("#history", DataTable).row_count == 5

    asyncio.run(asyncio.wait_for(main(), 10))
