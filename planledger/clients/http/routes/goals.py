"""Durable goals of a session."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Request

from planledger.clients.http.bodies import GoalId, SessionId, StartGoalBody
from planledger.clients.http.deps import service_of
from planledger.clients.http.errors import ErrorBody
from planledger.service.results import GoalView, SessionView

router = APIRouter(tags=["goals"])
NOT_FOUND: dict[int | str, dict[str, Any]] = {404: {"model": ErrorBody}}


@router.post(
    "/sessions/{session_id}/goals",
    status_code=201,
    response_model=SessionView,
    responses={**NOT_FOUND, 409: {"model": ErrorBody}, 422: {"model": ErrorBody}},
)
def start_goal(request: Request, session_id: SessionId, body: StartGoalBody) -> SessionView:
    return service_of(request).start_goal(session_id, body.goal_id, body.objective)


@router.get("/sessions/{session_id}/goals", response_model=list[GoalView], responses=NOT_FOUND)
def list_goals(request: Request, session_id: SessionId) -> list[GoalView]:
    return service_of(request).session(session_id).goals


@router.post(
    "/sessions/{session_id}/goals/{goal_id}/{action}",
    response_model=SessionView,
    responses={**NOT_FOUND, 409: {"model": ErrorBody, "description": "illegal transition"}},
)
def move_goal(
    request: Request,
    session_id: SessionId,
    goal_id: GoalId,
    action: Literal["complete", "block", "resume", "cancel"],
) -> SessionView:
    return service_of(request).move_goal(session_id, goal_id, action)
