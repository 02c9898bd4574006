"""Pure read-side folding: plan and session events applied to the views, rules re-checked.

The same fold serves the views a writer stores with its events, the runner's catch-up and
rebuild, and reading history straight from the events, so every reader agrees with every
other. A commit that breaks its policy's rules raises CorruptHistory (as replay does): the
read side never shows it as a plan.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple

from domain import rules
from domain.base import Event
from domain.errors import CorruptHistory
from domain.models import Form, PlanSnapshot, Policy, Step
from domain.plan import Plan
from domain.session import Session
from domain.tasks import apply_operation
from projections.shapes import (
    HistoryEntry,
    PendingProposalView,
    PlanView,
    RejectionView,
)

SESSION_EVENTS = (Session.SessionOpened, Session.CollaborationModeChanged)


class HistoryRow(NamedTuple):  # a tuple: one per plan event, made cheaply
    """One history entry of a session; `notification_id` None until the store assigns it."""

    session_id: str
    entry: HistoryEntry
    view: PlanView | None = None  # the plan as this commit left it (live clients show it)
    notification_id: int | None = None


class SessionRow(NamedTuple):
    session_id: str
    version: int
    mode: str
    opened_at: datetime  # only written when the row is new, as are the origin's fields
    at: datetime
    source: str | None = None
    parent_session_id: str | None = None
    cwd: str | None = None


@dataclass
class ViewChanges:
    """What a run of events changes in the views."""

    views: dict[str, tuple[int, PlanView]] = field(default_factory=dict)  # sid: (version, view)
    history: list[HistoryRow] = field(default_factory=list)
    sessions: dict[str, SessionRow] = field(default_factory=dict)
    corrupt: dict[str, CorruptHistory] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.views or self.history or self.sessions or self.corrupt)


def fold_events(
    views: Mapping[str, PlanView | None],
    events: Iterable[tuple[Event, int | None]],
    corrupt: Iterable[str] = (),
    *,
    judged: bool = False,
) -> ViewChanges:
    """Apply (event, notification id) pairs in order to the views they touch.

    `views` holds each touched session's view before the events (None: none yet). A session
    whose history breaks a rule is reported in `corrupt` and its later events are ignored.
    `judged` says the events are a writer's own, just decided by the domain (`Plan.decide`
    checked every rule of each commit): the snapshot and transition rules are not run a
    second time. Every replay (catch-up, rebuild, history) leaves it False.
    """
    current = dict(views)
    changes = ViewChanges()
    broken = set(corrupt)
    for event, notification_id in events:
        originator = str(event.originator_id)
        if originator.startswith("session:"):
            if isinstance(event, SESSION_EVENTS):
                session_id = originator.removeprefix("session:")
                earlier = changes.sessions.get(session_id)
                row = SessionRow(
                    session_id,
                    event.originator_version,
                    str(event.mode),
                    event.timestamp,
                    event.timestamp,
                )
                if earlier is not None:  # opened in this run: keep when and where from
                    row = row._replace(
                        opened_at=earlier.opened_at,
                        source=earlier.source,
                        parent_session_id=earlier.parent_session_id,
                        cwd=earlier.cwd,
                    )
                elif isinstance(event, Session.SessionOpened):
                    row = row._replace(
                        source=event.source,
                        parent_session_id=event.parent_session_id,
                        cwd=event.cwd,
                    )
                changes.sessions[session_id] = row
            continue
        session_id = originator.removeprefix("plan:")
        if session_id in broken:
            continue
        try:
            view, entry = apply_plan_event(current.get(session_id), session_id, event, judged)
        except CorruptHistory as error:
            broken.add(session_id)
            changes.corrupt[session_id] = error
            continue
        if view is None:
            continue
        current[session_id] = view
        changes.views[session_id] = (event.originator_version, view)
        if entry is not None:
            view_after = view if entry.kind == "committed" else None
            changes.history.append(HistoryRow(session_id, entry, view_after, notification_id))
    return changes


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
    view: PlanView | None, session_id: str, event: Event, judged: bool = False
) -> tuple[PlanView | None, HistoryEntry | None]:
    """The view after `event`, and the history entry it adds (None for non-plan events).

    Raises CorruptHistory for an event the rules forbid at this point of the history."""
    position, at = event.originator_version, event.timestamp
    if isinstance(event, Plan.PlanCreated):
        if view is not None:
            raise CorruptHistory(
                session_id, position, "plan_recreated", "the plan was created twice"
            )
        return empty_view(session_id, at), None
    if view is None:
        if isinstance(event, Plan.PlanProposed | Plan.PlanCommitted | Plan.PlanRejected):
            raise CorruptHistory(
                session_id, position, "missing_event", "a plan event before the plan's creation"
            )
        return None, None
    if isinstance(event, Plan.PlanProposed):
        if view.pending_proposal is not None:
            raise CorruptHistory(
                session_id,
                position,
                "undecided_proposal",
                f"proposal {event.proposal_id!r} was recorded while "
                f"{view.pending_proposal.proposal_id!r} was undecided",
            )
        pending = PendingProposalView(
            proposal_id=event.proposal_id,
            form=event.form,
            expected_revision=event.expected_revision,
            proposed_at=at,
            candidate=event.candidate,
            operation=event.operation,
        )
        entry = HistoryEntry(
            position=position,
            kind="proposed",
            proposal_id=event.proposal_id,
            at=at,
            form=event.form,
            client=event.client,
            expected_revision=event.expected_revision,
            operation=event.operation,
        )
        update: dict[str, Any] = {"pending_proposal": pending, "updated_at": at}
        return updated(view, update), entry
    if isinstance(event, Plan.PlanCommitted):
        pending = _require_pending(view, session_id, position, event.proposal_id)
        snapshot = event.snapshot
        if not same_snapshot(pending.candidate, snapshot):
            raise CorruptHistory(
                session_id,
                position,
                "snapshot_mismatch",
                f"the committed snapshot differs from proposal {event.proposal_id!r}",
            )
        if pending.expected_revision is not None and pending.expected_revision != view.revision:
            raise CorruptHistory(
                session_id,
                position,
                "revision_conflict",
                f"a commit expected revision {pending.expected_revision}, the plan was at "
                f"{view.revision}",
            )
        if pending.form is None:
            raise CorruptHistory(
                session_id, position, "missing_form", "a commit of a proposal without a form"
            )
        # The first commit fixes the policy; a proposal in another form never commits.
        form_policy = Policy.for_form(pending.form)
        policy = view.policy or form_policy
        if form_policy != policy:
            raise CorruptHistory(
                session_id,
                position,
                "policy_mismatch",
                f"a {pending.form} proposal was committed to a {policy} plan",
            )
        before = committed_snapshot(view) if view.revision else None
        if not judged:
            if pending.form == Form.TASK:
                check_operation(session_id, position, pending, before, snapshot)
            check_commit(
                policy, view.revision, session_id, position, event.revision, before, snapshot
            )
        entry = HistoryEntry.model_validate(  # transitions and all, in one validation
            {
                "position": position,
                "kind": "committed",
                "proposal_id": event.proposal_id,
                "at": at,
                "revision": event.revision,
                "transitions": [
                    {"step_id": step_id, "from": old, "to": new}
                    for step_id, old, new in rules.step_transitions(before, snapshot)
                ],
            }
        )
        update = {
            "revision": event.revision,
            "policy": policy,
            "title": snapshot.title,
            "goal_id": snapshot.goal_id,
            "steps": list(snapshot.steps),
            "pending_proposal": None,
            "updated_at": at,
        }
        return updated(view, update), entry
    if isinstance(event, Plan.PlanRejected):
        _require_pending(view, session_id, position, event.proposal_id)
        violations = list(event.violations)
        if not violations:
            raise CorruptHistory(
                session_id,
                position,
                "rejection_without_violation",
                f"proposal {event.proposal_id!r} was rejected without a reason",
            )
        entry = HistoryEntry(
            position=position,
            kind="rejected",
            proposal_id=event.proposal_id,
            at=at,
            violations=violations,
        )
        update = {
            "pending_proposal": None,
            "last_rejection": RejectionView(proposal_id=event.proposal_id, violations=violations),
            "updated_at": at,
        }
        return updated(view, update), entry
    return view, None


def check_commit(
    policy_name: str,
    current_revision: int,
    session_id: str,
    position: int,
    revision: int,
    before: PlanSnapshot | None,
    snapshot: PlanSnapshot,
) -> None:
    """The rules replay re-checks on a commit, from what the view knows (the domain's own
    functions): the revision sequence, the snapshot's rules and the transition's rules."""
    if revision != current_revision + 1:
        raise CorruptHistory(
            session_id,
            position,
            "revision_sequence",
            f"commit says revision {revision} but follows revision {current_revision}",
        )
    policy = Policy(policy_name)
    # Under the strict policy no accepted step is ever removed, so the accepted ids are the
    # ids of the previous snapshot (the other policies have no such rule).
    accepted = [step.id for step in before.steps] if before else []
    violations = rules.check_snapshot(policy, snapshot) + rules.check_transition(
        policy, before, accepted, snapshot
    )
    if violations:
        first = violations[0]
        raise CorruptHistory(session_id, position, first.code, first.message)


def check_operation(
    session_id: str,
    position: int,
    pending: PendingProposalView,
    before: PlanSnapshot | None,
    snapshot: PlanSnapshot,
) -> None:
    """A task-form commit: its list is what the recorded operation makes of the list before."""
    if pending.operation is None:
        raise CorruptHistory(
            session_id, position, "missing_field", "a task commit without its operation"
        )
    made, violations = apply_operation(before, pending.operation)
    if violations:
        raise CorruptHistory(session_id, position, violations[0].code, violations[0].message)
    if made is None or not same_snapshot(made, snapshot):
        raise CorruptHistory(
            session_id,
            position,
            "snapshot_mismatch",
            f"the committed list is not what operation {pending.proposal_id!r} makes of the plan",
        )


def updated(view: PlanView, update: dict[str, Any]) -> PlanView:
    """`view.model_copy(update=update)` (no validation, as there), made in one step for a
    plain view: pydantic's copy goes through `copy.copy` for each of its four parts."""
    if type(view) is not PlanView or view.__pydantic_extra__ or view.__pydantic_private__:
        return view.model_copy(update=update)
    copied = _new(PlanView)
    _set(copied, "__dict__", {**view.__dict__, **update})
    _set(copied, "__pydantic_extra__", None)
    _set(copied, "__pydantic_fields_set__", view.__pydantic_fields_set__ | update.keys())
    _set(copied, "__pydantic_private__", None)
    return copied


