"""The machine-readable shapes of the spec: what `--json` prints and HTTP returns."""

from __future__ import annotations

import operator
from datetime import datetime
from typing import Any, Literal

from pydantic import ConfigDict, Field

from domain.models import Model, PlanSnapshot, Step, TaskOperation, Violation


class PendingProposalView(Model):
    proposal_id: str
    form: str | None
    expected_revision: int | None
    proposed_at: datetime
    candidate: PlanSnapshot | None = None  # what a commit of it must equal (re-checked)
    operation: TaskOperation | None = None  # a task-form proposal's operation (re-applied)
    # Found when it was read: a commit of it breaks the rules (left out of the JSON when none).
    shape_violations: tuple[Violation, ...] = Field(default=(), exclude_if=operator.not_)


class RejectionView(Model):
    proposal_id: str
    violations: list[Violation]


class PlanView(Model):
    session_id: str
    revision: int
    policy: str | None
    title: str | None
    goal_id: str | None
    steps: list[Step]
    pending_proposal: PendingProposalView | None
    last_rejection: RejectionView | None = None
    updated_at: datetime | None


class Transition(Model):
    # A status None (a step added or removed) may be left out of a stored history entry,
    # which keeps no null (planledger.storage.view_rows); every output writes both.
    step_id: str
    from_: str | None = Field(default=None, alias="from", serialization_alias="from")
    to: str | None = None

    model_config = ConfigDict(populate_by_name=True)


class HistoryEntry(Model):
    position: int
    kind: Literal["proposed", "committed", "rejected"]
    proposal_id: str
    at: datetime
    revision: int | None = None
    form: str | None = None
    client: str | None = None
    actor: str | None = None  # a proposal's sender: a token's name, or a local user
    expected_revision: int | None = None
    operation: TaskOperation | None = None  # a task-form proposal: the operation as sent
    transitions: list[Transition] | None = None
    violations: list[Violation] | None = None


class History(Model):
    session_id: str
    entries: list[HistoryEntry]

    def as_json(self) -> dict[str, Any]:
        """The spec's shape: optional entry keys left out, `from`/`to` kept even when null."""
        data = self.model_dump(mode="json", by_alias=True)
        data["entries"] = [
            {key: value for key, value in entry.items() if value is not None}
            for entry in data["entries"]
        ]
        return data


class CorruptMark(Model):
    """Where a session's history breaks a rule: its plan is never shown past it."""

    rule: str
    position: int
    message: str


class Progress(Model):
    completed: int
    total: int  # steps that are not cancelled


class SessionListItem(Model):
    """One session of the list: its plan at a glance (a corrupt one's plan is not shown) and
    where it comes from (each None when unknown)."""

    session_id: str
    mode: str
    revision: int
    updated_at: datetime
    title: str | None = None  # the plan's title, else its (first) step in progress
    progress: Progress = Field(default_factory=lambda: Progress(completed=0, total=0))
    source: str | None = None
    parent_session_id: str | None = None
    cwd: str | None = None
    corrupt: bool = False


class SessionList(Model):
    sessions: list[SessionListItem]
