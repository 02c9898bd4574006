"""The plan view of one session: from the Plan aggregate, or as it stood at a revision."""

from __future__ import annotations

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
            candidate=pending.candidate,
        )
        if pending
        else None,
        last_rejection=RejectionView(proposal_id=rejection[0], violations=list(rejection[1]))
        if rejection
        else None,
        updated_at=plan.modified_on,
    )