def committed_snapshot(view: PlanView) -> PlanSnapshot:
    """`PlanSnapshot.model_construct(title=..., goal_id=..., steps=tuple(view.steps))` (the
    plan the rules compare a commit with, and a task operation is applied to), made in one
    step: pydantic's construct walks every field."""
    snapshot = _new(PlanSnapshot)
    steps = tuple(view.steps)
    _set(snapshot, "__dict__", {"title": view.title, "goal_id": view.goal_id, "steps": steps})
    _set(snapshot, "__pydantic_extra__", None)
    _set(snapshot, "__pydantic_fields_set__", {"title", "goal_id", "steps"})
    _set(snapshot, "__pydantic_private__", None)
    return snapshot


_new, _set = object.__new__, object.__setattr__


def same_snapshot(candidate: PlanSnapshot | None, snapshot: PlanSnapshot) -> bool:
    """`candidate == snapshot`, field by field for the plain models a decode gives (frozen,
    no extra fields, no private attributes: equal exactly when their fields are)."""
    if candidate is snapshot:
        return True
    if type(candidate) is not PlanSnapshot or type(snapshot) is not PlanSnapshot:
        return candidate == snapshot
    if candidate.title != snapshot.title or candidate.goal_id != snapshot.goal_id:
        return False
    mine, theirs = candidate.steps, snapshot.steps
    if len(mine) != len(theirs):
        return False
    for a, b in zip(mine, theirs, strict=True):
        if type(a) is not Step or type(b) is not Step:
            return mine == theirs
        if (
            a.id != b.id
            or a.title != b.title
            or a.status != b.status
            or a.blocked_by != b.blocked_by
            or a.owner != b.owner
        ):
            return False
    return True


def _require_pending(
    view: PlanView, session_id: str, position: int, proposal_id: str
) -> PendingProposalView:
    pending = view.pending_proposal
    if pending is None or pending.proposal_id != proposal_id:
        raise CorruptHistory(
            session_id,
            position,
            "unknown_proposal",
            f"decision for {proposal_id!r}, which is not the undecided proposal",
        )
    return pending
