"""What a route needs from the request."""

from __future__ import annotations

from fastapi import Request
from fastapi.responses import Response
from pydantic import BaseModel

from planledger.service import PlanLedger


def service_of(request: Request) -> PlanLedger:
    service: PlanLedger = request.app.state.service
    return service


def model_response(model: BaseModel, status_code: int = 200) -> Response:
    """Serialise in pydantic-core and return as is: the model is already validated, and a
    returned Response skips FastAPI's second validation pass (and its thread-pool hop)."""
    return Response(model.model_dump_json(), status_code=status_code, media_type="application/json")
