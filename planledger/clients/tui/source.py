"""Where the terminal UI reads from: one interface, read directly or over a server's API."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Protocol

from planledger.service import FeedEvent
from planledger.service.results import SessionView
from projections.shapes import HistoryEntry, PlanView


@dataclass
class Loaded:
    """A session as first read: its history, the plans known so far, and where to follow on."""

    session: SessionView
    entries: list[HistoryEntry]
    plans: dict[int, PlanView] = field(default_factory=dict)  # revision -> committed plan
    cursor: int = 0  # store position to follow after


class PlanSource(Protocol):
    """What the app reads. `load`, `session` and `plan_at` block (call them off the UI loop);
    `follow` yields every plan event after a store position, live, until cancelled."""

    session_id: str
    label: str  # where the data comes from, for the title bar

    def load(self) -> Loaded:
        """The session and its whole history, once; `not_found` for an unknown session."""
        ...

    def session(self) -> SessionView:
        """The session's mode and goals now."""
        ...

    def plan_at(self, revision: int) -> PlanView:
        """The committed plan as it stood at `revision`."""
        ...

    def follow(self, after: int) -> AsyncIterator[FeedEvent]:
        """The session's plan events after store position `after`, then each new one."""
        ...

    def close(self) -> None: ...
