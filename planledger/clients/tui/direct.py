"""The terminal UI's source on the database itself, through the service layer."""

from __future__ import annotations

from collections.abc import AsyncIterator

from planledger.clients.tui.source import Loaded
from planledger.service import FeedEvent, PlanLedger
from planledger.service.results import SessionView
from projections.shapes import PlanView

PAGE = 500


class DirectSource:
    """Reads a session through a `PlanLedger`: the history once (each commit carries the plan it
    left, so every revision is known without replaying), then the service's live feed."""

    def __init__(self, service: PlanLedger, session_id: str, *, owned: bool = False) -> None:
        self.service = service
        self.session_id = session_id
        self.label = service.database.display_url
        self._owned = owned

    def load(self) -> Loaded:
        loaded = Loaded(session=self.service.session(self.session_id), entries=[])
        self.service.plan(self.session_id)  # a session whose history is corrupt stops here
        while True:
            page = self.service.events_after(loaded.cursor, self.session_id, PAGE)
            for event in page:
                loaded.entries.append(event.entry)
                if event.plan is not None and event.entry.revision is not None:
                    loaded.plans[event.entry.revision] = event.plan
                loaded.cursor = event.store_position
            if len(page) < PAGE:
                return loaded

    def session(self) -> SessionView:
        return self.service.session(self.session_id)

    def plan_at(self, revision: int) -> PlanView:
        return self.service.plan(self.session_id, revision)

    def follow(self, after: int) -> AsyncIterator[FeedEvent]:
        return self.service.follow(self.session_id, after)

    def close(self) -> None:
        if self._owned:
            self.service.close()
