"""Request and response bodies of the HTTP API (OpenAPI shows them)."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import Path as PathParam
from pydantic import BaseModel, Field

from domain.ids import ID_PATTERN
from planledger.service.results import Decision
from projections.shapes import PlanView

ID_REGEX = ID_PATTERN.pattern.replace("\\Z", "$")

SessionId = Annotated[
    str, PathParam(pattern=ID_REGEX, max_length=128, description="The session id.")
]
GoalId = Annotated[str, PathParam(pattern=ID_REGEX, max_length=128)]


class OpenSessionBody(BaseModel):
    session_id: str = Field(pattern=ID_REGEX, max_length=128)
    mode: Literal["work", "plan"] = "work"


class ModeBody(BaseModel):
    mode: Literal["work", "plan"]


class StartGoalBody(BaseModel):
    goal_id: str = Field(pattern=ID_REGEX, max_length=128)
    objective: str


class CommittedBody(Decision):
    status: Literal["committed"]
    plan: PlanView


class RejectedBody(Decision):
    status: Literal["rejected"]


class ConflictBody(Decision):
    status: Literal["conflict"]


class Health(BaseModel):
    status: Literal["ok", "degraded", "unavailable"]
    store_position: int
    error: str | None = None
    warnings: list[str] | None = None
