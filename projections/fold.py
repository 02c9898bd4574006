"""Pure read-side folding: one plan event applied to a session's view, and its history entry.

The same fold serves the stored projections, a rebuild, and reading history straight from
the events, so every reader agrees with every other.
"""

from __future__ import annotations

from collections.abc import Iterable

from domain import rules
from domain.base import Event
from domain.models import PlanSnapshot
from domain.plan import Plan
from projections.shapes import (
    HistoryEntry,
    PendingProposalView,
    PlanView,
    RejectionView,
    Transition,
)

POLICY_OF_FORM = {"strict": "strict", "codex": "replace"}


def empty_view(session_id: str, at: object) -> PlanView:
    return PlanView.model_validate(
        {
            "session_id": session_id,
            "revision": 0,
            "policy": None,
            "title": None,
            "goal_id": None,
            "steps": [],
            "pending_proposal": None,
            "updated_at": at,
        }
    )


def apply_plan_event(
    view: PlanView | None, session_id: str, event: Event
) -> tuple[PlanView | None, HistoryEntry | None]:
    """The view after `event`, and the history entry it adds (None for non-plan events)."""
    position, at = event.originator_version, event.timestamp
    if isinstance(event, Plan.PlanCreated):
        return empty_view(session_id, at), None
    if view is None:
        return None, None  # not a plan event, or a plan stream without its creation
    if isinstance(event, Plan.PlanProposed):
        policy = view.policy or (POLICY_OF_FORM.get(event.form) if event.form else None)
        pending = PendingProposalView(
            proposal_id=event.proposal_id,
            form=event.form,
            expected_revision=event.expected_revision,
            proposed_at=at,
        )
        entry = HistoryEntry(
            position=position,
            kind="proposed",
            proposal_id=event.proposal_id,
            at=at,
            form=event.form,
            client=event.client,
            expected_revision=event.expected_revision,
        )
        update = {"policy": policy, "pending_proposal": pending, "updated_at": at}
        return view.model_copy(update=update), entry
    if isinstance(event, Plan.PlanCommitted):
        snapshot = event.snapshot
        before = PlanSnapshot(title=view.title, steps=tuple(view.steps)) if view.revision else None
        transitions = [
            Transition(step_id=step_id, from_=old, to=new)
            for step_id, old, new in rules.step_transitions(before, snapshot)
        ]
        entry = HistoryEntry(
            position=position,
            kind="committed",
            proposal_id=event.proposal_id,
            at=at,
            revision=event.revision,
            transitions=transitions,
        )
        update = {
            "revision": event.revision,
            "title": snapshot.title,
            "goal_id": snapshot.goal_id,
            "steps": list(snapshot.steps),
            "pending_proposal": None,
            "updated_at": at,
        }
        return view.model_copy(update=update), entry
    if isinstance(event, Plan.PlanRejected):
        violations = list(event.violations)
        pending = view.pending_proposal
        if pending is not None and pending.proposal_id == event.proposal_id:
            pending = None
        entry = HistoryEntry(
            position=position,
            kind="rejected",
            proposal_id=event.proposal_id,
            at=at,
            violations=violations,
        )
        update = {
            "pending_proposal": pending,
            "last_rejection": RejectionView(proposal_id=event.proposal_id, violations=violations),
            "updated_at": at,
        }
        return view.model_copy(update=update), entry
    return view, None


def fold_history(session_id: str, events: Iterable[Event]) -> list[HistoryEntry]:
    """Every history entry of one plan stream, in order."""
    view: PlanView | None = None
    entries: list[HistoryEntry] = []
    for event in events:
        view, entry = apply_plan_event(view, session_id, event)
        if entry is not None:
            entries.append(entry)
    return entries
