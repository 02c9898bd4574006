"""The plan view of one session: from the Plan aggregate, or as it stood at a revision."""

from __future__ import annotations

from collections.abc import Iterable

from domain.base import Event
from domain.errors import RevisionNotFound
from domain.plan import Plan
from projections.shapes import PendingProposalView, PlanView, RejectionView


def plan_view(plan: Plan) -> PlanView:
    """The current view: revision, committed snapshot, undecided proposal, last rejection."""
    snapshot = plan.snapshot
    pending = plan.pending
    rejection = plan.last_rejection
    return PlanView(
        session_id=plan.session_id,
        revision=plan.revision,
        policy=str(plan.policy) if plan.policy else None,
        title=snapshot.title if snapshot else None,
        goal_id=snapshot.goal_id if snapshot else None,
        steps=list(snapshot.steps) if snapshot else [],
        pending_proposal=PendingProposalView(
            proposal_id=pending.proposal_id,
            form=str(pending.form) if pending.form else None,
            expected_revision=pending.expected_revision,
            proposed_at=pending.proposed_at,
        )
        if pending
        else None,
        last_rejection=RejectionView(proposal_id=rejection[0], violations=list(rejection[1]))
        if rejection
        else None,
        updated_at=plan.modified_on,
    )


def plan_view_at(session_id: str, events: Iterable[Event], revision: int) -> PlanView:
    """The committed plan as it stood at `revision` (0: before any commit)."""
    policy: str | None = None
    for event in events:
        if isinstance(event, Plan.PlanProposed) and policy is None and event.form:
            policy = "strict" if event.form == "strict" else "replace"
        if revision == 0 and isinstance(event, Plan.PlanCreated):
            return PlanView(
                session_id=session_id,
                revision=0,
                policy=None,
                title=None,
                goal_id=None,
                steps=[],
                pending_proposal=None,
                updated_at=event.timestamp,
            )
        if isinstance(event, Plan.PlanCommitted) and event.revision == revision:
            snapshot = event.snapshot
            return PlanView(
                session_id=session_id,
                revision=revision,
                policy=policy,
                title=snapshot.title,
                goal_id=snapshot.goal_id,
                steps=list(snapshot.steps),
                pending_proposal=None,
                updated_at=event.timestamp,
            )
    raise RevisionNotFound(f"session {session_id!r} has no revision {revision}")
