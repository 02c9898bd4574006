"""`planledger tui`: one session's plan at any revision, its changes and its history, live."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from functools import partial
from typing import ClassVar

from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import DataTable, Footer, Static

from planledger.clients.tui.source import Loaded, PlanSource
from planledger.clients.tui.texts import error_line, plan_text, session_text, transitions_text
from planledger.clients.tui.timeline import Timeline
from planledger.clients.tui.widgets import HistoryTable
from planledger.service import FeedEvent

SESSION_REFRESH_SECONDS = 5.0
RETRY_SECONDS = 1.0


class PlanLedgerTui(App[None]):
    """Reads through a `PlanSource` only: the history once, then the live feed; a plan not
    yet known (over HTTP) is fetched for the revision on display and kept."""

    TITLE = "plan ledger"
    CSS = """
    #status { dock: top; height: 1; padding: 0 1; background: $panel; }
    #session { height: auto; padding: 0 1; }
    #body { height: 1fr; }
    #plan-box { width: 3fr; border: round $primary; padding: 0 1; }
    #changes-box { width: 2fr; border: round $secondary; padding: 0 1; }
    #history { height: 40%; border: round $accent; }
    .stale { color: $warning; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("left", "older", "older", key_display="←", priority=True),
        Binding("right", "newer", "newer", key_display="→", priority=True),
        Binding("home", "first", "first", priority=True),
        Binding("end", "latest", "latest (live)", priority=True),
        Binding("h", "history", "history", priority=True),
        Binding("q", "quit", "quit", priority=True),
    ]

    def __init__(self, source: PlanSource, loaded: Loaded) -> None:
        super().__init__()
        self.source = source
        self.session_view = loaded.session
        self.timeline = Timeline(loaded.entries, loaded.plans)
        self.cursor = loaded.cursor
        self.feed_error: str | None = None
        self.failures = 0

    def compose(self) -> ComposeResult:
        yield Static(id="status")
        yield Static(id="session")
        with Horizontal(id="body"):
            with VerticalScroll(id="plan-box"):
                yield Static(id="plan")
            with VerticalScroll(id="changes-box"):
                yield Static(id="changes")
        yield HistoryTable(id="history")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(HistoryTable).append(self.timeline.entries)
        self.query_one("#session", Static).update(session_text(self.session_view))
        self.query_one("#plan-box").focus()
        self.show()
        self.follow_feed()
        self.set_interval(SESSION_REFRESH_SECONDS, self.refresh_session)

    # -- keys -------------------------------------------------------------------------------

    def action_older(self) -> None:
        self.move(self.timeline.back)

    def action_newer(self) -> None:
        self.move(self.timeline.forward)

    def action_first(self) -> None:
        self.move(self.timeline.home)

    def action_latest(self) -> None:
        self.move(self.timeline.end)

    def move(self, step: Callable[[], None]) -> None:
        """Apply a timeline move; redraw only if it changed what is on display."""
        before = (self.timeline.selected, self.timeline.following)
        step()
        if (self.timeline.selected, self.timeline.following) != before:
            self.show()

    def action_history(self) -> None:
        """Show and focus the history; pressed again in it, hide it."""
        table = self.query_one(HistoryTable)
        if table.display and table.has_focus:
            table.display = False
            self.query_one("#plan-box").focus()
        else:
            table.display = True
            table.focus()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        """Enter on a history row shows the revision in force at that entry."""
        self.timeline.select(self.timeline.in_force[event.cursor_row])
        self.show()

    # -- drawing ----------------------------------------------------------------------------

    def show(self) -> None:
        """Redraw every pane for the revision on display (cost: that plan, not the history)."""
        timeline = self.timeline
        revision = timeline.selected
        self.show_status()
        plan = timeline.plan(revision)
        if plan is None and revision > 0:
            self.fetch_plan(revision)
        self.query_one("#plan", Static).update(plan_text(plan, revision))
        self.query_one("#plan-box").border_title = f"plan · revision {revision}"
        self.query_one("#changes-box").border_title = f"changes in revision {revision}"
        self.query_one("#changes", Static).update(transitions_text(timeline.commit(revision)))
        row = timeline.commit_row(revision)
        if row is not None:
            self.query_one(HistoryTable).show_row(row)

    def show_status(self) -> None:
        status = self.query_one("#status", Static)
        text = f"{self.timeline.header()}  │  {self.source.session_id} on {self.source.label}"
        if self.feed_error:
            text += f" · live feed interrupted, retrying: {self.feed_error}"
        status.update(text)
        status.set_class(not self.timeline.following or bool(self.feed_error), "stale")

    # -- background work --------------------------------------------------------------------

    @work(exclusive=True, group="plan")
    async def fetch_plan(self, revision: int) -> None:
        try:
            plan = await asyncio.to_thread(self.source.plan_at, revision)
        except Exception as error:
            if self.timeline.selected == revision:
                message = f"cannot read revision {revision}: {error_line(error)}"
                self.query_one("#plan", Static).update(message)
            return
        self.timeline.plans[revision] = plan
        if self.timeline.selected == revision:
            self.show()

    @work(exclusive=True, group="feed")
    async def follow_feed(self) -> None:
        """Every new event of the session, from any writer; reconnects after a failure."""
        while True:
            try:
                async for event in self.source.follow(self.cursor):
                    self.receive(event)
            except Exception as error:
                self.failures += 1
                self.feed_error = error_line(error)
                self.show_status()
                await asyncio.sleep(RETRY_SECONDS)
                self.set_timer(2 * RETRY_SECONDS, partial(self.recovered, self.failures))

    def recovered(self, failures: int) -> None:
        """The feed has run without failing since attempt `failures`: clear its error."""
        if self.failures == failures and self.feed_error is not None:
            self.feed_error = None
            self.show_status()

    def receive(self, event: FeedEvent) -> None:
        self.cursor = max(self.cursor, event.store_position)
        self.recovered(self.failures)
        if self.timeline.add(event.entry, event.plan):
            self.query_one(HistoryTable).append([event.entry])
            if event.kind == "committed":
                self.show()

    @work(exclusive=True, group="session")
    async def refresh_session(self) -> None:
        try:
            view = await asyncio.to_thread(self.source.session)
        except Exception:  # the feed's status line says what is wrong
            return
        if view != self.session_view:
            self.session_view = view
            self.query_one("#session", Static).update(session_text(view))
