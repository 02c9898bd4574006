"""The plan's rules over its history: how each plan event changes what the rules know, and
every check an event must pass where it stands.

This is the one implementation. The Plan aggregate applies its events with these functions
(deciding a proposal and replaying one alike); verify and the views' fold call the same
functions on a `PlanState`, the same facts without the aggregate around them. A check that
fails raises CorruptHistory naming the event's position and the rule.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from types import NoneType
from typing import Literal, Protocol

from domain import rules
from domain.errors import CorruptHistory
from domain.field_types import TEXT, TEXT_OR_NONE, check_stamp, field_types
from domain.models import (
    POLICY_OF_FORM,
    Form,
    Frozen,
    PlanSnapshot,
    Policy,
    Step,
    TaskOperation,
    Violation,
    built,
)
from domain.tasks import apply_operation

OutcomeStatus = Literal["pending", "committed", "rejected"]
FORMS = {form.value: form for form in Form}
# A policy by its name: a plan restored from a snapshot holds the name, a plain string.
POLICIES = {policy.value: policy for policy in Policy}

# Outcomes remembered for idempotent retries. Bounded, so that a long session does not make
# every load slower: a retry is expected within moments, not hundreds of proposals later.
REMEMBERED_OUTCOMES = 256

TOOL_OF_POLICY = {
    Policy.STRICT: "plan_update",
    Policy.REPLACE: "update_plan",
    Policy.TASKS: "TaskCreate / TaskUpdate",
}

SUPERSEDED = Violation(
    code="superseded",
    message="A newer proposal replaced this one before it was decided.",
)


class PendingProposal(Frozen):
    """A recorded proposal not yet decided (`operation`: a task-form proposal's operation)."""

    proposal_id: str
    form: Form | None
    candidate: PlanSnapshot | None
    expected_revision: int | None
    shape_violations: tuple[Violation, ...]
    fingerprint: str
    proposed_at: datetime
    operation: TaskOperation | None = None


class Outcome(Frozen):
    """What became of a proposal; kept so a retry with the same id gets the same answer."""

    fingerprint: str
    status: OutcomeStatus
    revision: int | None = None
    violations: tuple[Violation, ...] = ()


def outcome(
    fingerprint: str,
    status: OutcomeStatus,
    revision: int | None = None,
    violations: tuple[Violation, ...] = (),
) -> Outcome:
    fields: dict[str, object] = {
        "fingerprint": fingerprint,
        "status": status,
        "revision": revision,
        "violations": violations,
    }
    return built(Outcome, fields)


class PlanFacts(Protocol):
    """What the rules know of a plan: the Plan aggregate's attributes, or a PlanState's.
    `policy` is None until the first commit fixes it; `revision` counts commits."""

    session_id: str
    policy: Policy | None
    revision: int
    snapshot: PlanSnapshot | None
    accepted_ids: list[str]
    pending: PendingProposal | None
    outcomes: dict[str, Outcome]
    last_rejection: tuple[str, tuple[Violation, ...]] | None


@dataclass(slots=True)
class PlanState:
    """The facts of one plan, for readers that apply its events without an aggregate.

    `version` is the stream position of the last event applied (None: not known, for a state
    taken from a stored view; the next event's position is then taken as it comes)."""

    session_id: str
    version: int | None = 0
    policy: Policy | None = None
    revision: int = 0
    snapshot: PlanSnapshot | None = None
    accepted_ids: list[str] = field(default_factory=list)
    pending: PendingProposal | None = None
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    last_rejection: tuple[str, tuple[Violation, ...]] | None = None


# -- the stream ---------------------------------------------------------------------------------

# (Each check builds its message only where it fails: these run for every event a replay
# applies, and messages made on the way were 1.5% of the instructions of the views' fold of the
# bulk bench's store.)


def check_created(session_id: str, position: int, exists: bool, at: object) -> None:
    """A PlanCreated event: the plan's first event, and only once (`at`: its timestamp)."""
    check_stamp(session_id, position, at)
    if exists:
        raise CorruptHistory(session_id, position, "plan_recreated", "the plan was created twice")
    if position != 1:
        raise CorruptHistory(
            session_id,
            position,
            "missing_event",
            f"the plan was created at position {position}, after events that are gone",
        )


def check_next(
    session_id: str, position: int, exists: bool, version: int | None, at: object
) -> None:
    """An event at `position` (not a creation) comes next in the plan's stream (`version`: the
    last position applied; None when not known; `at`: its timestamp)."""
    check_stamp(session_id, position, at)
    if not exists:
        raise CorruptHistory(
            session_id, position, "missing_event", "a plan event before the plan's creation"
        )
    if version is not None and position != version + 1:
        raise CorruptHistory(
            session_id,
            position,
            "missing_event",
            f"the event at position {position} follows position {version}",
        )


def plan_created(
    session_id: str, position: int, existing: PlanState | None, at: object
) -> PlanState:
    check_created(session_id, position, existing is not None, at)
    return PlanState(session_id, version=position)


def follows(state: PlanState | None, session_id: str, position: int, at: object) -> PlanState:
    """The state an event at `position` (timestamped `at`) applies to, checked to come next."""
    check_next(session_id, position, state is not None, state.version if state else None, at)
    assert state is not None
    state.version = position
    return state


# -- the events ---------------------------------------------------------------------------------

# The types the ledger writes each field of a plan event with.
PROPOSAL_TYPES = field_types(
    "proposal",
    proposal_id=TEXT,
    form=TEXT_OR_NONE,
    candidate=(PlanSnapshot, NoneType),
    expected_revision=(int, NoneType),
    fingerprint=TEXT,
    shape_violations=(tuple, list),
    operation=(TaskOperation, NoneType),
    client=TEXT_OR_NONE,
    actor=TEXT_OR_NONE,
    explanation=TEXT_OR_NONE,
)
COMMIT_TYPES = field_types("commit", proposal_id=TEXT, revision=(int,), snapshot=(PlanSnapshot,))
REJECTION_TYPES = field_types("rejection", proposal_id=TEXT, violations=(tuple, list))


def check_violations(
    session_id: str, position: int, event: str, violations: Sequence[object]
) -> None:
    """Each item of a checked list of violations is a Violation."""
    for violation in violations:
        if type(violation) is not Violation:
            raise CorruptHistory(
                session_id,
                position,
                "unreadable_event",
                f"the {event} holds a value of type {type(violation).__name__} among its "
                "violations",
            )


def record_proposal(
    plan: PlanFacts,
    position: int,
    *,
    proposal_id: str,
    form: str | None,
    candidate: PlanSnapshot | None,
    expected_revision: int | None,
    fingerprint: str,
    shape_violations: tuple[Violation, ...],
    proposed_at: datetime,
    operation: TaskOperation | None,
    client: str | None = None,
    actor: str | None = None,
    explanation: str | None = None,
) -> None:
    """PlanProposed: the proposal becomes the pending one (none may be undecided, and its id
    must be new); each of its fields of the type the ledger writes it with."""
    session_id = plan.session_id
    PROPOSAL_TYPES.check(
        session_id,
        position,
        proposal_id,
        form,
        candidate,
        expected_revision,
        fingerprint,
        shape_violations,
        operation,
        client,
        actor,
        explanation,
    )
    if shape_violations:
        check_violations(session_id, position, "proposal", shape_violations)
    pending = plan.pending
    if pending is not None:
        raise CorruptHistory(
            plan.session_id,
            position,
            "undecided_proposal",
            f"proposal {proposal_id!r} was recorded while {pending.proposal_id!r} was undecided",
        )
    if proposal_id in plan.outcomes:
        raise CorruptHistory(
            plan.session_id,
            position,
            "proposal_id_reused",
            f"proposal id {proposal_id!r} was recorded twice",
        )
    if form and form not in FORMS:
        raise CorruptHistory(
            plan.session_id,
            position,
            "unreadable_event",
            f"proposal {proposal_id!r} names a form the ledger does not know: {form!r}",
        )
    plan.pending = built(
        PendingProposal,
        {
            "proposal_id": proposal_id,
            "form": FORMS[form] if form else None,
            "candidate": candidate,
            "expected_revision": expected_revision,
            "shape_violations": tuple(shape_violations),
            "fingerprint": fingerprint,
            "proposed_at": proposed_at,
            "operation": operation,
        },
    )
    outcomes = plan.outcomes
    outcomes[proposal_id] = outcome(fingerprint, "pending")
    while len(outcomes) > REMEMBERED_OUTCOMES:
        del outcomes[next(iter(outcomes))]  # the oldest


def record_commit(
    plan: PlanFacts,
    position: int,
    proposal_id: str,
    revision: int,
    snapshot: PlanSnapshot,
    judged: bool = False,
    session_goals: Collection[str] | None = None,
) -> PlanSnapshot | None:
    """PlanCommitted: the pending proposal becomes the plan's next revision, every rule of its
    policy re-checked (unless `judged`: `decide` has just checked them on this very proposal),
    its goal among `session_goals` (the goals its session had started before it; None: not
    known here, as to an aggregate replayed alone). Returns the plan it replaced (None: the
    first commit)."""
    session_id = plan.session_id
    COMMIT_TYPES.check(session_id, position, proposal_id, revision, snapshot)
    pending = require_pending(plan, position, proposal_id)
    if revision != plan.revision + 1:
        raise CorruptHistory(
            session_id,
            position,
            "revision_sequence",
            f"commit says revision {revision} but follows revision {plan.revision}",
        )
    if not same_snapshot(pending.candidate, snapshot):
        raise CorruptHistory(
            session_id,
            position,
            "snapshot_mismatch",
            f"the committed snapshot differs from proposal {proposal_id!r}",
        )
    form = pending.form
    if form is None:
        raise CorruptHistory(
            session_id,
            position,
            "missing_form",
            f"proposal {proposal_id!r} was committed without a form",
        )
    if not judged:
        violations = evaluate(plan, pending, session_goals)
        if violations:
            first = violations[0]
            raise CorruptHistory(session_id, position, first.code, first.message)
    # The first commit fixes the policy; proposals before it (rejected, superseded,
    # undecided) fix nothing.
    policy = POLICIES[plan.policy] if plan.policy else POLICY_OF_FORM[form]
    before = plan.snapshot
    plan.policy = policy
    plan.revision = revision
    plan.snapshot = snapshot
    if policy is Policy.STRICT:
        known = set(plan.accepted_ids)
        plan.accepted_ids += [s.id for s in snapshot.steps if s.id not in known]
    plan.pending = None
    plan.outcomes[proposal_id] = outcome(pending.fingerprint, "committed", revision)
    return before


def record_rejection(
    plan: PlanFacts, position: int, proposal_id: str, violations: tuple[Violation, ...]
) -> None:
    """PlanRejected: the pending proposal is dropped, with at least one reason."""
    REJECTION_TYPES.check(plan.session_id, position, proposal_id, violations)
    check_violations(plan.session_id, position, "rejection", violations)
    pending = require_pending(plan, position, proposal_id)
    if not violations:
        raise CorruptHistory(
            plan.session_id,
            position,
            "rejection_without_violation",
            f"proposal {proposal_id!r} was rejected without a reason",
        )
    violations = tuple(violations)
    plan.pending = None
    plan.last_rejection = (proposal_id, violations)
    plan.outcomes[proposal_id] = outcome(pending.fingerprint, "rejected", plan.revision, violations)


def require_pending(plan: PlanFacts, position: int, proposal_id: str) -> PendingProposal:
    pending = plan.pending
    if pending is None or pending.proposal_id != proposal_id:
        raise CorruptHistory(
            plan.session_id,
            position,
            "unknown_proposal",
            f"decision for {proposal_id!r}, which is not the undecided proposal",
        )
    return pending


# -- the rules of a proposal ----------------------------------------------------------------------


def evaluate(
    plan: PlanFacts, pending: PendingProposal, session_goals: Collection[str] | None
) -> list[Violation]:
    """Every violation of the proposal against the plan as it stands (goals skipped if None)."""
    violations = list(pending.shape_violations)
    if pending.form is not None:
        # Before the first commit no policy is fixed: the proposal is held to its own form's.
        policy = POLICIES[plan.policy] if plan.policy else POLICY_OF_FORM[pending.form]
        if POLICY_OF_FORM[pending.form] is not policy:
            violations.append(
                Violation(
                    code="policy_mismatch",
                    message=f"This plan uses the {policy} policy ({TOOL_OF_POLICY[policy]}); "
                    "send the update in that form.",
                )
            )
        elif pending.form is Form.TASK:
            violations += _evaluate_operation(plan, pending, policy)
        elif pending.candidate is not None:
            # The rules of a snapshot are a function of it and the policy: the very plan
            # committed last, under this policy, passed them then (readers decode a plan sent
            # again byte for byte to that one object, projections.decode), and a plan with its
            # title and steps' texts has only its statuses to check.
            if pending.candidate is not plan.snapshot:
                violations += rules.check_snapshot(policy, pending.candidate, plan.snapshot)
            violations += rules.check_transition(
                policy, plan.snapshot, plan.accepted_ids, pending.candidate
            )
            if session_goals is not None:
                violations += rules.check_goal(pending.candidate.goal_id, session_goals)
    violations += rules.check_revision(pending.expected_revision, plan.revision)
    return violations


def _evaluate_operation(
    plan: PlanFacts, pending: PendingProposal, policy: Policy
) -> list[Violation]:
    """A task operation applied to the committed list, and the list it makes judged. The
    recorded candidate must be that list (a recorded one that is not was edited)."""
    if pending.operation is None:
        return [Violation(code="missing_field", message="A task proposal needs an `op`.")]
    made, violations = apply_operation(plan.snapshot, pending.operation)
    if made is None:
        return violations
    if not same_snapshot(pending.candidate, made):
        violations.append(
            Violation(
                code="snapshot_mismatch",
                message="The recorded list is not what the operation makes of the plan.",
            )
        )
    violations += rules.check_snapshot(policy, made, plan.snapshot)
    violations += rules.check_transition(policy, plan.snapshot, plan.accepted_ids, made)
    return violations


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
        if a is b:
            continue
        if type(a) is not Step or type(b) is not Step:
            return mine == theirs
        if a.__dict__ != b.__dict__:  # (its fields: a Step has no extra or private ones)
            return False
    return True
