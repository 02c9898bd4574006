"""The plan as a commit left it, kept compactly: a history row holds what the commit's view has
beyond its event (the policy and the last rejection) and a digest of the commit event's stored
bytes; the plan is read back from the event itself, and shown only while its bytes are still
the ones the rules were re-checked on. (A full view per commit was two thirds of the history
table's bytes, and of a rebuild's writes.)"""

from __future__ import annotations

import hashlib
import json
from typing import Any, NamedTuple

from domain.errors import CorruptHistory
from domain.plan import Plan
from projections.decode import COMMITTED, PlanEventDecoder
from projections.fold import Shown, view_of
from projections.shapes import PlanView

# What a commit's view holds beyond its event (its session, revision, plan and time) and its
# history row (the view of a commit has no pending proposal).
STUB_FIELDS = {"policy", "last_rejection"}
EVENT_CHANGED = "event_changed"


def commit_digest(state: bytes) -> str:
    """The digest a history row keeps of its commit event's stored state."""
    return hashlib.sha256(state).hexdigest()[:32]  # (SHA-256 is the fastest hash here)


# The last stub made, with the policy and rejection it was made of: a session's commits
# mostly share both (a plan keeps its last rejection, one object, through its later events;
# kept alive here, it is compared by identity).
_last_stub: tuple[Any, Any, str] = (None, None, "")


def view_stub(session_id: str, shown: Shown) -> str:
    """A commit's view without what its event and history row hold, as JSON."""
    global _last_stub
    policy, rejection, stub = _last_stub
    if shown.rejection is rejection and shown.policy == policy and stub:
        return stub
    stub = view_of(session_id, shown).model_dump_json(include=STUB_FIELDS)
    _last_stub = (shown.policy, shown.rejection, stub)
    return stub


class CommitRow(NamedTuple):
    """A commit's history row and its event as stored now (None fields: no such event)."""

    session_id: str
    position: int
    stub: Any  # view_stub's JSON, as the database returns it (text or parsed)
    digest: str | None
    originator_id: str | None
    originator_version: int | None
    topic: str | None
    state: bytes | None


def commit_view(row: CommitRow, decoder: PlanEventDecoder) -> PlanView:
    """The plan as the commit of `row` left it. Raises CorruptHistory (`event_changed`) when
    the commit event is gone or no longer the bytes the views were made from."""
    state = bytes(row.state) if row.state is not None else None
    if (
        state is None
        or row.originator_id != f"plan:{row.session_id}"
        or row.originator_version != row.position
        or row.topic != COMMITTED
        or row.digest != commit_digest(state)
    ):
        raise CorruptHistory(
            row.session_id,
            row.position,
            EVENT_CHANGED,
            "the commit event changed after the views were made from it: run "
            "`planledger verify` and `planledger projections rebuild`",
        )
    event = decoder.to_domain_event(row._replace(state=state))  # type: ignore[arg-type]
    assert isinstance(event, Plan.PlanCommitted)
    stub = json.loads(row.stub) if isinstance(row.stub, str | bytes) else row.stub
    snapshot = event.snapshot
    return PlanView.model_validate(
        {
            "session_id": row.session_id,
            "revision": event.revision,
            "policy": stub["policy"],
            "title": snapshot.title,
            "goal_id": snapshot.goal_id,
            "steps": list(snapshot.steps),
            "pending_proposal": None,
            "last_rejection": stub["last_rejection"],
            "updated_at": event.timestamp,
        }
    )
