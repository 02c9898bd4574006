"""Pure read-side folding: plan and session events applied to the views, rules re-checked.

The same fold serves the views a writer stores with its events, the runner's catch-up and
rebuild, and reading history straight from the events, so every reader agrees with every
other. A commit that breaks its policy's rules raises CorruptHistory (as replay does): the
read side never shows it as a plan.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple

from domain import rules
from domain.base import Event, replay_event
from domain.errors import CorruptHistory, error_line
from domain.models import Form, PlanSnapshot, Policy, TaskOperation, Violation, built
from domain.plan import Plan, apply_to_state
from domain.plan_state import PendingProposal, PlanState
from domain.text import clean_text
from projections.shapes import (
    HistoryEntry,
    PendingProposalView,
    PlanView,
    RejectionView,
    Transition,
)

NO_GOALS: frozenset[str] = frozenset()


@dataclass
class SessionFacts:
    """What a fold knows of sessions' own streams: each one's aggregate as its events made it,
    replayed by the aggregate's own rules (for the sessions whose stream it folded from the
    opening, or that were put here), and the sessions whose stream broke one."""

    aggregates: dict[str, Any] = field(default_factory=dict)
    broken: set[str] = field(default_factory=set)

    def goals(self, session_id: str) -> Collection[str]:
        """The goals the session has started so far (none known: none)."""
        session = self.aggregates.get(session_id)  # a Session
        return NO_GOALS if session is None else session.goals.keys()

    def forget(self, session_id: str) -> None:
        self.aggregates.pop(session_id, None)


class Shown(NamedTuple):
    """What a plan's view shows after an event, taken from its facts before the next event
    changes them in place: a view is made of it only where one is wanted (a run of events
    makes one view per session, and one per commit for its history row)."""

    version: int
    revision: int
    policy: Policy | None
    snapshot: PlanSnapshot | None
    pending: PendingProposal | None
    rejection: tuple[str, tuple[Violation, ...]] | None
    at: datetime


class HistoryRow(NamedTuple):  # a tuple: one per plan event, made cheaply
    """One history entry of a session; `notification_id` None until the store assigns it."""

    session_id: str
    entry: HistoryEntry
    shown: Shown | None = None  # what the plan showed after this commit (None: not a commit)
    notification_id: int | None = None

    def view(self) -> PlanView | None:
        """The plan as this commit left it (live clients and reports show it)."""
        return view_of(self.session_id, self.shown) if self.shown is not None else None


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
    sessions: SessionFacts | None = None,
    session_stops: Mapping[str, int] | None = None,
) -> ViewChanges:
    """Apply (event, notification id) pairs in order to the views they touch.

    `views` holds each touched session's view before the events (None: none yet). A session
    whose history breaks a rule is reported in `corrupt` and its later events are ignored.
    `judged` says the events are a writer's own, just decided by the domain (`Plan.decide`
    checked every rule of each commit): the snapshot and transition rules are not run a
    second time. Every replay (catch-up, rebuild, history) leaves it False. `states` keeps
    the rules' facts of each session between calls (a reader folding its sessions' events
    batch after batch); a session without one starts from its view, which does not hold
    every fact of the rules (see plan_state_of): only a writer's judged events start so (the
    runner resumes a session from its first event, ProjectionRunner._resume). `sessions`
    keeps each session's own aggregate, its stream's events applied by its rules in store
    order (a break is the session's problem, ahead of any of its plan's, as verify judges),
    and so the goals it has started: a commit's plan must name one of them, if any (None:
    sessions are not judged, and goals not checked, as in an aggregate's replay).
    `session_stops`: the version at which a session's own stream breaks among the events
    (found before the fold: a chain, a row that does not decode), none applied from there.
    """
    plans = states if states is not None else {}
    changes = ViewChanges()
    broken = set(corrupt)
    shown: dict[str, Shown] = {}  # what each session's view shows after its last event
    for event, notification_id in events:
        originator = str(event.originator_id)
        if originator.startswith("session:"):
            session_id = originator.removeprefix("session:")
            applied = False
            if sessions is not None and session_id not in sessions.broken:
                stop = session_stops.get(session_id) if session_stops else None
                if stop is None or event.originator_version < stop:
                    try:
                        sessions.aggregates[session_id] = replay_event(
                            session_id, sessions.aggregates.get(session_id), event
                        )
                        applied = True
                    except CorruptHistory as error:
                        sessions.broken.add(session_id)
                        sessions.forget(session_id)
                        broken.add(session_id)
                        plans.pop(session_id, None)
                        changes.corrupt[session_id] = error  # (over a break of its plan's)
            # A broken stream's later events still name the session in the list (its row,
            # which shows it corrupt), where their fields are of the ledger's types.
            if isinstance(event, session_events()) and (
                applied or sessions is None or well_typed_session_event(event)
            ):
                fold_session_event(changes, session_id, event)
            continue
        session_id = originator.removeprefix("plan:")
        if session_id in broken:
            continue
        plan = plans.get(session_id)
        if plan is None:
            view = views.get(session_id)
            if view is not None:
                plan = plan_state_of(view)
        known = None if sessions is None else sessions.goals(session_id)
        try:
            plan, entry = apply_plan_event(plan, session_id, event, judged, known)
        except Exception as error:
            broken.add(session_id)
            plans.pop(session_id, None)
            changes.corrupt[session_id] = as_corrupt(error, session_id, event)
            continue
        plans[session_id] = plan
        now = Shown(
            event.originator_version,
            plan.revision,
            plan.policy,
            plan.snapshot,
            plan.pending,
            plan.last_rejection,
            event.timestamp,
        )
        if entry is not None:
            committed = now if entry.kind == "committed" else None
            changes.history.append(HistoryRow(session_id, entry, committed, notification_id))
        shown[session_id] = now
    for session_id, now in shown.items():
        changes.views[session_id] = (now.version, view_of(session_id, now))
    return changes


def well_typed_session_event(event: Event) -> bool:
    """Whether a session event's timestamp and fields are of the ledger's types."""
    from domain.session import check_session_event

    try:
        check_session_event(event)
    except CorruptHistory:
        return False
    return True


def as_corrupt(error: Exception, session_id: str, event: Event) -> CorruptHistory:
    """The error an event's fold raised, as a break of its session's history (an event whose
    stored state lacks what its class needs is unreadable)."""
    if isinstance(error, CorruptHistory):
        return error
    message = error_line(error)
    return CorruptHistory(session_id, event.originator_version, "unreadable_event", message)


def fold_session_event(changes: ViewChanges, session_id: str, event: Event) -> None:
    """A session's opening or mode change, as its row of the session list."""
    from domain.session import Session

    assert isinstance(event, (Session.SessionOpened, Session.CollaborationModeChanged))
    earlier = changes.sessions.get(session_id)
    mode = clean_text(str(event.mode))
    row = SessionRow(session_id, event.originator_version, mode, event.timestamp, event.timestamp)
    if earlier is not None:  # opened in this run: keep when and where from
        row = row._replace(
            opened_at=earlier.opened_at,
            source=earlier.source,
            parent_session_id=earlier.parent_session_id,
            cwd=earlier.cwd,
        )
    elif isinstance(event, Session.SessionOpened):
        row = row._replace(
            source=plain(event.source),
            parent_session_id=plain(event.parent_session_id),
            cwd=plain(event.cwd),
        )
    changes.sessions[session_id] = row


