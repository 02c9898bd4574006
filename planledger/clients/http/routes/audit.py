"""The store's latest signed checkpoint (`planledger checkpoint` makes one)."""

from __future__ import annotations

from fastapi import APIRouter, Request

from domain.checkpoint import Checkpoint
from domain.errors import CheckpointNotFound
from planledger.clients.http.deps import service_of
from planledger.clients.http.errors import ErrorBody

router = APIRouter(tags=["audit"])


@router.get("/checkpoint", response_model=Checkpoint, responses={404: {"model": ErrorBody}})
def latest_checkpoint(request: Request) -> Checkpoint:
    """The latest signed statement of the store's streams (404 if none was ever made): check
    it offline with `planledger verify --checkpoint FILE --public-key KEY`."""
    found = service_of(request).latest_checkpoint()
    if found is None:
        raise CheckpointNotFound(
            "no checkpoint was made of this store: run `planledger checkpoint`"
        )
    return found
