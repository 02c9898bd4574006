"""The projection runner: committed events, in order, applied exactly once to the views.

One batch = the events read after the tracked position; their view rows, history rows and the
new position commit together. A crash before that commit leaves the old position and views, so
the batch is simply applied again; a crash after it leaves nothing to redo. The plan.json files
are derived from the committed views and tracked separately (rewriting a file is idempotent).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from eventsourcing.persistence import Mapper, Notification

from domain.base import Event
from domain.errors import ErrorKind, LedgerError, SessionNotFound
from domain.ids import validate_id
from domain.plan import Plan
from domain.session import Session
from projections.fold import apply_plan_event
from projections.plan_json import write_plan_file
from projections.shapes import History, HistoryEntry, PlanView

VIEWS = "views"  # tracking name of the database views (plan view + history)


class StaleBatch(Exception):
    """Another runner moved the tracking position first; re-read and try again."""


@dataclass(frozen=True)
class HistoryRow:
    session_id: str
    notification_id: int
    entry: HistoryEntry
    view: PlanView | None = None  # the plan as this commit left it (live clients show it)


@dataclass(frozen=True)
class SessionRow:
    session_id: str
    mode: str
    at: datetime


HistoryValues = tuple[str, int, int, str, str, str | None]


class ViewStorage(Protocol):
    """What the runner needs of the database that holds the views (see planledger.storage)."""

    def position(self, name: str) -> int: ...
    def set_position(self, name: str, position: int) -> None: ...
    def read_notifications(self, after: int, limit: int) -> list[Notification]: ...
    def load_views(self, session_ids: Sequence[str]) -> dict[str, PlanView]: ...
    def write_batch(
        self,
        expected_position: int,
        new_position: int,
        views: dict[str, tuple[int, PlanView]],
        history: Sequence[HistoryRow],
        sessions: Sequence[SessionRow] = (),
    ) -> None: ...
    def views_changed_after(self, position: int) -> list[tuple[str, PlanView]]: ...
    def plan_view(self, session_id: str) -> PlanView | None: ...
    def history(self, session_id: str) -> list[HistoryEntry]: ...
    def wait_for_events(self, timeout: float) -> None: ...
    def reset(self) -> None: ...
    def close(self) -> None: ...


SESSION_TOPICS = ("Session.SessionOpened", "Session.CollaborationModeChanged")
PLAN_EVENTS = (Plan.PlanProposed, Plan.PlanCommitted, Plan.PlanRejected)


class ProjectionHalted(LedgerError):
    """An event the views cannot apply: the runner stops before it, position unchanged."""

    kind = ErrorKind.CORRUPT
    code = "corrupt_history"

    def __init__(self, position: int, originator: str, reason: str) -> None:
        super().__init__(
            f"projection halted at event {position} ({originator}): {reason}; the views stay "
            f"at the event before it"
        )
        self.position = position


class ProjectionRunner:
    """Feeds the views (and optionally plan.json files under `home`) from the event store."""

    def __init__(
        self,
        store: ViewStorage,
        mapper: Mapper[Any],
        home: Path | None = None,
        batch_size: int = 1000,
    ) -> None:
        self.store = store
        self.mapper = mapper
        self.home = home
        self.batch_size = batch_size
        self.files_tracking = f"plan_json:{home.resolve()}" if home else None
        self.changed = threading.Condition()
        self.position = self.store.position(VIEWS)
        self.on_advance: list[Callable[[int], None]] = []  # e.g. wake live (SSE) clients

    # -- catching up --------------------------------------------------------------------------

    def catch_up(self, on_batch: Callable[[int, int], None] | None = None) -> int:
        """Apply every committed event not yet applied; returns the position reached.

        `on_batch(events_in_batch, position)` is called after each committed batch.
        """
        self.sync_files()
        # Where this runner last left the views. If another runner moved them since, the
        # batch write finds out (StaleBatch) and we continue from the stored position.
        position = self.position
        while True:
            batch = self.store.read_notifications(position, self.batch_size)
            if not batch:
                self._advance(position)
                return position
            try:
                position, halted = self._apply(position, batch)
            except StaleBatch:  # another runner applied it first: start from where it got
                position = self.store.position(VIEWS)
                continue
            self._advance(position)  # wake waiters before writing any file
            self.sync_files()
            if on_batch:
                on_batch(len(batch), position)
            if halted is not None:
                raise halted
            if len(batch) < self.batch_size:
                return position  # that was everything committed when we read; a later commit
                # wakes the follower again (its NOTIFY waits in the listening connection)

    def _apply(
        self, position: int, batch: list[Notification]
    ) -> tuple[int, ProjectionHalted | None]:
        touched = sorted(
            {
                str(n.originator_id).removeprefix("plan:")
                for n in batch
                if str(n.originator_id).startswith("plan:")
            }
        )
        loaded = self.store.load_views(touched)
        changed: dict[str, tuple[int, PlanView]] = {}
        history: list[HistoryRow] = []
        sessions: list[SessionRow] = []
        reached = position
        halted: ProjectionHalted | None = None
        for notification in batch:
            try:
                self._fold(notification, loaded, changed, history, sessions)
            except Exception as error:
                halted = ProjectionHalted(
                    notification.id,
                    str(notification.originator_id),
                    f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}",
                )
                break
            reached = notification.id
        if reached > position:
            self.store.write_batch(position, reached, changed, history, sessions)
        return reached, halted

    def _fold(
        self,
        notification: Notification,
        views: dict[str, PlanView],
        changed: dict[str, tuple[int, PlanView]],
        history: list[HistoryRow],
        sessions: list[SessionRow],
    ) -> None:
        originator = str(notification.originator_id)
        if not originator.startswith("plan:"):
            if notification.topic.endswith(SESSION_TOPICS):
                event = self.mapper.to_domain_event(notification)
                assert isinstance(event, Session.SessionOpened | Session.CollaborationModeChanged)
                session_id = originator.removeprefix("session:")
                sessions.append(SessionRow(session_id, str(event.mode), event.timestamp))
            return  # goal events change no view; the position still advances
        event = self.mapper.to_domain_event(notification)
        assert isinstance(event, Event)
        session_id = originator.removeprefix("plan:")
        view = views.get(session_id)
        if view is None and isinstance(event, PLAN_EVENTS):
            raise ValueError("a plan event for a session whose plan was never created")
        new_view, entry = apply_plan_event(view, session_id, event)
        if new_view is not None:
            views[session_id] = new_view
            changed[session_id] = (notification.id, new_view)
        if entry is not None:
            view_after = new_view if entry.kind == "committed" else None
            history.append(HistoryRow(session_id, notification.id, entry, view_after))

    def sync_files(self) -> None:
        """Bring the plan.json files up to the committed views."""
        if self.home is None or self.files_tracking is None:
            return
        views_at = self.store.position(VIEWS)
        files_at = self.store.position(self.files_tracking)
        if files_at >= views_at:
            return
        for _, view in self.store.views_changed_after(files_at):
            write_plan_file(self.home, view)
        self.store.set_position(self.files_tracking, views_at)

    # -- reads (after catching up, so a reader sees every committed write) --------------------

    def plan_view(self, session_id: str) -> PlanView:
        validate_id(session_id)
        self.catch_up()
        view = self.store.plan_view(session_id)
        if view is None:
            raise SessionNotFound(session_id)
        return view

    def history(self, session_id: str) -> History:
        self.plan_view(session_id)
        return History(session_id=session_id, entries=self.store.history(session_id))

    # -- waiting ------------------------------------------------------------------------------

    def _advance(self, position: int) -> None:
        with self.changed:
            if position == self.position:
                return
            self.position = position
            self.changed.notify_all()
        for listener in self.on_advance:
            listener(position)

    def wait_for(self, position: int, timeout: float = 5.0) -> bool:
        """Read-your-writes: block until the views include `position` (True) or time out."""
        with self.changed:
            return self.changed.wait_for(lambda: self.position >= position, timeout=timeout)

    def run(self, stop: threading.Event, idle_timeout: float = 1.0) -> None:
        """Follow the event store until `stop` is set: catch up at every wake-up."""
        self.store.wait_for_events(0)  # start listening before the first catch-up
        while not stop.is_set():
            self.catch_up()
            self.store.wait_for_events(idle_timeout)

    def rebuild(self, on_batch: Callable[[int, int], None] | None = None) -> int:
        """Drop every view and position, then apply all events again."""
        self.store.reset()
        with self.changed:
            self.position = 0
        return self.catch_up(on_batch)

    def close(self) -> None:
        self.store.close()
