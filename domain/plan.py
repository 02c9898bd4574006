"""The Plan aggregate: proposals recorded, then decided; every commit re-checked on replay."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from domain import rules
from domain.base import Aggregate, Created, Event
from domain.errors import CorruptHistory
from domain.forms import ParsedProposal
from domain.models import Form, Frozen, PlanSnapshot, Policy, TaskOperation, Violation
from domain.tasks import apply_operation
from domain.text import clean_text

OutcomeStatus = Literal["pending", "committed", "rejected"]

# Outcomes remembered for idempotent retries. Bounded, so that a long session does not make
# every load slower: a retry is expected within moments, not hundreds of proposals later.
REMEMBERED_OUTCOMES = 256


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


# The proposal `decide` has just judged, until its commit is applied: an instance attribute
# that never outlives the call, so no snapshot holds it.
JUDGED = "_judged"

TOOL_OF_POLICY = {
    Policy.STRICT: "plan_update",
    Policy.REPLACE: "update_plan",
    Policy.TASKS: "TaskCreate / TaskUpdate",
}

SUPERSEDED = Violation(
    code="superseded",
    message="A newer proposal replaced this one before it was decided.",
)


class Plan(Aggregate):
    """One per session. `revision` counts commits; 0 means nothing was ever committed. `policy`
    is None until the first commit fixes it."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.policy: Policy | None = None
        self.revision = 0
        self.snapshot: PlanSnapshot | None = None
        self.accepted_ids: list[str] = []
        self.pending: PendingProposal | None = None
        self.outcomes: dict[str, Outcome] = {}
        self.last_rejection: tuple[str, tuple[Violation, ...]] | None = None

    @dataclass(frozen=True)
    class PlanCreated(Created):
        session_id: str

    @dataclass(frozen=True)
    class PlanProposed(Event):
        proposal_id: str
        form: str | None
        candidate: PlanSnapshot | None
        expected_revision: int | None
        client: str | None
        fingerprint: str
        shape_violations: tuple[Violation, ...] = ()
        explanation: str | None = None
        operation: TaskOperation | None = None

        def apply(self, aggregate: Plan) -> None:
            aggregate.fail_unless(
                aggregate.pending is None,
                self.originator_version,
                "undecided_proposal",
                f"proposal {self.proposal_id!r} was recorded while "
                f"{aggregate.pending.proposal_id if aggregate.pending else ''!r} was undecided",
            )
            aggregate.fail_unless(
                self.proposal_id not in aggregate.outcomes,
                self.originator_version,
                "proposal_id_reused",
                f"proposal id {self.proposal_id!r} was recorded twice",
            )
            form = Form(self.form) if self.form else None
            aggregate.pending = PendingProposal(
                proposal_id=self.proposal_id,
                form=form,
                candidate=self.candidate,
                expected_revision=self.expected_revision,
                shape_violations=tuple(self.shape_violations),
                fingerprint=self.fingerprint,
                proposed_at=self.timestamp,
                operation=self.operation,
            )
            aggregate.outcomes[self.proposal_id] = Outcome(
                fingerprint=self.fingerprint, status="pending"
            )
            while len(aggregate.outcomes) > REMEMBERED_OUTCOMES:
                del aggregate.outcomes[next(iter(aggregate.outcomes))]  # the oldest

    @dataclass(frozen=True)
    class PlanCommitted(Event):
        proposal_id: str
        revision: int
        snapshot: PlanSnapshot

        def apply(self, aggregate: Plan) -> None:
            position = self.originator_version
            just_judged = aggregate.__dict__.pop(JUDGED, None)
            pending = aggregate.require_pending(self.proposal_id, position)
            judged = just_judged is pending
            aggregate.fail_unless(
                self.revision == aggregate.revision + 1,
                position,
                "revision_sequence",
                f"commit says revision {self.revision} but follows revision {aggregate.revision}",
            )
            aggregate.fail_unless(
                pending.candidate is self.snapshot or pending.candidate == self.snapshot,
                position,
                "snapshot_mismatch",
                f"the committed snapshot differs from proposal {self.proposal_id!r}",
            )
            aggregate.fail_unless(
                pending.form is not None,
                position,
                "missing_form",
                f"proposal {self.proposal_id!r} was committed without a form",
            )
            # A commit `decide` has just judged is not judged twice; replay judges every one.
            violations = [] if judged else aggregate.evaluate(pending, session_goals=None)
            if violations:
                first = violations[0]
                raise CorruptHistory(aggregate.session_id, position, first.code, first.message)
            assert pending.form is not None
            # The first commit fixes the policy; proposals before it (rejected, superseded,
            # undecided) fix nothing.
            policy = aggregate.policy or Policy.for_form(pending.form)
            aggregate.policy = policy
            aggregate.revision = self.revision
            aggregate.snapshot = self.snapshot
            if policy == Policy.STRICT:
                known = set(aggregate.accepted_ids)
                aggregate.accepted_ids += [s.id for s in self.snapshot.steps if s.id not in known]
            aggregate.pending = None
            aggregate.outcomes[self.proposal_id] = Outcome(
                fingerprint=pending.fingerprint, status="committed", revision=self.revision
            )

    @dataclass(frozen=True)
    class PlanRejected(Event):
        proposal_id: str
        violations: tuple[Violation, ...]

        def apply(self, aggregate: Plan) -> None:
            position = self.originator_version
            pending = aggregate.require_pending(self.proposal_id, position)
            aggregate.fail_unless(
                bool(self.violations),
                position,
                "rejection_without_violation",
                f"proposal {self.proposal_id!r} was rejected without a reason",
            )
            violations = tuple(self.violations)
            aggregate.pending = None
            aggregate.last_rejection = (self.proposal_id, violations)
            aggregate.outcomes[self.proposal_id] = Outcome(
                fingerprint=pending.fingerprint,
                status="rejected",
                revision=aggregate.revision,
                violations=violations,
            )

    # -- commands ---------------------------------------------------------------------------

    @classmethod
    def create(cls, aggregate_id: str, session_id: str) -> Plan:
        return cls._create(cls.PlanCreated, id=aggregate_id, session_id=session_id)

    def propose(
        self, proposal_id: str, parsed: ParsedProposal, fingerprint: str, client: str | None
    ) -> None:
        """Record a proposal; an undecided older one is superseded (rejected) first.

        A payload that leaves `goal_id` out keeps the plan's current goal (recorded in the
        candidate, so the commit and its replay see it); an explicit null unlinks it. A task
        operation's candidate is the committed list with the operation applied. `client` is
        recorded as plain text (views print it)."""
        candidate = parsed.candidate
        if parsed.operation is not None and self.policy in (None, Policy.TASKS):
            candidate, _ = apply_operation(self.snapshot, parsed.operation)
        elif candidate is not None and parsed.keeps_goal and self.snapshot is not None:
            candidate = candidate.model_copy(update={"goal_id": self.snapshot.goal_id})
        if self.pending is not None:
            self.trigger_event(
                self.PlanRejected,
                proposal_id=self.pending.proposal_id,
                violations=(SUPERSEDED,),
            )
        self.trigger_event(
            self.PlanProposed,
            proposal_id=proposal_id,
            form=parsed.form.value if parsed.form else None,
            candidate=candidate,
            expected_revision=parsed.expected_revision,
            client=clean_text(client) if client is not None else None,
            fingerprint=fingerprint,
            shape_violations=parsed.violations,
            explanation=parsed.explanation,
            operation=parsed.operation,
        )

    def decide(self, session_goals: Collection[str]) -> Outcome:
        """Commit or reject the pending proposal; returns its outcome."""
        assert self.pending is not None, "decide() needs a pending proposal"
        pending = self.pending
        violations = self.evaluate(pending, session_goals)
        if violations:
            self.trigger_event(
                self.PlanRejected, proposal_id=pending.proposal_id, violations=tuple(violations)
            )
        else:
            assert pending.candidate is not None
            self.__dict__[JUDGED] = pending  # read (and dropped) by PlanCommitted.apply
            self.trigger_event(
                self.PlanCommitted,
                proposal_id=pending.proposal_id,
                revision=self.revision + 1,
                snapshot=pending.candidate,
            )
        return self.outcomes[pending.proposal_id]

    # -- rules ------------------------------------------------------------------------------

    def evaluate(
        self, pending: PendingProposal, session_goals: Collection[str] | None
    ) -> list[Violation]:
        """Every violation of the proposal against the current state (goals skipped if None)."""
        violations = list(pending.shape_violations)
        if pending.form is not None:
            # Before the first commit no policy is fixed: the proposal is held to its own form's.
            policy = self.policy or Policy.for_form(pending.form)
            if Policy.for_form(pending.form) != policy:
                violations.append(
                    Violation(
                        code="policy_mismatch",
                        message=f"This plan uses the {policy} policy ({TOOL_OF_POLICY[policy]}); "
                        "send the update in that form.",
                    )
                )
            elif pending.form is Form.TASK:
                violations += self._evaluate_operation(pending, policy)
            elif pending.candidate is not None:
                violations += rules.check_snapshot(policy, pending.candidate)
                violations += rules.check_transition(
                    policy, self.snapshot, self.accepted_ids, pending.candidate
                )
                if session_goals is not None:
                    violations += rules.check_goal(pending.candidate.goal_id, session_goals)
        violations += rules.check_revision(pending.expected_revision, self.revision)
        return violations

    def _evaluate_operation(self, pending: PendingProposal, policy: Policy) -> list[Violation]:
        """A task operation applied to the committed list, and the list it makes judged. The
        recorded candidate must be that list (a recorded one that is not was edited)."""
        if pending.operation is None:
            return [Violation(code="missing_field", message="A task proposal needs an `op`.")]
        made, violations = apply_operation(self.snapshot, pending.operation)
        if made is None:
            return violations
        if pending.candidate != made:
            violations.append(
                Violation(
                    code="snapshot_mismatch",
                    message="The recorded list is not what the operation makes of the plan.",
                )
            )
        violations += rules.check_snapshot(policy, made)
        violations += rules.check_transition(policy, self.snapshot, self.accepted_ids, made)
        return violations

    def require_pending(self, proposal_id: str, position: int) -> PendingProposal:
        pending = self.pending
        if pending is None or pending.proposal_id != proposal_id:
            raise CorruptHistory(
                self.session_id,
                position,
                "unknown_proposal",
                f"decision for {proposal_id!r}, which is not the undecided proposal",
            )
        return pending

    def fail_unless(self, ok: bool, position: int, rule: str, message: str) -> None:
        if not ok:
            raise CorruptHistory(self.session_id, position, rule, message)
