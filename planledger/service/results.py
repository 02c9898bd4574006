"""What commands return: decisions, sessions and verify reports (not read models)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, PrivateAttr

from domain.models import Model, Violation
from projections.shapes import PlanView

DecisionStatus = Literal["committed", "rejected", "conflict"]


class Decision(Model):
    status: DecisionStatus
    revision: int = Field(description="The committed revision after the call.")
    proposal_id: str
    violations: list[Violation] = Field(default_factory=list)
    current_revision: int
    store_position: int | None = Field(
        default=None,
        description="Store position of the last event written (None when nothing was written).",
    )
    _view: PlanView | None = PrivateAttr(default=None)

    @property
    def view(self) -> PlanView | None:
        """The plan view the call's commit wrote (None unless this call committed it)."""
        return self._view


class GoalView(Model):
    goal_id: str
    objective: str
    state: str


class SessionView(Model):
    session_id: str
    mode: str
    goals: list[GoalView]
    should_continue: bool
    source: str | None = None
    parent_session_id: str | None = None
    cwd: str | None = None


class Problem(Model):
    session_id: str
    position: int
    rule: str
    message: str


class VerifyReport(Model):
    ok: bool
    sessions_checked: int
    problems: list[Problem]