def session_events() -> tuple[type[Event], ...]:
    """The session events that make its row of the session list (domain.session is loaded on
    the first: a plan's commands fold no session event and need not load its classes)."""
    from domain.session import Session

    return (Session.SessionOpened, Session.CollaborationModeChanged)


def plain(text: str | None) -> str | None:
    """A text of the session list as it is shown and stored: plain (a history edited by hand
    may hold a NUL, which a PostgreSQL text column cannot)."""
    return clean_text(text) if isinstance(text, str) else text


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


# The last rejection's view made, with the facts it was made of (a plan keeps its last
# rejection, one object, through its later events: their views share one view of it).
_last_rejection: tuple[object, RejectionView | None] = (None, None)


def view_of(session_id: str, shown: Shown) -> PlanView:
    """The plan's view as `shown` (`PlanView(...)` of values already of their fields' types,
    made without validating them again)."""
    global _last_rejection
    snapshot, pending, rejection = shown.snapshot, shown.pending, shown.rejection
    rejection_view = None
    if rejection is not None:
        made_of, rejection_view = _last_rejection
        if made_of is not rejection:
            rejection_view = built(
                RejectionView, {"proposal_id": rejection[0], "violations": list(rejection[1])}
            )
            _last_rejection = (rejection, rejection_view)
    return built(
        PlanView,
        {
            "session_id": session_id,
            "revision": shown.revision,
            "policy": shown.policy,
            "title": snapshot.title if snapshot is not None else None,
            "goal_id": snapshot.goal_id if snapshot is not None else None,
            "steps": list(snapshot.steps) if snapshot is not None else [],
            "pending_proposal": built(
                PendingProposalView,
                {
                    "proposal_id": pending.proposal_id,
                    "form": pending.form.value if pending.form is not None else None,
                    "expected_revision": pending.expected_revision,
                    "proposed_at": pending.proposed_at,
                    "candidate": pending.candidate,
                    "operation": pending.operation,
                    "shape_violations": pending.shape_violations,
                },
            )
            if pending is not None
            else None,
            "last_rejection": rejection_view,
            "updated_at": shown.at,
        },
    )


