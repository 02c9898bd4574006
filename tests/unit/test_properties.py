"""Random proposal sequences in both forms against a small reference model of the spec.

The model below is written from SPEC.md ("Two input forms, two rule sets"), not from the
domain code: for every proposal it predicts accept/reject and the exact violation codes, and
the plan it leaves. At the end of every run the collected events are replayed from scratch and
must rebuild the same aggregate without `CorruptHistory`.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from domain.forms import parse_proposal
from domain.ids import plan_aggregate_id
from domain.plan import Plan

GOALS = frozenset({"g1"})
STRICT_FIELDS = {"expected_revision", "title", "goal_id", "steps", "proposal_id"}
CODEX_FIELDS = {"explanation", "plan", "expected_revision", "goal_id", "proposal_id"}
STRICT_STEP_FIELDS = {"id", "title", "status"}
CODEX_STEP_FIELDS = {"step", "status"}
MODE_FIELDS = {"mode", "collaboration_mode"}
STATUSES = {
    "strict": {"pending", "in_progress", "completed"},
    "replace": {"pending", "in_progress", "completed", "cancelled", "blocked"},
}
ID_CHARS = re.compile(r"[A-Za-z0-9._-]{1,64}")

# Small pools so that collisions (duplicates, removals, reopenings) actually happen.
IDS = ["a", "b", "c", "d", "e"]
BAD_IDS = ["", "  ", "bad id", "x" * 65, "a/b"]
TITLES = ["Do it", "  Padded title  ", "Retitled", "", "   ", "y" * 501, "z" * 500]
PLAN_TITLES = ["Ship it", "  Ship it  ", "", "   ", "T" * 200, "T" * 201]
CODEX_TEXTS = ["Locate the failure", "  Fix it ", "fix it", "Run tests", "", "   ", "w" * 501]
ALL_STATUSES = ["pending", "in_progress", "completed", "cancelled", "blocked", "done"]


# -- the reference model -------------------------------------------------------------------


@dataclass
class Model:
    """What the spec says the plan is after each decision."""

    policy: str | None = None
    revision: int = 0
    title: str | None = None
    steps: list[tuple[str, str, str]] = field(default_factory=list)  # (id, title, status)
    accepted: set[str] = field(default_factory=set)
    pending: tuple[str, dict[str, Any]] | None = None
    committed_once: bool = False
    goal: str | None = None

    def codes_for(self, payload: dict[str, Any]) -> tuple[list[str], bool]:
        """Every violation code the proposal earns now, and whether it is a policy mismatch."""
        form = "strict" if "steps" in payload else "codex"
        fields = STRICT_FIELDS if form == "strict" else CODEX_FIELDS
        step_fields = STRICT_STEP_FIELDS if form == "strict" else CODEX_STEP_FIELDS
        items = payload["steps"] if form == "strict" else payload["plan"]
        codes: list[str] = []
        for key in payload:
            if key in MODE_FIELDS:
                codes.append("mode_change_forbidden")
            elif key not in fields:
                codes.append("unknown_field")
        for item in items:
            codes += ["unknown_field" for key in item if key not in step_fields]
        expected = payload.get("expected_revision")
        stale = ["revision_conflict"] if expected is not None and expected != self.revision else []

        policy = self.policy or ("strict" if form == "strict" else "replace")
        if policy != ("strict" if form == "strict" else "replace"):
            return [*codes, "policy_mismatch", *stale], True

        title, steps = normalise(payload)
        if policy == "strict" and not title:
            codes.append("blank_title")
        if title is not None and len(title) > 200:
            codes.append("too_long")
        if len(steps) > 100:
            codes.append("too_many_steps")
        seen: set[str] = set()
        for step_id, step_title, status in steps:
            if policy == "strict":
                if not step_id:
                    codes.append("blank_step_id")
                elif not ID_CHARS.fullmatch(step_id):
                    codes.append("invalid_step_id")
                elif step_id in seen:
                    codes.append("duplicate_step_id")
                seen.add(step_id)
            if not step_title:
                codes.append("blank_step_title")
            elif len(step_title) > 500:
                codes.append("too_long")
            if status not in STATUSES[policy]:
                codes.append("invalid_status")
        statuses = [status for _, _, status in steps]
        active = statuses.count("in_progress")
        if active > 1:
            codes.append("multiple_in_progress")
        elif policy == "strict" and active == 0 and "pending" in statuses:
            codes.append("no_step_in_progress")
        if policy == "strict":
            present = {step_id for step_id, _, _ in steps}
            codes += ["step_removed" for _ in self.accepted - present]
            before = {step_id: status for step_id, _, status in self.steps}
            codes += [
                "completed_step_reopened"
                for step_id, _, status in steps
                if before.get(step_id) == "completed" and status in ("pending", "in_progress")
            ]
        goal = payload.get("goal_id")
        if goal is not None and goal not in GOALS:
            codes.append("unknown_goal")
        return codes + stale, False

    def commit(self, payload: dict[str, Any]) -> None:
        """The first commit fixes the policy (rejected or superseded proposals fix nothing); a
        payload without `goal_id` keeps the goal, an explicit one (null too) replaces it."""
        if self.policy is None:
            self.policy = "strict" if "steps" in payload else "replace"
        if "goal_id" in payload:
            self.goal = payload["goal_id"]
        self.title, self.steps = normalise(payload)
        self.revision += 1
        self.committed_once = True
        if self.policy == "strict":
            self.accepted |= {step_id for step_id, _, _ in self.steps}


def normalise(payload: dict[str, Any]) -> tuple[str | None, list[tuple[str, str, str]]]:
    """Trimmed title and steps; Codex steps get no id here (the model checks ids separately)."""
    if "steps" in payload:
        return payload.get("title", "").strip(), [
            (s.get("id", "").strip(), s.get("title", "").strip(), s.get("status", "").strip())
            for s in payload["steps"]
        ]
    return None, [
        ("", s.get("step", "").strip(), s.get("status", "").strip()) for s in payload["plan"]
    ]


# -- strategies ----------------------------------------------------------------------------


def extras(draw: Any, form: str, model: Model) -> dict[str, Any]:
    """Optional fields, mostly harmless, sometimes wrong."""
    extra: dict[str, Any] = {}
    revision = draw(
        st.sampled_from([None, None, model.revision, model.revision, model.revision + 1])
        | st.integers(0, max(model.revision - 1, 0))
    )
    if revision is not None:
        extra["expected_revision"] = revision
    goal = draw(st.sampled_from(["omit", "omit", None, "g1", "ghost"]))
    if goal != "omit":
        extra["goal_id"] = goal
    if draw(st.integers(0, 9)) == 0:
        extra[draw(st.sampled_from(["mode", "collaboration_mode", "notes"]))] = "plan"
    if form == "codex" and draw(st.booleans()):
        extra["explanation"] = "because"
    return extra


def random_strict(draw: Any, model: Model) -> dict[str, Any]:
    steps = draw(
        st.lists(
            st.fixed_dictionaries(
                {
                    "id": st.sampled_from(IDS) | st.sampled_from(BAD_IDS),
                    "title": st.sampled_from(TITLES),
                    "status": st.sampled_from(ALL_STATUSES),
                }
            ),
            max_size=5,
        )
    )
    return {
        "title": draw(st.sampled_from(PLAN_TITLES)),
        "steps": steps,
        **extras(draw, "strict", model),
    }


def progressing_strict(draw: Any, model: Model) -> dict[str, Any]:
    """Usually valid: keeps every accepted id, moves the in-progress marker forward, maybe adds
    a step; then 0-2 deliberate mistakes."""
    ids = [step_id for step_id, _, _ in model.steps] if model.policy == "strict" else []
    ids += [i for i in draw(st.lists(st.sampled_from(IDS), max_size=2)) if i not in ids]
    done_before = sum(1 for _, _, status in model.steps if status == "completed")
    cut = draw(st.integers(min(done_before, len(ids)), len(ids)))
    steps = [
        {
            "id": step_id,
            "title": draw(st.sampled_from(TITLES[:3])),
            "status": "completed" if n < cut else "in_progress" if n == cut else "pending",
        }
        for n, step_id in enumerate(ids)
    ]
    payload: dict[str, Any] = {"title": "Ship it", "steps": steps}
    if draw(st.booleans()):
        payload["expected_revision"] = model.revision
    for mistake in draw(st.lists(st.integers(0, 7), max_size=2)):
        if mistake == 0 and steps:
            steps.pop(draw(st.integers(0, len(steps) - 1)))
        elif mistake == 1 and steps:
            steps[draw(st.integers(0, len(steps) - 1))]["status"] = draw(
                st.sampled_from(ALL_STATUSES)
            )
        elif mistake == 2 and steps:
            steps.append(dict(steps[0]))
        elif mistake == 3:
            payload["title"] = draw(st.sampled_from(PLAN_TITLES))
        elif mistake == 4 and steps:
            steps[-1]["owner"] = "me"
        elif mistake == 5:
            payload["expected_revision"] = model.revision + draw(st.sampled_from([-1, 1]))
        elif mistake == 6 and steps:
            steps[0]["id"] = draw(st.sampled_from(BAD_IDS))
        elif mistake == 7:
            payload.update(extras(draw, "strict", model))
    if payload.get("expected_revision", 0) < 0:
        del payload["expected_revision"]
    return payload


def random_codex(draw: Any, model: Model) -> dict[str, Any]:
    status = st.sampled_from(["pending", "pending", "completed", "cancelled", "in_progress"])
    item = st.fixed_dictionaries({"step": st.sampled_from(CODEX_TEXTS), "status": status})
    odd = st.fixed_dictionaries(
        {"step": st.sampled_from(CODEX_TEXTS), "status": st.sampled_from(ALL_STATUSES)},
        optional={"id": st.just("x")},
    )
    plan = draw(st.lists(item | odd if draw(st.booleans()) else item, max_size=5))
    return {"plan": plan, **extras(draw, "codex", model)}


# -- the state machine ---------------------------------------------------------------------


class PlanMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.plan = Plan.create(plan_aggregate_id("prop"), "prop")
        self.events: list[Any] = list(self.plan.collect_events())
        self.model = Model()
        self.count = 0
        self.superseded: list[str] = []

    def submit_proposal(self, payload: dict[str, Any], decide: bool) -> None:
        self.count += 1
        proposal_id = f"p{self.count}"
        if self.model.pending is not None:
            self.superseded.append(self.model.pending[0])
            self.model.pending = None
        self.plan.propose(proposal_id, parse_proposal(payload), f"fp{self.count}", "prop")
        if decide:
            self.decide_proposal(proposal_id, payload)
        else:
            self.model.pending = (proposal_id, payload)
            assert self.plan.outcomes[proposal_id].status == "pending"
        self.events += self.plan.collect_events()

    def decide_proposal(self, proposal_id: str, payload: dict[str, Any]) -> None:
        expected, mismatch = self.model.codes_for(payload)
        outcome = self.plan.decide(GOALS)
        actual = [v.code for v in outcome.violations]
        assert all(v.message.strip() for v in outcome.violations)
        if mismatch:
            assert outcome.status == "rejected"
            assert Counter(expected) <= Counter(actual), (payload, actual)
        else:
            assert Counter(actual) == Counter(expected), (payload, actual, expected)
            assert outcome.status == ("rejected" if expected else "committed")
        if outcome.status == "committed":
            self.model.commit(payload)
        assert outcome.revision == self.model.revision

    @rule(data=st.data(), decide=st.booleans() | st.just(True))
    def propose_strict(self, data: st.DataObject, decide: bool) -> None:
        maker = data.draw(st.sampled_from([random_strict, progressing_strict, progressing_strict]))
        self.submit_proposal(maker(data.draw, self.model), decide)

    @rule(data=st.data(), decide=st.booleans() | st.just(True))
    def propose_codex(self, data: st.DataObject, decide: bool) -> None:
        self.submit_proposal(random_codex(data.draw, self.model), decide)

    @precondition(lambda self: self.model.pending is not None)
    @rule()
    def decide_staged(self) -> None:
        assert self.model.pending is not None
        proposal_id, payload = self.model.pending
        self.model.pending = None
        self.decide_proposal(proposal_id, payload)
        self.events += self.plan.collect_events()

    @invariant()
    def matches_model(self) -> None:
        plan, model = self.plan, self.model
        assert plan.revision == model.revision
        assert plan.policy == model.policy
        for proposal_id in self.superseded:
            outcome = plan.outcomes[proposal_id]
            assert (outcome.status, [v.code for v in outcome.violations]) == (
                "rejected",
                ["superseded"],
            )
        if not model.committed_once:
            assert plan.snapshot is None
            return
        assert plan.snapshot is not None
        assert plan.snapshot.title == model.title
        assert plan.snapshot.goal_id == model.goal
        got = [(s.title, s.status) for s in plan.snapshot.steps]
        assert got == [(title, status) for _, title, status in model.steps]
        ids = [s.id for s in plan.snapshot.steps]
        assert len(set(ids)) == len(ids)
        assert all(ID_CHARS.fullmatch(i) for i in ids)
        if model.policy == "strict":
            assert ids == [step_id for step_id, _, _ in model.steps]
            assert set(plan.accepted_ids) == model.accepted

    def teardown(self) -> None:
        aggregate = None
        for event in self.events:  # raises CorruptHistory if any commit breaks a rule
            aggregate = event.mutate(aggregate)
        assert isinstance(aggregate, Plan)
        assert aggregate.revision == self.plan.revision == self.model.revision
        assert aggregate.snapshot == self.plan.snapshot
        assert aggregate.pending == self.plan.pending
        assert aggregate == self.plan


PlanMachine.TestCase.settings = settings(
    max_examples=150,
    stateful_step_count=20,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestPlanMachine = PlanMachine.TestCase
