"""The live feed: plan events in store order, woken by the database, resumable by position."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from domain.errors import error_line
from domain.models import Model
from projections.shapes import HistoryEntry, PlanView

if TYPE_CHECKING:  # asyncio is imported where it runs: a one-shot command never needs it
    import asyncio


class FeedEvent(Model):
    """One proposed / committed / rejected event, with the plan a commit left."""

    store_position: int
    session_id: str
    kind: Literal["proposed", "committed", "rejected"]
    entry: HistoryEntry
    plan: PlanView | None = None

    @property
    def name(self) -> str:
        """The event's name on the wire: plan.proposed, plan.committed or plan.rejected."""
        return f"plan.{self.kind}"

    def as_json(self) -> dict[str, Any]:
        """The entry's JSON (spec history shape) plus session_id, store_position and plan."""
        data: dict[str, Any] = {
            "session_id": self.session_id,
            "store_position": self.store_position,
            **self.entry.model_dump(mode="json", by_alias=True, exclude_none=True),
        }
        if self.entry.transitions is not None:
            data["transitions"] = [
                t.model_dump(mode="json", by_alias=True) for t in self.entry.transitions
            ]
        if self.plan is not None:
            data["plan"] = self.plan.model_dump(mode="json")
        return data


class ChangeSignal:
    """One thread waits on the database (LISTEN/NOTIFY or SQLite's data_version) and wakes
    every async follower in this process; each follower then re-queries from its position."""

    def __init__(self, wait_for_change: Callable[[float], bool]) -> None:
        self._wait_for_change = wait_for_change
        self._lock = threading.Lock()
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = []
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self.generation = 0
        self.error: str | None = None

    def start(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="feed", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                changed = self._wait_for_change(0.5)
                self.error = None
            except Exception as error:  # the database went away: say so, retry shortly
                self.error = error_line(error, 200)
                self._stop.wait(0.5)
                changed = True  # re-query from the followers' positions once it is back
            if changed:
                self.fire()

    def fire(self) -> None:
        """Wake every follower (also called after a write in this process)."""
        with self._lock:
            self.generation += 1
            waiters, self._waiters = self._waiters, []
        for loop, event in waiters:
            with contextlib.suppress(RuntimeError):  # that loop has closed
                loop.call_soon_threadsafe(event.set)

    async def wait(self, timeout: float) -> None:
        """Return after the next change (or `timeout` seconds)."""
        self.start()
        import asyncio

        event = asyncio.Event()
        with self._lock:
            self._waiters.append((asyncio.get_running_loop(), event))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(event.wait(), timeout)

    def stop(self) -> None:
        self._stop.set()
        thread = self._thread
        if thread is not None:
            thread.join(2)
