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
from types import NoneType
from typing import Any, NamedTuple

from domain import rules
from domain.base import Event
from domain.errors import CorruptHistory
from domain.models import Form, PlanSnapshot, Policy, TaskOperation, Violation, built
from domain.plan import Plan, apply_to_state
from domain.plan_state import PendingProposal, PlanState
from domain.session import Session
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
    states: dict[str, PlanState] | None = None,
) -> ViewChanges:
    """Apply (event, notification id) pairs in order to the views they touch.

    `views` holds each touched session's view before the events (None: none yet). A session
    whose history breaks a rule is reported in `corrupt` and its later events are ignored.
    `judged` says the events are a writer's own, just decided by the domain (`Plan.decide`
    checked every rule of each commit): the snapshot and transition rules are not run a
    second time. Every replay (catch-up, rebuild, history) leaves it False. `states` keeps
    the rules' facts of each session between calls (a reader folding its sessions' events
    batch after batch); a session without one starts from its view.
    """
    current = dict(views)
    plans = states if states is not None else {}
    changes = ViewChanges()
    broken = set(corrupt)
    for event, notification_id in events:
        originator = str(event.originator_id)
        if originator.startswith("session:"):
            if isinstance(event, SESSION_EVENTS):
                fold_session_event(changes, originator.removeprefix("session:"), event)
            continue
        session_id = originator.removeprefix("plan:")
        if session_id in broken:
            continue
        view = current.get(session_id)
        plan = plans.get(session_id)
        if plan is None and view is not None:
            plan = plans[session_id] = plan_state_of(view)
        try:
            plan, view, entry = apply_plan_event(plan, view, session_id, event, judged)
        except Exception as error:
            broken.add(session_id)
            plans.pop(session_id, None)
            changes.corrupt[session_id] = as_corrupt(error, session_id, event)
            continue
        if plan is None or view is None:
            continue
        plans[session_id] = plan
        current[session_id] = view
        changes.views[session_id] = (event.originator_version, view)
        if entry is not None:
            view_after = view if entry.kind == "committed" else None
            changes.history.append(HistoryRow(session_id, entry, view_after, notification_id))
    return changes


def as_corrupt(error: Exception, session_id: str, event: Event) -> CorruptHistory:
    """The error an event's fold raised, as a break of its session's history (an event whose
    stored state lacks what its class needs is unreadable)."""
    if isinstance(error, CorruptHistory):
        return error
    message = f"{type(error).__name__}: {str(error).splitlines()[0][:300] if str(error) else ''}"
    return CorruptHistory(session_id, event.originator_version, "unreadable_event", message)


def fold_session_event(changes: ViewChanges, session_id: str, event: Event) -> None:
    """A session's opening or mode change, as its row of the session list."""
    assert isinstance(event, SESSION_EVENTS)
    earlier = changes.sessions.get(session_id)
    row = SessionRow(
        session_id, event.originator_version, str(event.mode), event.timestamp, event.timestamp
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
            source=event.source, parent_session_id=event.parent_session_id, cwd=event.cwd
        )
    changes.sessions[session_id] = row


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


def plan_state_of(view: PlanView) -> PlanState:
    """The rules' facts of a plan as its stored view holds them. Under the strict policy no
    accepted step is ever removed, so the accepted ids are the committed steps' ids. What a
    view does not keep is not known: which proposal ids were used before, and the pending
    proposal's fingerprint (neither is a rule of the commit that follows)."""
    pending = view.pending_proposal
    policy = Policy(view.policy) if view.policy else None
    rejection = view.last_rejection
    return PlanState(
        view.session_id,
        version=None,
        policy=policy,
        revision=view.revision,
        snapshot=committed_snapshot(view) if view.revision else None,
        accepted_ids=[step.id for step in view.steps] if policy is Policy.STRICT else [],
        pending=PendingProposal(
            proposal_id=pending.proposal_id,
            form=Form(pending.form) if pending.form else None,
            candidate=pending.candidate,
            expected_revision=pending.expected_revision,
            shape_violations=pending.shape_violations,
            fingerprint="",
            proposed_at=pending.proposed_at,
            operation=pending.operation,
        )
        if pending is not None
        else None,
        last_rejection=(rejection.proposal_id, tuple(rejection.violations)) if rejection else None,
    )


