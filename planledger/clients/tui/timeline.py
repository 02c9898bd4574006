"""The history of one session as the viewer walks it: the revisions, and the one on display."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from projections.shapes import HistoryEntry, PlanView


class Timeline:
    """Entries in order, the commit of each revision, the plans known so far, and the
    revision on display. At the latest revision it follows: a new commit moves it along."""

    def __init__(
        self, entries: Iterable[HistoryEntry] = (), plans: Mapping[int, PlanView] | None = None
    ) -> None:
        self.entries: list[HistoryEntry] = []
        self.in_force: list[int] = []  # per entry: the revision committed at that point
        self.commits: dict[int, int] = {}  # revision -> index of its commit entry
        self.plans: dict[int, PlanView] = dict(plans or {})
        self.latest = 0
        self.selected = 0
        self.following = True
        for entry in entries:
            self.add(entry)

    def add(self, entry: HistoryEntry, plan: PlanView | None = None) -> bool:
        """Append one entry (False if it is already known, by its position in the session)."""
        if self.entries and entry.position <= self.entries[-1].position:
            return False
        self.entries.append(entry)
        if entry.kind == "committed" and entry.revision is not None:
            self.commits[entry.revision] = len(self.entries) - 1
            self.latest = max(self.latest, entry.revision)
            if plan is not None:
                self.plans[entry.revision] = plan
            if self.following:
                self.selected = self.latest
        self.in_force.append(self.latest)
        return True

    @property
    def first(self) -> int:
        return 1 if self.latest else 0

    @property
    def newer(self) -> int:
        """How many revisions were committed after the one on display."""
        return self.latest - self.selected

    def select(self, revision: int) -> None:
        """Show `revision` (clamped to the first..latest); at the latest, follow live."""
        self.selected = min(max(revision, self.first), self.latest)
        self.following = self.selected == self.latest

    def back(self) -> None:
        self.select(self.selected - 1)

    def forward(self) -> None:
        self.select(self.selected + 1)

    def home(self) -> None:
        self.select(self.first)

    def end(self) -> None:
        self.select(self.latest)

    def commit(self, revision: int) -> HistoryEntry | None:
        """The commit entry of `revision` (None for revision 0)."""
        index = self.commits.get(revision)
        return None if index is None else self.entries[index]

    def commit_row(self, revision: int) -> int | None:
        return self.commits.get(revision)

    def plan(self, revision: int) -> PlanView | None:
        return self.plans.get(revision)

    def header(self) -> str:
        """`revision N of M`, then `live` at the latest or how many are newer."""
        head = f"revision {self.selected} of {self.latest}"
        if self.following:
            return f"{head} · live"
        return f"{head} · {self.newer} newer (End: latest, live)"
