"""Sessions and the user-controlled mode."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from planledger.clients.http.bodies import ModeBody, OpenSessionBody, SessionId
from planledger.clients.http.deps import service_of
from planledger.clients.http.errors import ErrorBody
from planledger.service.results import SessionView
from projections.shapes import SessionList

router = APIRouter(tags=["sessions"])
NOT_FOUND: dict[int | str, dict[str, Any]] = {404: {"model": ErrorBody}}


@router.post(
    "/sessions", status_code=201, response_model=SessionView, responses={409: {"model": ErrorBody}}
)
def open_session(request: Request, body: OpenSessionBody) -> SessionView:
    """Open a session (409 if it exists)."""
    return service_of(request).open_session(body.session_id, body.mode, source="http")


@router.get("/sessions", response_model=SessionList)
def list_sessions(request: Request) -> SessionList:
    """Every session, the most recently active first."""
    return service_of(request).sessions()


@router.get("/sessions/{session_id}", response_model=SessionView, responses=NOT_FOUND)
def show_session(request: Request, session_id: SessionId) -> SessionView:
    return service_of(request).session(session_id)


@router.put("/sessions/{session_id}/mode", response_model=SessionView, responses=NOT_FOUND)
def set_mode(request: Request, session_id: SessionId, body: ModeBody) -> SessionView:
    """Switch the collaboration mode (the user's explicit command)."""
    return service_of(request).set_mode(session_id, body.mode)
