"""The Plan aggregate: proposals recorded, then decided; every commit re-checked on replay."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from domain.base import Aggregate, Created, Event
from domain.errors import CorruptHistory
from domain.forms import ParsedProposal
from domain.models import PlanSnapshot, Policy, TaskOperation, Violation
from domain.plan_state import (
    SUPERSEDED,
    Outcome,
    PendingProposal,
    PlanFacts,
    PlanState,
    check_created,
    check_next,
    evaluate,
    follows,
    plan_created,
    record_commit,
    record_proposal,
    record_rejection,
)
from domain.tasks import apply_operation
from domain.text import clean_text

# The proposal `decide` has just judged, until its commit is applied: an instance attribute
# that never outlives the call, so no snapshot holds it.
JUDGED = "_judged"


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

        def mutate(self, aggregate: Any) -> Any:
            check_created(
                self.session_id,
                self.originator_version,
                aggregate is not None,
                getattr(self, "timestamp", None),  # (an edited row may have lost it)
            )
            return super().mutate(aggregate)

    @dataclass(frozen=True)
    class PlanEvent(Event):
        """A plan event after its creation: it must come next in the plan's stream."""

        def mutate(self, aggregate: Any) -> Any:
            check_next(
                self.originator_id.removeprefix("plan:"),
                self.originator_version,
                aggregate is not None,
                aggregate.version if aggregate is not None else None,
                getattr(self, "timestamp", None),  # (an edited row may have lost it)
            )
            return super().mutate(aggregate)

    @dataclass(frozen=True)
    class PlanProposed(PlanEvent):
        proposal_id: str
        form: str | None
        candidate: PlanSnapshot | None
        expected_revision: int | None
        client: str | None
        fingerprint: str
        shape_violations: tuple[Violation, ...] = ()
        explanation: str | None = None
        operation: TaskOperation | None = None
        actor: str | None = None  # who sent it: a token's name, or a local user

        def apply(self, aggregate: PlanFacts) -> None:
            record_proposal(
                aggregate,
                self.originator_version,
                proposal_id=self.proposal_id,
                form=self.form,
                candidate=self.candidate,
                expected_revision=self.expected_revision,
                fingerprint=self.fingerprint,
                shape_violations=self.shape_violations,
                proposed_at=self.timestamp,
                operation=self.operation,
                client=self.client,
                actor=self.actor,
                explanation=self.explanation,
            )

    @dataclass(frozen=True)
    class PlanCommitted(PlanEvent):
        proposal_id: str
        revision: int
        snapshot: PlanSnapshot

        def apply(self, aggregate: Plan) -> None:
            # A commit `decide` has just judged is not judged twice; replay judges every one.
            judged = aggregate.__dict__.pop(JUDGED, None)
            record_commit(
                aggregate,
                self.originator_version,
                self.proposal_id,
                self.revision,
                self.snapshot,
                judged=judged is not None and judged is aggregate.pending,
            )

    @dataclass(frozen=True)
    class PlanRejected(PlanEvent):
        proposal_id: str
        violations: tuple[Violation, ...]

        def apply(self, aggregate: PlanFacts) -> None:
            record_rejection(aggregate, self.originator_version, self.proposal_id, self.violations)

    # -- commands ---------------------------------------------------------------------------

    @classmethod
    def create(cls, aggregate_id: str, session_id: str) -> Plan:
        return cls._create(cls.PlanCreated, id=aggregate_id, session_id=session_id)

    def propose(
        self,
        proposal_id: str,
        parsed: ParsedProposal,
        fingerprint: str,
        client: str | None,
        actor: str | None = None,
    ) -> None:
        """Record a proposal; an undecided older one is superseded (rejected) first.

        A payload that leaves `goal_id` out keeps the plan's current goal (recorded in the
        candidate, so the commit and its replay see it); an explicit null unlinks it. A task
        operation's candidate is the committed list with the operation applied. `client` is
        and `actor` are recorded as plain text (views print them)."""
        candidate = parsed.candidate
        if parsed.operation is not None and self.policy in (None, Policy.TASKS):
            candidate, _ = apply_operation(self.snapshot, parsed.operation)
        elif (
            candidate is not None
            and parsed.keeps_goal
            and self.snapshot is not None
            and candidate.goal_id != self.snapshot.goal_id
        ):
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
            actor=clean_text(actor) if actor is not None else None,
        )

    def decide(self, session_goals: Collection[str]) -> Outcome:
        """Commit or reject the pending proposal; returns its outcome."""
        assert self.pending is not None, "decide() needs a pending proposal"
        pending = self.pending
        violations = evaluate(self, pending, session_goals)
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


def apply_to_state(
    plan: PlanState | None,
    session_id: str,
    event: Event,
    judged: bool = False,
    session_goals: Collection[str] | None = None,
) -> tuple[PlanState | None, PlanSnapshot | None]:
    """`event` applied to a plan's facts by the rules (domain.plan_state), as the aggregate
    applies it: the facts after it and, for a commit, the plan it replaced (None otherwise).
    `session_goals`: the goals the session had started before the event, which a commit's
    plan must name if it names one (None: not known, not checked, as by the aggregate).
    Raises CorruptHistory, also for an event that is not the plan's."""
    position, at = event.originator_version, getattr(event, "timestamp", None)
    if isinstance(event, Plan.PlanCreated):
        return plan_created(session_id, position, plan, at), None
    if isinstance(event, Plan.PlanProposed | Plan.PlanRejected):
        plan = follows(plan, session_id, position, at)
        event.apply(plan)
        return plan, None
    if isinstance(event, Plan.PlanCommitted):
        plan = follows(plan, session_id, position, at)
        before = record_commit(
            plan,
            position,
            event.proposal_id,
            event.revision,
            event.snapshot,
            judged=judged,
            session_goals=session_goals,
        )
        return plan, before
    raise CorruptHistory(
        session_id, position, "unreadable_event", f"a {type(event).__name__} in a plan's stream"
    )