def plan_state_of(view: PlanView) -> PlanState:
    """The rules' facts of a plan as its stored view holds them. Under the strict policy no
    accepted step is ever removed, so the accepted ids are the committed steps' ids. What a
    view does not keep is not known: which proposal ids were used before, the stream's
    position, and the pending proposal's fingerprint. A fold from it checks less than one from
    the plan's first event: it is for a writer's own events, which its aggregate has just
    judged with every fact."""
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
    session_id: str,
    event: Event,
    judged: bool = False,
    session_goals: Collection[str] | None = None,
) -> tuple[PlanState, HistoryEntry | None]:
    """The plan's facts after `event`, and the history entry it adds (None for events that
    add none). The domain's own functions check the event (its fields' types included) and
    change the facts (domain.plan_state); this only shows what they decided.

    Raises CorruptHistory for an event the rules forbid at this point of the history."""
    position, at = event.originator_version, event.timestamp
    after, before = apply_to_state(plan, session_id, event, judged, session_goals)
    assert after is not None  # (a plan's first event makes its facts, or raises)
    if isinstance(event, Plan.PlanCreated):
        return after, None
    if isinstance(event, Plan.PlanProposed):
        entry = history_entry(
            position,
            "proposed",
            event.proposal_id,
            at,
            PROPOSED_GIVEN,
            form=event.form,
            client=event.client,
            actor=event.actor,
            expected_revision=event.expected_revision,
            operation=event.operation,
        )
        return after, entry
    if isinstance(event, Plan.PlanCommitted):
        entry = history_entry(
            position,
            "committed",
            event.proposal_id,
            at,
            COMMITTED_GIVEN,
            revision=event.revision,
            transitions=[
                built(Transition, {"step_id": step_id, "from_": old, "to": new})
                for step_id, old, new in rules.step_transitions(before, event.snapshot)
            ],
        )
        return after, entry
    assert isinstance(event, Plan.PlanRejected)
    violations = list(event.violations)
    entry = history_entry(
        position, "rejected", event.proposal_id, at, REJECTED_GIVEN, violations=violations
    )
    return after, entry


# The fields each kind of entry is given (as a constructor call would have named them).
_ENTRY = frozenset({"position", "kind", "proposal_id", "at"})
PROPOSED_GIVEN = _ENTRY | {"form", "client", "actor", "expected_revision", "operation"}
COMMITTED_GIVEN = _ENTRY | {"revision", "transitions"}
REJECTED_GIVEN = _ENTRY | {"violations"}


def history_entry(
    position: int,
    kind: str,
    proposal_id: str,
    at: datetime,
    given: AbstractSet[str],
    *,
    revision: int | None = None,
    form: str | None = None,
    client: str | None = None,
    actor: str | None = None,
    expected_revision: int | None = None,
    operation: TaskOperation | None = None,
    transitions: list[Transition] | None = None,
    violations: list[Violation] | None = None,
) -> HistoryEntry:
    """`HistoryEntry(...)` of values of their fields' types, without validating them; `given`
    names the fields a constructor call would have been given."""
    fields = {  # every field, in the model's order (its JSON follows the order of `__dict__`)
        "position": position,
        "kind": kind,
        "proposal_id": proposal_id,
        "at": at,
        "revision": revision,
        "form": form,
        "client": client,
        "actor": actor,
        "expected_revision": expected_revision,
        "operation": operation,
        "transitions": transitions,
        "violations": violations,
    }
    return built(HistoryEntry, fields, given)


def committed_snapshot(view: PlanView) -> PlanSnapshot:
    """`PlanSnapshot.model_construct(title=..., goal_id=..., steps=tuple(view.steps))` (the
    plan the rules compare a commit with, and a task operation is applied to), made in one
    step: pydantic's construct walks every field."""
    fields = {"title": view.title, "goal_id": view.goal_id, "steps": tuple(view.steps)}
    return built(PlanSnapshot, fields)
