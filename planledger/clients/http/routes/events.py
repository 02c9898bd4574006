"""Live plan events as server-sent events, resumable with Last-Event-ID."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, Request
from sse_starlette.sse import EventSourceResponse
from starlette.concurrency import run_in_threadpool

from planledger.clients.http.bodies import SessionId
from planledger.clients.http.deps import service_of
from planledger.clients.http.errors import ErrorBody
from planledger.service import PlanLedger

router = APIRouter(tags=["events"])


@router.get(
    "/sessions/{session_id}/events",
    response_class=EventSourceResponse,
    responses={
        200: {
            "content": {"text/event-stream": {}},
            "description": "plan.proposed, plan.committed and plan.rejected events; each `id:` "
            "is the event's store position, resume with Last-Event-ID",
        },
        404: {"model": ErrorBody},
    },
)
async def plan_events(
    request: Request,
    session_id: SessionId,
    last_event_id: Annotated[int | None, Header(ge=0, le=2**62)] = None,
    after: Annotated[int | None, Query(ge=0, le=2**62)] = None,
) -> EventSourceResponse:
    service = service_of(request)
    await run_in_threadpool(service.session, session_id)  # 404 before streaming
    start = last_event_id if last_event_id is not None else (after or 0)
    return EventSourceResponse(stream(service, session_id, start), ping=15, send_timeout=30)


async def stream(service: PlanLedger, session_id: str, after: int) -> AsyncIterator[dict[str, Any]]:
    async for event in service.follow(session_id, after):
        data = event.as_json()
        data["id"] = event.store_position
        yield {"id": str(event.store_position), "event": event.name, "data": json.dumps(data)}
