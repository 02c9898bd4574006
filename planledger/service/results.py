"""What commands return: decisions, sessions and verify reports (not read models)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from domain.models import Violation

DecisionStatus = Literal["committed", "rejected", "conflict"]


class Decision(BaseModel):
    status: DecisionStatus
    revision: int = Field(description="The committed revision after the call.")
    proposal_id: str
    violations: list[Violation] = []
    current_revision: int
    store_position: int | None = Field(
        default=None,
        description="Store position of the last event written (None when nothing was written).",
    )


class GoalView(BaseModel):
    goal_id: str
    objective: str
    state: str


class SessionView(BaseModel):
    session_id: str
    mode: str
    goals: list[GoalView]
    should_continue: bool


class Problem(BaseModel):
    session_id: str
    position: int
    rule: str
    message: str


class VerifyReport(BaseModel):
    ok: bool
    sessions_checked: int
    problems: list[Problem]