def apply_plan_event(
    plan: PlanState | None,
    view: PlanView | None,
    session_id: str,
    event: Event,
    judged: bool = False,
) -> tuple[PlanState | None, PlanView | None, HistoryEntry | None]:
    """The plan's facts and view after `event`, and the history entry it adds (None for
    events that add none). The domain's own functions check the event and change the facts
    (domain.plan_state); this only shows what they decided.

    Raises CorruptHistory for an event the rules forbid at this point of the history."""
    position, at = event.originator_version, event.timestamp
    plan, before = apply_to_state(plan, session_id, event, judged)
    if isinstance(event, Plan.PlanCreated):
        return plan, empty_view(session_id, at), None
    assert plan is not None and view is not None  # the facts of a plan come with its view
    if isinstance(event, Plan.PlanProposed):
        if not well_typed_proposal(event):  # an edited row: validated, and refused
            PendingProposalView.model_validate(event.__dict__ | {"proposed_at": at})
            HistoryEntry.model_validate(event.__dict__ | {"position": position, "at": at})
        pending = built(
            PendingProposalView,
            {
                "proposal_id": event.proposal_id,
                "form": event.form,
                "expected_revision": event.expected_revision,
                "proposed_at": at,
                "candidate": event.candidate,
                "operation": event.operation,
                "shape_violations": tuple(event.shape_violations),
            },
        )
        entry = history_entry(
            position=position,
            kind="proposed",
            proposal_id=event.proposal_id,
            at=at,
            form=event.form,
            client=event.client,
            actor=event.actor,
            expected_revision=event.expected_revision,
            operation=event.operation,
        )
        return plan, updated(view, {"pending_proposal": pending, "updated_at": at}), entry
    if isinstance(event, Plan.PlanCommitted):
        snapshot = event.snapshot
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
        update: dict[str, Any] = {
            "revision": event.revision,
            "policy": plan.policy,
            "title": snapshot.title,
            "goal_id": snapshot.goal_id,
            "steps": list(snapshot.steps),
            "pending_proposal": None,
            "updated_at": at,
        }
        return plan, updated(view, update), entry
    assert isinstance(event, Plan.PlanRejected)
    violations = list(event.violations)
    if type(event.proposal_id) is not str or not all(type(v) is Violation for v in violations):
        raise CorruptHistory(session_id, position, "unreadable_event", "a mistyped rejection")
    entry = history_entry(
        position=position,
        kind="rejected",
        proposal_id=event.proposal_id,
        at=at,
        violations=violations,
    )
    rejection = built(RejectionView, {"proposal_id": event.proposal_id, "violations": violations})
    update = {"pending_proposal": None, "last_rejection": rejection, "updated_at": at}
    return plan, updated(view, update), entry


# Every field of an entry in order (a model's JSON follows its fields' order in `__dict__`),
# with its default (None where it has none: every entry gives those).
ENTRY_DEFAULTS = {
    name: None if info.is_required() else info.default
    for name, info in HistoryEntry.model_fields.items()
}


def well_typed_proposal(event: Plan.PlanProposed) -> bool:
    """Whether a proposal's fields hold the types the ledger writes (a decode checks them; an
    edited row decoded by the library may hold others, which the views must not take in)."""
    return (
        type(event.proposal_id) is str
        and type(event.form) in (str, NoneType)
        and type(event.client) in (str, NoneType)
        and type(event.actor) in (str, NoneType)
        and type(event.expected_revision) in (int, NoneType)
        and type(event.operation) in (TaskOperation, NoneType)
        and type(event.candidate) in (PlanSnapshot, NoneType)
    )


def history_entry(**fields: Any) -> HistoryEntry:
    """`HistoryEntry(**fields)` for values of their fields' types, without validating them."""
    ordered = ENTRY_DEFAULTS.copy()
    ordered.update(fields)  # every key is there already: the fields' order stays
    return built(HistoryEntry, ordered, fields.keys())


def updated(view: PlanView, update: dict[str, Any]) -> PlanView:
    """`view.model_copy(update=update)` (no validation, as there), made in one step for a
    plain view: pydantic's copy goes through `copy.copy` for each of its four parts."""
    if type(view) is not PlanView or view.__pydantic_extra__ or view.__pydantic_private__:
        return view.model_copy(update=update)
    fields_set = view.__pydantic_fields_set__ | update.keys()
    return built(PlanView, {**view.__dict__, **update}, fields_set)


def committed_snapshot(view: PlanView) -> PlanSnapshot:
    """`PlanSnapshot.model_construct(title=..., goal_id=..., steps=tuple(view.steps))` (the
    plan the rules compare a commit with, and a task operation is applied to), made in one
    step: pydantic's construct walks every field."""
    fields = {"title": view.title, "goal_id": view.goal_id, "steps": tuple(view.steps)}
    return built(PlanSnapshot, fields)
