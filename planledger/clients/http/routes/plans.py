"""A session's plan: propose (either form), read now or at a revision, history, compaction."""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse, Response

from domain.errors import StorageUnavailable
from planledger.clients.http.bodies import (
    CommittedBody,
    ConflictBody,
    RejectedBody,
    SessionId,
)
from planledger.clients.http.deps import model_response, service_of
from planledger.clients.http.errors import ErrorBody, error_response
from planledger.storage.errors import unavailable_cause
from projections.compaction import CompactionSnapshot
from projections.plan_diff import PlanDiff
from projections.shapes import History, PlanView

router = APIRouter(tags=["plans"])
NOT_FOUND: dict[int | str, dict[str, Any]] = {404: {"model": ErrorBody}}


@router.post(
    "/sessions/{session_id}/plan",
    response_model=CommittedBody,
    responses={
        404: {"model": ErrorBody},
        409: {"model": ConflictBody, "description": "expected_revision was stale"},
        422: {
            "model": RejectedBody | ErrorBody,
            "description": "rejected, with every violation (or a body that is not a JSON object)",
        },
    },
)
def propose_plan(request: Request, session_id: SessionId, body: dict[str, Any]) -> Response:
    """Propose a plan in either form (plan_update or update_plan), decided at once."""
    service = service_of(request)
    given = body.get("proposal_id")
    proposal_id = given if isinstance(given, str) and given else uuid.uuid4().hex
    try:
        decision = service.submit(
            session_id,
            body,
            client="http",
            proposal_id=proposal_id,
            actor=getattr(request.state, "actor", None),  # the token's name (see TokenGuard)
        )
    except Exception as error:
        if isinstance(error, StorageUnavailable):
            cause: str | None = str(error).removeprefix("storage unavailable: ")
        else:
            cause = unavailable_cause(error)
        if cause is None:
            raise
        return error_response(
            503,
            StorageUnavailable.code,
            f"storage unavailable: {cause}; the proposal may or may not have been recorded: "
            "send it again with the same proposal_id (a retry never records it twice)",
            details={"proposal_id": proposal_id},
        )
    if decision.status == "committed":
        view = service.plan_after(session_id, decision)
        return model_response(CommittedBody(**decision.model_dump(), plan=view))
    status = 409 if decision.status == "conflict" else 422
    return JSONResponse(decision.model_dump(mode="json"), status_code=status)


@router.get("/sessions/{session_id}/plan", response_model=PlanView, responses=NOT_FOUND)
def show_plan(
    request: Request,
    session_id: SessionId,
    revision: Annotated[int | None, Query(ge=0, le=2**62)] = None,
) -> Response:
    """The plan now, or as it stood at `revision`."""
    return model_response(service_of(request).plan(session_id, revision))


@router.get("/sessions/{session_id}/plan/history", response_model=History, responses=NOT_FOUND)
def plan_history(request: Request, session_id: SessionId) -> JSONResponse:
    """Every proposal, commit and rejection, with each commit's step transitions."""
    return JSONResponse(service_of(request).history(session_id).as_json())


@router.get("/sessions/{session_id}/plan/diff", response_model=PlanDiff, responses=NOT_FOUND)
def plan_diff(
    request: Request,
    session_id: SessionId,
    first: Annotated[int, Query(alias="from", ge=0, le=2**62)],
    second: Annotated[int, Query(alias="to", ge=0, le=2**62)],
) -> JSONResponse:
    """What changed from revision `from` to revision `to`: steps added, removed, retitled and
    their status changes."""
    return JSONResponse(service_of(request).plan_diff(session_id, first, second).as_json())


@router.get(
    "/sessions/{session_id}/plan/compaction",
    response_model=CompactionSnapshot,
    responses=NOT_FOUND,
)
def plan_compaction(
    request: Request,
    session_id: SessionId,
    max_chars: Annotated[int, Query(ge=0, le=100_000)] = 2000,
) -> JSONResponse:
    """The bounded summary a context-compaction handoff attaches."""
    return JSONResponse(service_of(request).compaction(session_id, max_chars).as_json())
