"""The projection runner: committed events, in order, applied exactly once to the views.

Writers store the views of their own events in the events' transaction while the views are
up to date, so the runner has work only when they are behind: after a rebuild, a schema change,
or events written without views. One batch = the events read after the tracked position; their
view rows, history rows and the new position commit together. A crash before that commit
leaves the old position and views, so the batch is simply applied again; a crash after it
leaves nothing to redo. A session whose history breaks a rule is marked corrupt (rule and
position kept) and every other session goes on. The plan.json files are derived from the
committed views and tracked separately (rewriting a file is idempotent).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from eventsourcing.persistence import Mapper, Notification
from eventsourcing.utils import get_topic

from domain.base import Event
from domain.errors import CorruptHistory
from domain.models import PlanSnapshot
from domain.session import Session
from projections.decode import bulk_mapper
from projections.fold import ViewChanges, fold_events
from projections.gc_pause import paused_gc
from projections.shapes import PlanView

VIEWS = "views"  # tracking name of the database views (plan view + history)
# The only events of a session's stream the views fold (see projections.fold.fold_events).
SESSION_TOPICS = frozenset(
    get_topic(event) for event in (Session.SessionOpened, Session.CollaborationModeChanged)
)


class StaleBatch(Exception):
    """Another runner moved the tracking position first; re-read and try again."""


@dataclass(frozen=True)
class LoadedView:
    version: int
    view: PlanView
    corrupt: bool


class ViewStorage(Protocol):
    """What the runner needs of the database that holds the views (see planledger.storage)."""

    def position(self, name: str) -> int: ...
    def read_notifications(self, after: int, limit: int) -> list[Notification]: ...
    def load_views(self, session_ids: Sequence[str]) -> dict[str, LoadedView]: ...
    def write_batch(
        self,
        expected_position: int,
        new_position: int,
        changes: ViewChanges,
        positions: dict[tuple[str, int], int],
    ) -> None: ...
    def wait_for_events(self, timeout: float) -> bool: ...
    def reset(self) -> None: ...
    def close(self) -> None: ...


class ProjectionRunner:
    """Feeds the views from the event store."""

    def __init__(
        self,
        store: ViewStorage,
        mapper: Mapper[Any],
        batch_size: int = 1000,
    ) -> None:
        self.store = store
        self.mapper = bulk_mapper(mapper, shared=(PlanSnapshot,))  # decodes as `mapper` does
        self.batch_size = batch_size
        self.changed = threading.Condition()
        self.position = self.store.position(VIEWS)
        self.corrupt: dict[str, CorruptHistory] = {}  # found by this runner, for reports

    # -- catching up --------------------------------------------------------------------------

    def catch_up(self, on_batch: Callable[[int, int], None] | None = None) -> int:
        """Apply every committed event not yet applied; returns the position reached.

        `on_batch(events_in_batch, position)` is called after each committed batch.
        """
        # Start from where the views are: writers move the position too.
        position = self.store.position(VIEWS)
        while True:
            batch = self.store.read_notifications(position, self.batch_size)
            if not batch:
                self._advance(position)
                return position
            try:
                with paused_gc():
                    position = self._apply(position, batch)
            except StaleBatch:  # another runner (or a writer) got there first
                position = self.store.position(VIEWS)
                continue
            self._advance(position)
            if on_batch:
                on_batch(len(batch), position)
            if len(batch) < self.batch_size:
                return position

    def _apply(self, position: int, batch: list[Notification]) -> int:
        touched = sorted(
            {
                str(n.originator_id).removeprefix("plan:")
                for n in batch
                if str(n.originator_id).startswith("plan:")
            }
        )
        loaded = self.store.load_views(touched)
        events: list[tuple[Event, int]] = []
        unreadable: dict[str, CorruptHistory] = {}
        positions: dict[tuple[str, int], int] = {}
        for notification in batch:
            originator = str(notification.originator_id)
            positions[(originator, notification.originator_version)] = notification.id
            if originator.startswith("session:") and notification.topic not in SESSION_TOPICS:
                continue  # goal events: the views take nothing from them, so none is decoded
            try:
                event = self.mapper.to_domain_event(notification)
            except Exception as error:  # an edited row that no longer decodes
                session_id = originator.partition(":")[2]
                if originator.startswith("plan:") and session_id not in unreadable:
                    unreadable[session_id] = CorruptHistory(
                        session_id,
                        notification.originator_version,
                        "unreadable_event",
                        f"{type(error).__name__}: {str(error).splitlines()[0][:300]}",
                    )
                continue
            assert isinstance(event, Event)
            session_id = originator.removeprefix("plan:")
            if session_id in unreadable:
                continue
            events.append((event, notification.id))
        views: dict[str, PlanView | None] = {
            sid: loaded[sid].view if sid in loaded else None for sid in touched
        }
        corrupt = [sid for sid, view in loaded.items() if view.corrupt]
        changes = fold_events(views, events, corrupt=[*corrupt, *unreadable])
        changes.corrupt.update(unreadable)
        reached = batch[-1].id
        self.store.write_batch(position, reached, changes, positions)
        self.corrupt.update(changes.corrupt)
        return reached

    # -- waiting ------------------------------------------------------------------------------

    def _advance(self, position: int) -> None:
        with self.changed:
            if position == self.position:
                return
            self.position = position
            self.changed.notify_all()

    def wait_for(self, position: int, timeout: float = 5.0) -> bool:
        """Block until this runner has applied `position` (True) or time out."""
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
        self.corrupt.clear()
        with self.changed:
            self.position = 0
        return self.catch_up(on_batch)

    def close(self) -> None:
        self.store.close()
