"""Replay enforcement without a database (SPEC "Events and replay"), and the goal lifecycle.

A history is rebuilt by calling `event.mutate` in order, exactly as the event store does. A
forged history must raise `CorruptHistory` naming the session, the event's position
(`originator_version`) and the violated rule.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from eventsourcing.utils import get_topic

from domain.errors import CorruptHistory, GoalExists, GoalNotFound, IllegalTransition
from domain.forms import parse_proposal
from domain.ids import plan_aggregate_id, session_aggregate_id
from domain.models import PlanSnapshot, Step, Violation
from domain.plan import Plan
from domain.session import Session
from domain.session_fields import GoalState, Mode
from planledger.service.verify import GOAL_STARTED

SESSION = "s1"
Events = list[Any]


# -- building histories --------------------------------------------------------------------


def st(step_id: str, status: str) -> dict[str, str]:
    return {"id": step_id, "title": f"Do {step_id}", "status": status}


def snapshot(*steps: tuple[str, str], title: str | None = "Ship") -> PlanSnapshot:
    return PlanSnapshot(
        title=title, steps=tuple(Step(id=i, title=f"Do {i}", status=s) for i, s in steps)
    )


def propose(plan: Plan, proposal_id: str, payload: dict[str, Any], *, decide: bool = True) -> str:
    plan.propose(proposal_id, parse_proposal(payload), f"fp-{proposal_id}", "unit")
    return plan.decide({"g1"}).status if decide else "pending"


def strict_history() -> tuple[Plan, Events]:
    """Versions: 1 created; p1 2-3 (rev 1); p2 4-5 rejected; p3 6 staged; p3 superseded 7;
    p4 8-9 (rev 2); p5 10-11 (rev 3)."""
    plan = Plan.create(plan_aggregate_id(SESSION), SESSION)
    statuses = [
        propose(
            plan,
            "p1",
            {
                "title": "Ship",
                "steps": [st("a", "in_progress"), st("b", "pending"), st("c", "pending")],
            },
        ),
        propose(plan, "p2", {"title": " ", "steps": [st("a", "in_progress")]}),
        propose(plan, "p3", {"title": "Ship", "steps": []}, decide=False),
        propose(
            plan,
            "p4",
            {
                "expected_revision": 1,
                "title": "Ship",
                "steps": [st("a", "completed"), st("b", "in_progress"), st("c", "pending")],
            },
        ),
        propose(
            plan,
            "p5",
            {
                "title": "Ship",
                "steps": [st("a", "completed"), st("b", "completed"), st("c", "in_progress")],
            },
        ),
    ]
    assert statuses == ["committed", "rejected", "pending", "committed", "committed"]
    return plan, list(plan.collect_events())


def codex_history() -> tuple[Plan, Events]:
    """Versions: 1 created; p1 2-3 (rev 1); p2 4-5 (rev 2); p3 6-7 (rev 3, cleared)."""
    plan = Plan.create(plan_aggregate_id(SESSION), SESSION)
    statuses = [
        propose(
            plan,
            "p1",
            {"plan": [{"step": "A", "status": "in_progress"}, {"step": "B", "status": "pending"}]},
        ),
        propose(
            plan,
            "p2",
            {
                "plan": [
                    {"step": "A", "status": "completed"},
                    {"step": "B", "status": "in_progress"},
                    {"step": "C", "status": "cancelled"},
                ]
            },
        ),
        propose(plan, "p3", {"plan": []}),
    ]
    assert statuses == ["committed", "committed", "committed"]
    return plan, list(plan.collect_events())


def replay(events: Sequence[Any]) -> Plan:
    aggregate = None
    for event in events:
        aggregate = event.mutate(aggregate)
    assert isinstance(aggregate, Plan)
    return aggregate


def at(events: Events, kind: type[Any], proposal_id: str, /) -> int:
    """Index of the `kind` event of `proposal_id`."""
    [index] = [
        n
        for n, e in enumerate(events)
        if isinstance(e, kind) and getattr(e, "proposal_id", None) == proposal_id
    ]
    return index


def edit(events: Events, kind: type[Any], proposal_id: str, /, **changes: Any) -> Events:
    forged = list(events)
    index = at(events, kind, proposal_id)
    forged[index] = dataclasses.replace(events[index], **changes)
    return forged


def forge_commit(events: Events, proposal_id: str, forged: PlanSnapshot) -> Events:
    """Rewrite both the proposal and its commit, so they agree with each other."""
    events = edit(events, Plan.PlanProposed, proposal_id, candidate=forged)
    return edit(events, Plan.PlanCommitted, proposal_id, snapshot=forged)


def drop(events: Events, index: int) -> Events:
    """Delete one event and renumber the rest, as an edited table would look."""
    forged = list(events[:index])
    for event in events[index + 1 :]:
        forged.append(dataclasses.replace(event, originator_version=event.originator_version - 1))
    return forged


# -- untampered histories replay to the same aggregate -------------------------------------


@pytest.mark.parametrize("history", [strict_history, codex_history], ids=["strict", "codex"])
def test_replay_rebuilds_the_same_plan(history: Callable[[], tuple[Plan, Events]]) -> None:
    plan, events = history()
    assert [e.originator_version for e in events] == list(range(1, len(events) + 1))
    rebuilt = replay(events)
    assert rebuilt == plan
    assert rebuilt.revision == plan.revision == 3
    assert rebuilt.snapshot == plan.snapshot
    assert rebuilt.policy == plan.policy
    assert rebuilt.accepted_ids == plan.accepted_ids
    assert rebuilt.outcomes == plan.outcomes
    assert rebuilt.version == len(events)


def test_strict_history_state() -> None:
    plan, events = strict_history()
    assert [type(e).__name__ for e in events] == [
        "PlanCreated",
        "PlanProposed",
        "PlanCommitted",
        "PlanProposed",
        "PlanRejected",
        "PlanProposed",
        "PlanRejected",
        "PlanProposed",
        "PlanCommitted",
        "PlanProposed",
        "PlanCommitted",
    ]
    assert plan.policy == "strict"
    assert plan.snapshot == snapshot(("a", "completed"), ("b", "completed"), ("c", "in_progress"))
    assert plan.accepted_ids == ["a", "b", "c"]
    assert {pid: (o.status, o.revision) for pid, o in plan.outcomes.items()} == {
        "p1": ("committed", 1),
        "p2": ("rejected", 1),
        "p3": ("rejected", 1),
        "p4": ("committed", 2),
        "p5": ("committed", 3),
    }
    assert [v.code for v in plan.outcomes["p3"].violations] == ["superseded"]
    assert plan.pending is None


def test_codex_history_state() -> None:
    plan, _ = codex_history()
    assert plan.policy == "replace"
    assert plan.snapshot == PlanSnapshot(title=None, steps=())
    assert plan.accepted_ids == []


def test_replay_of_an_undecided_proposal_keeps_it_pending() -> None:
    plan = Plan.create(plan_aggregate_id(SESSION), SESSION)
    propose(plan, "p1", {"plan": [{"step": "A", "status": "pending"}]}, decide=False)
    rebuilt = replay(plan.collect_events())
    assert rebuilt == plan
    assert rebuilt.pending is not None
    assert rebuilt.pending.proposal_id == "p1"
    assert rebuilt.outcomes["p1"].status == "pending"
    assert rebuilt.revision == 0


# -- forged histories are refused ----------------------------------------------------------

P5_COMMIT = 11  # position of p5's PlanCommitted in strict_history


STRICT_FORGERIES = [
    pytest.param(
        lambda ev: edit(ev, Plan.PlanCommitted, "p5", revision=7),
        "revision_sequence",
        P5_COMMIT,
        id="wrong-revision-ahead",
    ),
    pytest.param(
        lambda ev: edit(ev, Plan.PlanCommitted, "p5", revision=2),
        "revision_sequence",
        P5_COMMIT,
        id="wrong-revision-repeated",
    ),
    pytest.param(
        lambda ev: edit(ev, Plan.PlanCommitted, "p1", revision=0),
        "revision_sequence",
        3,
        id="first-commit-revision-0",
    ),
    pytest.param(
        lambda ev: edit(
            ev,
            Plan.PlanCommitted,
            "p5",
            snapshot=snapshot(("a", "in_progress"), ("b", "completed"), ("c", "pending")),
        ),
        "snapshot_mismatch",
        P5_COMMIT,
        id="commit-differs-from-its-proposal",
    ),
    pytest.param(
        lambda ev: forge_commit(
            ev, "p5", snapshot(("a", "in_progress"), ("b", "completed"), ("c", "pending"))
        ),
        "completed_step_reopened",
        P5_COMMIT,
        id="reopens-completed-step",
    ),
    pytest.param(
        lambda ev: forge_commit(
            ev, "p5", snapshot(("a", "completed"), ("b", "in_progress"), ("c", "in_progress"))
        ),
        "multiple_in_progress",
        P5_COMMIT,
        id="two-in-progress",
    ),
    pytest.param(
        lambda ev: forge_commit(ev, "p5", snapshot(("a", "completed"), ("b", "completed"))),
        "step_removed",
        P5_COMMIT,
        id="removes-accepted-step",
    ),
    pytest.param(
        lambda ev: forge_commit(
            ev, "p5", snapshot(("a", "completed"), ("b", "completed"), ("c", "pending"))
        ),
        "no_step_in_progress",
        P5_COMMIT,
        id="pending-without-in-progress",
    ),
    pytest.param(
        lambda ev: forge_commit(
            ev, "p5", snapshot(("a", "completed"), ("b", "completed"), ("c", "cancelled"))
        ),
        "invalid_status",
        P5_COMMIT,
        id="cancelled-under-strict",
    ),
    pytest.param(
        lambda ev: forge_commit(
            ev,
            "p5",
            snapshot(("a", "completed"), ("b", "completed"), ("c", "in_progress"), title=" "),
        ),
        "blank_title",
        P5_COMMIT,
        id="blank-title",
    ),
    pytest.param(
        lambda ev: forge_commit(ev, "p1", snapshot(("a", "in_progress"), ("a", "pending"))),
        "duplicate_step_id",
        3,
        id="duplicate-id-in-first-commit",
    ),
    pytest.param(
        lambda ev: edit(ev, Plan.PlanProposed, "p5", expected_revision=0),
        "revision_conflict",
        P5_COMMIT,
        id="commit-against-stale-revision",
    ),
    pytest.param(
        lambda ev: edit(
            ev,
            Plan.PlanProposed,
            "p5",
            shape_violations=(Violation(code="unknown_field", message="`x` is unknown."),),
        ),
        "unknown_field",
        P5_COMMIT,
        id="commit-despite-shape-violation",
    ),
    pytest.param(
        lambda ev: edit(ev, Plan.PlanProposed, "p5", form="codex"),
        "policy_mismatch",
        P5_COMMIT,
        id="commit-in-other-form",
    ),
    pytest.param(
        lambda ev: edit(ev, Plan.PlanCommitted, "p5", proposal_id="p2"),
        "unknown_proposal",
        P5_COMMIT,
        id="commit-of-another-proposal",
    ),
    pytest.param(
        lambda ev: edit(ev, Plan.PlanRejected, "p2", violations=()),
        "rejection_without_violation",
        5,
        id="rejection-without-reason",
    ),
    pytest.param(
        lambda ev: edit(ev, Plan.PlanProposed, "p3", proposal_id="p1"),
        "proposal_id_reused",
        6,
        id="proposal-id-reused",
    ),
    pytest.param(
        lambda ev: drop(ev, 4),  # p2's rejection deleted: p3 is recorded while p2 is undecided
        "undecided_proposal",
        5,
        id="decision-deleted",
    ),
]


@pytest.mark.parametrize(("forge", "rule", "position"), STRICT_FORGERIES)
def test_forged_strict_history_is_refused(
    forge: Callable[[Events], Events], rule: str, position: int
) -> None:
    _, events = strict_history()
    forged = forge(events)
    assert forged != events
    with pytest.raises(CorruptHistory) as caught:
        replay(forged)
    error = caught.value
    assert (error.session_id, error.position, error.rule) == (SESSION, position, rule)
    assert error.detail.strip()
    assert SESSION in str(error)
    assert f"[{rule}]" in str(error)
    assert f"event {position}" in str(error)


CODEX_FORGERIES = [
    pytest.param(
        lambda ev: forge_commit(
            ev, "p2", snapshot(("a", "in_progress"), ("b", "in_progress"), title=None)
        ),
        "multiple_in_progress",
        5,
        id="two-in-progress",
    ),
    pytest.param(
        lambda ev: forge_commit(ev, "p2", snapshot(("a", "done"), title=None)),
        "invalid_status",
        5,
        id="unknown-status",
    ),
    pytest.param(
        lambda ev: forge_commit(
            ev, "p2", PlanSnapshot(title=None, steps=(Step(id="a", title=" ", status="pending"),))
        ),
        "blank_step_title",
        5,
        id="blank-step",
    ),
    pytest.param(
        lambda ev: forge_commit(
            ev, "p3", snapshot(*[(f"s{n}", "pending") for n in range(101)], title=None)
        ),
        "too_many_steps",
        7,
        id="too-many-steps",
    ),
    pytest.param(
        lambda ev: edit(ev, Plan.PlanProposed, "p2", form="strict"),
        "policy_mismatch",
        5,
        id="commit-in-other-form",
    ),
    pytest.param(
        lambda ev: edit(ev, Plan.PlanProposed, "p3", expected_revision=0),
        "revision_conflict",
        7,
        id="stale-revision",
    ),
]


@pytest.mark.parametrize(("forge", "rule", "position"), CODEX_FORGERIES)
def test_forged_codex_history_is_refused(
    forge: Callable[[Events], Events], rule: str, position: int
) -> None:
    _, events = codex_history()
    with pytest.raises(CorruptHistory) as caught:
        replay(forge(events))
    assert (caught.value.session_id, caught.value.position, caught.value.rule) == (
        SESSION,
        position,
        rule,
    )


def test_replace_policy_replay_allows_what_the_policy_allows() -> None:
    """Control: a reopened or dropped step is legal under `replace`, so replay accepts it."""
    _, events = codex_history()
    # update_plan ids are derived from the step text, so a replace snapshot uses them.
    derived = PlanSnapshot(title=None, steps=(Step(id="do-z", title="Do z", status="pending"),))
    forged = forge_commit(events, "p2", derived)
    rebuilt = replay(forged)
    assert rebuilt.revision == 3
    assert rebuilt.outcomes["p2"].status == "committed"


def test_a_refused_event_leaves_the_aggregate_unchanged() -> None:
    _, events = strict_history()
    forged = forge_commit(
        events, "p5", snapshot(("a", "in_progress"), ("b", "completed"), ("c", "pending"))
    )
    index = at(forged, Plan.PlanCommitted, "p5")
    aggregate = replay(forged[:index])
    before = copy.deepcopy(aggregate.__dict__)
    with pytest.raises(CorruptHistory):
        forged[index].mutate(aggregate)
    assert aggregate.__dict__ == before
    assert aggregate.revision == 2
    assert aggregate.version == index


# -- sessions and goals --------------------------------------------------------------------


def new_session(mode: Mode = Mode.WORK) -> Session:
    return Session.open(session_aggregate_id(SESSION), SESSION, mode)


PATHS_TO_STATE: dict[GoalState, list[str]] = {
    GoalState.ACTIVE: [],
    GoalState.BLOCKED: ["block"],
    GoalState.COMPLETED: ["complete"],
    GoalState.CANCELLED: ["cancel"],
}
LEGAL = {
    (GoalState.ACTIVE, "block"): GoalState.BLOCKED,
    (GoalState.ACTIVE, "complete"): GoalState.COMPLETED,
    (GoalState.ACTIVE, "cancel"): GoalState.CANCELLED,
    (GoalState.BLOCKED, "resume"): GoalState.ACTIVE,
    (GoalState.BLOCKED, "cancel"): GoalState.CANCELLED,
}
EDGE_CASES = [
    pytest.param(state, edge, LEGAL.get((state, edge)), id=f"{state}-{edge}")
    for state in GoalState
    for edge in ("block", "resume", "complete", "cancel")
]


def goal_in(state: GoalState) -> Session:
    session = new_session()
    session.start_goal("g1", "Ship the export")
    for edge in PATHS_TO_STATE[state]:
        session.move_goal("g1", edge)
    assert session.goals["g1"].state == state
    return session


@pytest.mark.parametrize(("state", "edge", "target"), EDGE_CASES)
def test_goal_lifecycle_edges(state: GoalState, edge: str, target: GoalState | None) -> None:
    session = goal_in(state)
    recorded = len(session.pending_events)
    if target is None:
        with pytest.raises(IllegalTransition):
            session.move_goal("g1", edge)
        assert session.goals["g1"].state == state
        assert len(session.pending_events) == recorded
    else:
        session.move_goal("g1", edge)
        assert session.goals["g1"].state == target
        assert len(session.pending_events) == recorded + 1


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        pytest.param(GoalState.ACTIVE, True, id="active"),
        pytest.param(GoalState.BLOCKED, False, id="blocked"),
        pytest.param(GoalState.COMPLETED, False, id="completed"),
        pytest.param(GoalState.CANCELLED, False, id="cancelled"),
    ],
)
def test_should_continue_exactly_when_a_goal_is_active(state: GoalState, expected: bool) -> None:
    assert goal_in(state).should_continue is expected


def test_should_continue_with_several_goals() -> None:
    session = new_session()
    assert session.should_continue is False
    session.start_goal("g1", "one")
    session.start_goal("g2", "two")
    session.move_goal("g1", "complete")
    assert session.should_continue is True
    session.move_goal("g2", "block")
    assert session.should_continue is False
    session.move_goal("g2", "resume")
    assert session.should_continue is True
    session.move_goal("g2", "cancel")
    assert session.should_continue is False


def test_an_unfinished_plan_never_makes_a_session_continue() -> None:
    session = new_session()
    plan = Plan.create(plan_aggregate_id(SESSION), SESSION)
    status = propose(
        plan, "p1", {"title": "Ship", "steps": [st("a", "in_progress"), st("b", "pending")]}
    )
    assert status == "committed"
    assert session.should_continue is False
    session.start_goal("g1", "Ship")
    session.move_goal("g1", "complete")
    assert session.should_continue is False  # the plan still has pending steps


def test_goal_errors() -> None:
    session = goal_in(GoalState.ACTIVE)
    with pytest.raises(GoalExists):
        session.start_goal("g1", "again")
    with pytest.raises(GoalNotFound):
        session.move_goal("ghost", "complete")


def test_mode_changes_are_recorded_only_when_they_change() -> None:
    session = new_session(Mode.PLAN)
    assert session.mode == Mode.PLAN
    session.change_mode(Mode.PLAN)
    session.change_mode(Mode.WORK)
    kinds = [type(e).__name__ for e in session.collect_events()]
    assert kinds == ["SessionOpened", "CollaborationModeChanged"]
    assert session.mode == Mode.WORK


def session_history() -> tuple[Session, Events]:
    """Versions: 1 opened, 2 g1 started, 3 blocked, 4 resumed, 5 completed, 6 g2 started,
    7 g2 cancelled, 8 mode changed."""
    session = new_session()
    session.start_goal("g1", "one")
    session.move_goal("g1", "block")
    session.move_goal("g1", "resume")
    session.move_goal("g1", "complete")
    session.start_goal("g2", "two")
    session.move_goal("g2", "cancel")
    session.change_mode(Mode.PLAN)
    return session, list(session.collect_events())


def replay_session(events: Sequence[Any]) -> Session:
    aggregate = None
    for event in events:
        aggregate = event.mutate(aggregate)
    assert isinstance(aggregate, Session)
    return aggregate


def test_session_replay_rebuilds_the_same_session() -> None:
    session, events = session_history()
    rebuilt = replay_session(events)
    assert rebuilt == session
    assert rebuilt.mode == Mode.PLAN
    assert {g.goal_id: g.state for g in rebuilt.goals.values()} == {
        "g1": GoalState.COMPLETED,
        "g2": GoalState.CANCELLED,
    }
    assert rebuilt.should_continue is False


def swap(events: Events, index: int, kind: type[Any], **fields: Any) -> Events:
    old = events[index]
    forged = list(events)
    forged[index] = kind(
        originator_id=old.originator_id,
        originator_version=old.originator_version,
        timestamp=old.timestamp,
        **fields,
    )
    return forged


@pytest.mark.parametrize(
    ("forge", "rule", "position"),
    [
        pytest.param(
            lambda ev: swap(ev, 3, Session.GoalCompleted, goal_id="g1"),
            "illegal_goal_transition",
            4,
            id="complete-a-blocked-goal",
        ),
        pytest.param(
            lambda ev: swap(ev, 2, Session.GoalResumed, goal_id="g1"),
            "illegal_goal_transition",
            3,
            id="resume-an-active-goal",
        ),
        pytest.param(
            lambda ev: swap(ev, 2, Session.GoalBlocked, goal_id="ghost"),
            "illegal_goal_transition",
            3,
            id="unknown-goal",
        ),
        pytest.param(
            lambda ev: swap(ev, 5, Session.GoalStarted, goal_id="g1", objective="again"),
            "goal_restarted",
            6,
            id="goal-started-twice",
        ),
    ],
)
def test_forged_session_history_is_refused(
    forge: Callable[[Events], Events], rule: str, position: int
) -> None:
    _, events = session_history()
    with pytest.raises(CorruptHistory) as caught:
        replay_session(forge(events))
    assert (caught.value.session_id, caught.value.position, caught.value.rule) == (
        SESSION,
        position,
        rule,
    )


# -- issue 8: policy fixed by the first commit; blocked goals may be cancelled -------------


def test_replay_fixes_the_policy_at_the_first_commit() -> None:
    plan = Plan.create(plan_aggregate_id(SESSION), SESSION)
    assert propose(plan, "p1", {"title": " ", "steps": [st("a", "in_progress")]}) == "rejected"
    assert propose(plan, "p2", {"plan": [{"step": "A", "status": "in_progress"}]}) == "committed"
    assert propose(plan, "p3", {"title": "T", "steps": [st("a", "in_progress")]}) == "rejected"
    events = list(plan.collect_events())
    rebuilt = replay(events)
    assert rebuilt == plan
    assert rebuilt.policy == "replace"
    assert replay(events[:3]).policy is None  # a rejected first proposal fixes nothing
    # A commit in the other form after the first commit is still corrupt.
    forged = edit(events, Plan.PlanProposed, "p3", form="codex")
    forged = edit(forged, Plan.PlanProposed, "p2", form="strict")
    with pytest.raises(CorruptHistory) as caught:
        replay(forged)
    assert caught.value.rule in {"blank_title", "invalid_step_id"}  # held to strict rules now


def test_a_commit_without_a_form_is_refused() -> None:
    plan = Plan.create(plan_aggregate_id(SESSION), SESSION)
    propose(plan, "p1", {"plan": [{"step": "A", "status": "in_progress"}]})
    events = edit(list(plan.collect_events()), Plan.PlanProposed, "p1", form=None)
    with pytest.raises(CorruptHistory) as caught:
        replay(events)
    assert (caught.value.position, caught.value.rule) == (3, "missing_form")


def test_a_blocked_goal_can_be_cancelled_and_that_replays() -> None:
    session = new_session()
    session.start_goal("g1", "Ship")
    session.move_goal("g1", "block")
    session.move_goal("g1", "cancel")
    events = list(session.collect_events())
    rebuilt = replay_session(events)
    assert rebuilt.goals["g1"].state == GoalState.CANCELLED
    assert rebuilt.should_continue is False
    forged = swap(events, 3, Session.GoalCancelled, goal_id="g1")  # cancel the cancelled goal
    forged = [*forged[:3], events[3], forged[3]]
    forged[-1] = dataclasses.replace(forged[-1], originator_version=5)
    with pytest.raises(CorruptHistory) as caught:
        replay_session(forged)
    assert (caught.value.position, caught.value.rule) == (5, "illegal_goal_transition")


def test_a_fresh_commit_is_judged_once_and_leaves_no_marker() -> None:
    """`decide` judges a commit and its own apply does not judge it again; nothing of that
    stays on the aggregate (a snapshot taken after it holds no marker), and replay judges."""
    plan, events = strict_history()
    assert "_judged" not in plan.__dict__
    assert "_judged" not in Plan.Snapshot.take(plan).state
    replayed = replay(events)
    assert (replayed.revision, replayed.snapshot) == (plan.revision, plan.snapshot)


def test_verify_reads_goal_starts_by_the_topic_the_store_records() -> None:
    assert get_topic(Session.GoalStarted) == GOAL_STARTED
