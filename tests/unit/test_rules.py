"""Table-driven tests of every violation code of both policies (SPEC "Two input forms").

Each case goes through the real path: `parse_proposal` -> `Plan.propose` -> `Plan.decide`, so
shape problems (forms) and content problems (rules) are reported together, as a caller sees them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as hyp

from domain import rules
from domain.errors import IllegalTransition, InvalidId
from domain.forms import derive_step_ids, detect_form, parse_proposal
from domain.ids import plan_aggregate_id, session_aggregate_id, validate_id
from domain.models import Form, PlanSnapshot, Policy, Step, Violation
from domain.plan import Plan
from domain.plan_state import Outcome, evaluate
from domain.session import Session
from domain.session_fields import Mode

GOALS = frozenset({"g1"})
ANY = object()  # "this attribute is not checked"


# -- helpers -------------------------------------------------------------------------------


def st(step_id: str, status: str = "pending", title: str | None = None) -> dict[str, Any]:
    """A strict-form step."""
    return {"id": step_id, "title": f"Do {step_id}" if title is None else title, "status": status}


def cx(text: str, status: str = "pending") -> dict[str, Any]:
    """A Codex-form step."""
    return {"step": text, "status": status}


def strict(*steps: dict[str, Any], title: str = "Ship the export", **extra: Any) -> dict[str, Any]:
    return {"title": title, "steps": list(steps), **extra}


def codex(*steps: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"plan": list(steps), **extra}


def V(code: str, step_id: Any = ANY, index: Any = ANY) -> tuple[str, Any, Any]:
    return (code, step_id, index)


def run(*payloads: Mapping[str, Any], goals: Collection[str] = GOALS) -> tuple[Plan, list[Outcome]]:
    """Propose and decide each payload in turn on a fresh plan."""
    plan = Plan.create(plan_aggregate_id("s1"), "s1")
    outcomes = []
    for n, payload in enumerate(payloads):
        plan.propose(f"p{n}", parse_proposal(payload), f"fingerprint-{n}", "unit")
        outcomes.append(plan.decide(goals))
    return plan, outcomes


def assert_violations(outcome: Outcome, expected: list[tuple[str, Any, Any]]) -> None:
    """Exactly the expected codes (with multiplicity), each located where the case says."""
    actual = list(outcome.violations)
    assert Counter(v.code for v in actual) == Counter(code for code, _, _ in expected), actual
    for violation in actual:
        assert violation.message.strip(), violation
    unmatched = list(actual)
    for code, step_id, index in expected:
        match = next(
            (
                v
                for v in unmatched
                if v.code == code
                and (step_id is ANY or v.step_id == step_id)
                and (index is ANY or v.index == index)
            ),
            None,
        )
        assert match is not None, f"no {code} with step_id={step_id!r} index={index!r}: {actual}"
        unmatched.remove(match)
    if expected:
        assert outcome.status == "rejected"
    else:
        assert outcome.status == "committed", actual


LONG_ID = "i" * 65
HUNDRED_PENDING = [st("s0", "in_progress")] + [st(f"s{n}") for n in range(1, 100)]


# -- one proposal on a fresh plan ----------------------------------------------------------

SINGLE_CASES = [
    # strict: valid inputs
    pytest.param(strict(st("a", "in_progress"), st("b")), [], id="strict-valid"),
    pytest.param(
        strict(st("a", "completed"), st("b", "completed")), [], id="strict-rule6-all-completed"
    ),
    pytest.param(
        strict(st("a", "completed"), st("b", "in_progress")),
        [],
        id="strict-in_progress-without-pending",
    ),
    pytest.param(strict(), [], id="strict-no-steps"),
    pytest.param(strict(st("a", "in_progress"), goal_id="g1"), [], id="strict-known-goal"),
    pytest.param(strict(st("a", "completed"), expected_revision=0), [], id="strict-rev0-fresh"),
    pytest.param(strict(st("a", "completed"), title="T" * 200), [], id="strict-title-200"),
    pytest.param(strict(st("a", "completed", title="x" * 500)), [], id="strict-step-title-500"),
    pytest.param(strict(st("i" * 64, "completed")), [], id="strict-id-64"),
    pytest.param(strict(st("A.b_c-9", "completed")), [], id="strict-id-all-allowed-chars"),
    pytest.param(strict(*HUNDRED_PENDING), [], id="strict-100-steps"),
    pytest.param(
        strict(st("a", "completed"), title="   " + "T" * 200 + "\t "),
        [],
        id="strict-title-trimmed-before-bound",
    ),
    # strict: one problem each
    pytest.param(strict(st("a", "in_progress"), title=""), [V("blank_title")], id="blank_title"),
    pytest.param(
        strict(st("a", "in_progress"), title=" \t "), [V("blank_title")], id="blank_title-spaces"
    ),
    pytest.param({"steps": [st("a", "in_progress")]}, [V("blank_title")], id="blank_title-missing"),
    pytest.param(
        strict(st("a", "in_progress"), st("")), [V("blank_step_id", index=1)], id="blank_step_id"
    ),
    pytest.param(
        strict(st("a", "in_progress"), st("   ")),
        [V("blank_step_id", index=1)],
        id="blank_step_id-spaces",
    ),
    pytest.param(
        strict(st("a", "in_progress"), {"title": "No id", "status": "pending"}),
        [V("blank_step_id", index=1)],
        id="blank_step_id-missing",
    ),
    pytest.param(
        strict(st("a", "in_progress"), st("b", title="  ")),
        [V("blank_step_title", step_id="b", index=1)],
        id="blank_step_title",
    ),
    pytest.param(
        strict(st("a", "in_progress"), {"id": "b", "status": "pending"}),
        [V("blank_step_title", step_id="b", index=1)],
        id="blank_step_title-missing",
    ),
    pytest.param(
        strict(st("a", "in_progress"), st("b"), st("a")),
        [V("duplicate_step_id", step_id="a", index=2)],
        id="duplicate_step_id",
    ),
    pytest.param(
        strict(st("a", "in_progress"), st(" a ")),
        [V("duplicate_step_id", step_id="a", index=1)],
        id="duplicate_step_id-after-trim",
    ),
    pytest.param(
        strict(st("a", "in_progress"), st("b", "in_progress"), st("c")),
        [V("multiple_in_progress")],
        id="multiple_in_progress",
    ),
    pytest.param(
        strict(st("a", "completed"), st("b"), st("c")),
        [V("no_step_in_progress")],
        id="no_step_in_progress",
    ),
    pytest.param(strict(st("a")), [V("no_step_in_progress")], id="no_step_in_progress-single"),
    pytest.param(
        strict(st("a", "completed"), st("b", "blocked")),
        [V("invalid_status", step_id="b", index=1)],
        id="strict-invalid_status-blocked",
    ),
    pytest.param(
        strict(st("a", "completed"), st("b", "cancelled")),
        [V("invalid_status", step_id="b", index=1)],
        id="strict-invalid_status-cancelled",
    ),
    pytest.param(
        strict(st("a", "completed"), st("b", "done")),
        [V("invalid_status", step_id="b", index=1)],
        id="strict-invalid_status-unknown-word",
    ),
    pytest.param(
        strict(st("a", "completed"), {"id": "b", "title": "B"}),
        [V("missing_field", step_id="b", index=1)],
        id="strict-missing-status",
    ),
    pytest.param(
        strict(st("a", "completed"), st("b", "  ")),
        [V("missing_field", step_id="b", index=1)],
        id="strict-blank-status",
    ),
    pytest.param(
        strict(st("a", "completed"), title="T" * 201), [V("too_long")], id="too_long-title-201"
    ),
    pytest.param(
        strict(st("a", "completed"), st("b", "completed", title="x" * 501)),
        [V("too_long", step_id="b", index=1)],
        id="too_long-step-title-501",
    ),
    pytest.param(
        strict(*HUNDRED_PENDING, st("s100")), [V("too_many_steps")], id="too_many_steps-101"
    ),
    pytest.param(
        strict(st("a", "in_progress"), st(LONG_ID)),
        [V("invalid_step_id", step_id=LONG_ID, index=1)],
        id="invalid_step_id-65-chars",
    ),
    pytest.param(
        strict(st("a", "in_progress"), st("has space")),
        [V("invalid_step_id", step_id="has space", index=1)],
        id="invalid_step_id-space",
    ),
    pytest.param(
        strict(st("a", "in_progress"), st("a/b")),
        [V("invalid_step_id", step_id="a/b", index=1)],
        id="invalid_step_id-slash",
    ),
    pytest.param(
        strict(st("a", "in_progress"), st("étape")),
        [V("invalid_step_id", step_id="étape", index=1)],
        id="invalid_step_id-non-ascii",
    ),
    pytest.param(
        strict(st("a", "in_progress"), goal_id="ghost"), [V("unknown_goal")], id="unknown_goal"
    ),
    pytest.param(
        strict(st("a", "in_progress"), mode="plan"),
        [V("mode_change_forbidden")],
        id="mode_change_forbidden-mode",
    ),
    pytest.param(
        strict(st("a", "in_progress"), collaboration_mode="work"),
        [V("mode_change_forbidden")],
        id="mode_change_forbidden-collaboration_mode",
    ),
    pytest.param(
        strict(st("a", "in_progress"), notes="research notes"),
        [V("unknown_field")],
        id="unknown_field-top",
    ),
    pytest.param(
        strict(st("a", "in_progress"), explanation="codex-only field"),
        [V("unknown_field")],
        id="unknown_field-codex-field-in-strict",
    ),
    pytest.param(
        strict(st("a", "in_progress"), {**st("b"), "owner": "me"}),
        [V("unknown_field", index=1)],
        id="unknown_field-in-step",
    ),
    pytest.param(
        strict(st("a", "in_progress"), {"id": "b", "step": "B", "status": "pending"}),
        [V("unknown_field", index=1), V("blank_step_title", step_id="b", index=1)],
        id="unknown_field-codex-step-key-in-strict",
    ),
    pytest.param(
        strict(st("a", "in_progress"), expected_revision=3),
        [V("revision_conflict")],
        id="strict-revision_conflict-fresh",
    ),
    # codex: valid inputs
    pytest.param(
        codex(cx("Locate the failure", "completed"), cx("Fix it", "in_progress")),
        [],
        id="codex-valid",
    ),
    pytest.param(
        codex(cx("Locate", "pending"), cx("Fix", "pending")),
        [],
        id="codex-pending-without-in_progress",
    ),
    pytest.param(codex(cx("Old idea", "cancelled"), cx("Fix")), [], id="codex-cancelled-ok"),
    pytest.param(codex(), [], id="codex-empty-list"),
    pytest.param(codex(cx("Same"), cx("Same")), [], id="codex-duplicate-text-ok"),
    pytest.param(codex(cx("x" * 500)), [], id="codex-step-500"),
    pytest.param(codex(*[cx(f"Step {n}") for n in range(100)]), [], id="codex-100-steps"),
    pytest.param(
        codex(cx("Fix"), explanation="why", goal_id="g1", expected_revision=0),
        [],
        id="codex-all-optional-fields",
    ),
    # codex: one problem each
    pytest.param(
        codex(cx("A", "in_progress"), cx("B", "in_progress")),
        [V("multiple_in_progress")],
        id="codex-multiple_in_progress",
    ),
    # a blank Codex step has no id of its own: it is named by its position only
    pytest.param(
        codex(cx("A"), cx("   ")),
        [V("blank_step_title", step_id=None, index=1)],
        id="codex-blank-step-text",
    ),
    pytest.param(
        codex(cx("A"), {"status": "pending"}),
        [V("blank_step_title", step_id=None, index=1)],
        id="codex-missing-step-text",
    ),
    pytest.param(
        codex(cx("A"), {"step": " ", "status": "done"}),
        [V("blank_step_title", step_id=None, index=1), V("invalid_status", step_id=None, index=1)],
        id="codex-blank-step-bad-status",
    ),
    pytest.param(
        codex(cx("A"), cx("B", "blocked")),
        [],
        id="codex-blocked-an-agents-own-status",
    ),
    pytest.param(
        codex(cx("A"), cx("B", "done")),
        [V("invalid_status", index=1)],
        id="codex-invalid_status-unknown-word",
    ),
    pytest.param(
        codex(cx("A"), {"step": "B"}),
        [V("missing_field", step_id="b", index=1)],
        id="codex-missing-status",
    ),
    pytest.param(
        codex(cx("A"), {"step": "B", "status": None}),
        [V("missing_field", step_id="b", index=1)],
        id="codex-null-status",
    ),
    pytest.param(
        codex(cx("A"), cx("x" * 501)), [V("too_long", index=1)], id="codex-too_long-step-501"
    ),
    pytest.param(
        codex(*[cx(f"Step {n}") for n in range(101)]),
        [V("too_many_steps")],
        id="codex-too_many_steps-101",
    ),
    pytest.param(codex(cx("A"), goal_id="ghost"), [V("unknown_goal")], id="codex-unknown_goal"),
    pytest.param(
        codex(cx("A"), mode="plan"), [V("mode_change_forbidden")], id="codex-mode_change-mode"
    ),
    pytest.param(
        codex(cx("A"), collaboration_mode="plan"),
        [V("mode_change_forbidden")],
        id="codex-mode_change-collaboration_mode",
    ),
    pytest.param(codex(cx("A"), notes="x"), [V("unknown_field")], id="codex-unknown_field-top"),
    pytest.param(
        codex(cx("A"), {"step": "B", "status": "pending", "id": "b"}),
        [V("unknown_field", index=1)],
        id="codex-unknown_field-in-step",
    ),
    pytest.param(
        codex(cx("A"), expected_revision=2),
        [V("revision_conflict")],
        id="codex-revision_conflict-fresh",
    ),
    # shape problems that are not spec codes but must still be reported
    pytest.param(
        {"title": "T", "steps": [], "plan": []}, [V("ambiguous_form")], id="ambiguous_form"
    ),
    pytest.param({"explanation": "nothing else"}, [V("missing_field")], id="no-plan-at-all"),
    pytest.param({"title": "T"}, [V("missing_field")], id="strict-missing-steps"),
    pytest.param(
        strict(st("a", "in_progress"), expected_revision=-1),
        [V("invalid_field")],
        id="negative-expected_revision",
    ),
    pytest.param(
        strict(st("a", "in_progress"), expected_revision=True),
        [V("invalid_field")],
        id="bool-expected_revision",
    ),
    pytest.param(
        codex({"step": 3, "status": "pending"}),
        [V("invalid_field", index=0)],
        id="codex-non-string-step",
    ),
    pytest.param(codex("not an object"), [V("invalid_field", index=0)], id="codex-non-object"),
    pytest.param({"plan": "a, b"}, [V("invalid_field")], id="codex-plan-not-a-list"),
]


@pytest.mark.parametrize(("payload", "expected"), SINGLE_CASES)
def test_single_proposal(payload: dict[str, Any], expected: list[tuple[str, Any, Any]]) -> None:
    plan, [outcome] = run(payload)
    assert_violations(outcome, expected)
    assert plan.revision == (0 if expected else 1)
    assert outcome.revision == plan.revision
    if expected:
        assert plan.snapshot is None
        assert plan.last_rejection is not None
        assert plan.last_rejection[0] == "p0"


# -- several proposals: cross-revision rules and policy fixing -----------------------------

BASE = strict(st("a", "in_progress"), st("b"), st("c"))
BASE_DONE_A = strict(st("a", "completed"), st("b", "in_progress"), st("c"))

SEQUENCE_CASES = [
    pytest.param(
        [BASE, strict(st("a", "in_progress"), st("b"))],
        [V("step_removed", step_id="c")],
        1,
        id="step_removed",
    ),
    pytest.param(
        [BASE, strict(st("a", "in_progress"))],
        [V("step_removed", step_id="b"), V("step_removed", step_id="c")],
        1,
        id="step_removed-two",
    ),
    pytest.param(
        [
            strict(st("a", "in_progress")),
            strict(st("a", "in_progress"), st("b")),
            strict(st("b", "in_progress")),
        ],
        [V("step_removed", step_id="a")],
        2,
        id="step_removed-id-from-older-revision",
    ),
    pytest.param(
        [BASE, strict(st("x", "in_progress"), st("b"), st("c"))],
        [V("step_removed", step_id="a")],
        1,
        id="step_removed-renamed-id",
    ),
    pytest.param(
        [BASE, strict(st("c", title="Renamed"), st("a", "in_progress"), st("b"), st("d"))],
        [],
        2,
        id="strict-retitle-reorder-add-ok",
    ),
    pytest.param(
        [
            BASE,
            strict(st("a", "in_progress"), st("b"), st("c"), st("bad", "nope")),
            strict(st("a", "in_progress"), st("b"), st("c")),
        ],
        [],
        2,
        id="rejected-ids-are-not-accepted-ids",
    ),
    pytest.param(
        [BASE_DONE_A, strict(st("a", "in_progress"), st("b"), st("c"))],
        [V("completed_step_reopened", step_id="a", index=0)],
        1,
        id="completed_step_reopened-in_progress",
    ),
    pytest.param(
        [BASE_DONE_A, strict(st("b", "in_progress"), st("c"), st("a"))],
        [V("completed_step_reopened", step_id="a", index=2)],
        1,
        id="completed_step_reopened-pending",
    ),
    pytest.param(
        [BASE_DONE_A, strict(st("a", "completed"), st("b", "completed"), st("c", "in_progress"))],
        [],
        2,
        id="strict-completion-monotonic-ok",
    ),
    pytest.param(
        [BASE_DONE_A, strict(st("a", "completed"), st("b", "completed"), st("c", "completed"))],
        [],
        2,
        id="strict-rule6-finish-with-zero-in_progress",
    ),
    pytest.param(
        [BASE, {**BASE_DONE_A, "expected_revision": 0}],
        [V("revision_conflict")],
        1,
        id="revision_conflict-stale",
    ),
    pytest.param(
        [BASE, {**BASE_DONE_A, "expected_revision": 2}],
        [V("revision_conflict")],
        1,
        id="revision_conflict-future",
    ),
    pytest.param([BASE, {**BASE_DONE_A, "expected_revision": 1}], [], 2, id="revision-current-ok"),
    pytest.param(
        [BASE, {**BASE, "title": ""}, {**BASE_DONE_A, "expected_revision": 1}],
        [],
        2,
        id="rejection-leaves-revision-unchanged",
    ),
    # replace policy: no cross-revision rules
    pytest.param(
        [codex(cx("A", "in_progress"), cx("B")), codex(cx("C", "in_progress"))],
        [],
        2,
        id="replace-step-dropped-ok",
    ),
    pytest.param(
        [codex(cx("A", "completed"), cx("B", "in_progress")), codex(cx("A", "in_progress"))],
        [],
        2,
        id="replace-completed-may-reopen",
    ),
    pytest.param([codex(cx("A", "in_progress")), codex()], [], 2, id="replace-empty-list-clears"),
    pytest.param(
        [codex(cx("A")), codex(cx("A"), expected_revision=0)],
        [V("revision_conflict")],
        1,
        id="replace-revision_conflict",
    ),
    # policy is fixed by the first committed proposal
    pytest.param(
        [BASE, codex(cx("A", "in_progress"))],
        [V("policy_mismatch")],
        1,
        id="policy_mismatch-strict-then-codex",
    ),
    pytest.param(
        [codex(cx("A", "in_progress")), BASE],
        [V("policy_mismatch")],
        1,
        id="policy_mismatch-codex-then-strict",
    ),
    pytest.param(
        [{**BASE, "title": ""}, codex(cx("A", "in_progress"))],
        [],
        1,
        id="policy-rejected-first-proposal-fixes-nothing",
    ),
    pytest.param(
        [{**BASE, "title": ""}, codex(cx("A", "in_progress")), BASE],
        [V("policy_mismatch")],
        1,
        id="policy-fixed-by-first-commit-after-a-rejection",
    ),
    pytest.param(
        [codex(cx("A", "in_progress")), {**BASE, "expected_revision": 0, "mode": "plan"}],
        [V("policy_mismatch"), V("revision_conflict"), V("mode_change_forbidden")],
        1,
        id="policy_mismatch-reported-with-others",
    ),
]


@pytest.mark.parametrize(("payloads", "expected", "revision"), SEQUENCE_CASES)
def test_proposal_sequence(
    payloads: list[dict[str, Any]], expected: list[tuple[str, Any, Any]], revision: int
) -> None:
    plan, outcomes = run(*payloads)
    assert_violations(outcomes[-1], expected)
    assert plan.revision == revision
    assert outcomes[-1].revision == revision


def test_rejection_keeps_previous_snapshot() -> None:
    plan, outcomes = run(BASE, strict(st("a", "in_progress")))
    assert [o.status for o in outcomes] == ["committed", "rejected"]
    assert plan.revision == 1
    assert plan.snapshot is not None
    assert [s.id for s in plan.snapshot.steps] == ["a", "b", "c"]
    assert plan.accepted_ids == ["a", "b", "c"]


def test_replace_empty_list_commits_an_empty_plan() -> None:
    plan, outcomes = run(codex(cx("A", "in_progress")), codex(explanation="all done"))
    assert outcomes[-1].status == "committed"
    assert plan.revision == 2
    assert plan.snapshot == PlanSnapshot(title=None, goal_id=None, steps=())
    assert not plan.snapshot.steps


def test_unknown_goal_checked_against_the_sessions_goals() -> None:
    _, [outcome] = run(strict(st("a", "in_progress"), goal_id="g2"), goals={"g2"})
    assert outcome.status == "committed"
    _, [outcome] = run(strict(st("a", "in_progress"), goal_id="g1"), goals=set())
    assert [v.code for v in outcome.violations] == ["unknown_goal"]


# -- every violation at once ---------------------------------------------------------------


def test_strict_reports_every_violation_at_once() -> None:
    payload = {
        "title": "   ",
        "goal_id": "ghost",
        "expected_revision": 4,
        "mode": "plan",
        "notes": "x",
        "steps": [
            st("a", "in_progress"),
            st("a", "in_progress"),
            st("", "pending"),
            st("b", "blocked", title=" "),
            st("c", "pending", title="y" * 501),
            st("bad id", "cancelled"),
            {**st("d"), "owner": "me"},
        ],
    }
    _, [outcome] = run(payload)
    assert_violations(
        outcome,
        [
            V("blank_title"),
            V("unknown_goal"),
            V("revision_conflict"),
            V("mode_change_forbidden"),
            V("unknown_field"),
            V("unknown_field", index=6),
            V("duplicate_step_id", step_id="a", index=1),
            V("blank_step_id", index=2),
            V("blank_step_title", step_id="b", index=3),
            V("invalid_status", step_id="b", index=3),
            V("too_long", step_id="c", index=4),
            V("invalid_step_id", step_id="bad id", index=5),
            V("invalid_status", step_id="bad id", index=5),
            V("multiple_in_progress"),
        ],
    )


def test_strict_reports_cross_revision_violations_with_the_others() -> None:
    second = {
        "title": "T" * 201,
        "expected_revision": 0,
        "steps": [st("a", "pending"), st("b", "completed", title=""), st("d")],
    }
    _, outcomes = run(BASE_DONE_A, second)
    assert_violations(
        outcomes[-1],
        [
            V("too_long"),
            V("revision_conflict"),
            V("step_removed", step_id="c"),
            V("completed_step_reopened", step_id="a", index=0),
            V("blank_step_title", step_id="b", index=1),
            V("no_step_in_progress"),
        ],
    )


def test_codex_reports_every_violation_at_once() -> None:
    payload = codex(
        cx("A", "in_progress"),
        cx("B", "in_progress"),
        cx("  "),
        cx("C", "stuck"),
        cx("z" * 501),
        {"step": "D", "status": "pending", "priority": "high"},
        goal_id="ghost",
        expected_revision=1,
        collaboration_mode="plan",
        title_hint="x",
    )
    _, [outcome] = run(payload)
    assert_violations(
        outcome,
        [
            V("multiple_in_progress"),
            V("blank_step_title", index=2),
            V("invalid_status", index=3),
            V("too_long", index=4),
            V("unknown_field", index=5),
            V("unknown_goal"),
            V("revision_conflict"),
            V("mode_change_forbidden"),
            V("unknown_field"),
        ],
    )


# -- the Codex form: derived ids, trimming, clearing ---------------------------------------


@pytest.mark.parametrize(
    ("texts", "ids"),
    [
        pytest.param(["Locate the failure"], ["locate-the-failure"], id="slug"),
        pytest.param(
            ["Fix it", "fix it!", "FIX  IT"],
            ["fix-it", "fix-it-2", "fix-it-3"],
            id="duplicates-suffixed",
        ),
        pytest.param(["", "!!!"], ["step", "step-2"], id="empty-slug"),
        pytest.param(["a", "a", "a-2"], ["a", "a-2", "a-2-2"], id="suffix-collision"),
        pytest.param(["a-2", "a", "a"], ["a-2", "a", "a-3"], id="suffix-taken-earlier"),
        pytest.param([], [], id="no-steps"),
    ],
)
def test_derive_step_ids(texts: list[str], ids: list[str]) -> None:
    assert derive_step_ids(texts) == ids
    assert derive_step_ids(list(texts)) == ids  # deterministic


@pytest.mark.parametrize(
    "texts",
    [
        pytest.param(["x" * 600] * 3, id="long-repeated"),
        pytest.param(["Überprüfen der Daten", "日本語", "a/b\\c"], id="non-ascii"),
        pytest.param([f"Same step {n % 3}" for n in range(100)], id="many-duplicates"),
        pytest.param(["-" * 70 + "x"], id="dashes"),
    ],
)
def test_derived_ids_are_valid_step_ids(texts: list[str]) -> None:
    ids = derive_step_ids(texts)
    assert len(ids) == len(texts)
    assert len(set(ids)) == len(ids)
    for step_id in ids:
        assert 1 <= len(step_id) <= 64
        assert rules.STEP_ID_PATTERN.match(step_id)
        assert "\n" not in step_id


def test_codex_candidate_is_trimmed_with_derived_ids() -> None:
    parsed = parse_proposal(
        codex(
            cx("  Locate the failure \n", " completed "),
            cx("\tFix it", "in_progress"),
            cx("fix it", "pending"),
            explanation="  because  ",
        )
    )
    assert parsed.form is Form.CODEX
    assert parsed.violations == ()
    assert parsed.explanation == "because"
    assert parsed.candidate == PlanSnapshot(
        title=None,
        steps=(
            Step(id="locate-the-failure", title="Locate the failure", status="completed"),
            Step(id="fix-it", title="Fix it", status="in_progress"),
            Step(id="fix-it-2", title="fix it", status="pending"),
        ),
    )


def test_codex_ids_are_stable_across_revisions() -> None:
    plan, outcomes = run(
        codex(cx("Locate", "in_progress"), cx("Fix")),
        codex(cx("Locate", "completed"), cx("Fix", "in_progress")),
    )
    assert [o.status for o in outcomes] == ["committed", "committed"]
    assert plan.snapshot is not None
    assert [s.id for s in plan.snapshot.steps] == ["locate", "fix"]
    assert plan.accepted_ids == []  # the replace policy does not pin ids


def test_strict_candidate_is_trimmed() -> None:
    parsed = parse_proposal(strict(st(" a ", " in_progress ", title="  Do a  "), title="  T  "))
    assert parsed.form is Form.STRICT
    assert parsed.candidate == PlanSnapshot(
        title="T", steps=(Step(id="a", title="Do a", status="in_progress"),)
    )


@pytest.mark.parametrize(
    ("payload", "form"),
    [
        pytest.param({"plan": []}, Form.CODEX, id="plan"),
        pytest.param({"steps": []}, Form.STRICT, id="steps"),
        pytest.param({"title": "T"}, Form.STRICT, id="title"),
        pytest.param({"title": "T", "plan": []}, None, id="both"),
        pytest.param({"explanation": "x"}, None, id="neither"),
    ],
)
def test_detect_form(payload: dict[str, Any], form: Form | None) -> None:
    assert detect_form(payload) is form


# -- the rule functions on their own -------------------------------------------------------


def snap(*steps: tuple[str, str], title: str | None = "T") -> PlanSnapshot:
    return PlanSnapshot(title=title, steps=tuple(Step(id=i, title=i, status=s) for i, s in steps))


@pytest.mark.parametrize(
    ("policy", "snapshot", "codes"),
    [
        pytest.param(Policy.STRICT, snap(("a", "completed")), [], id="strict-ok"),
        pytest.param(Policy.REPLACE, snap(("a", "pending"), title=None), [], id="replace-ok"),
        pytest.param(
            Policy.STRICT, snap(("a", "pending")), ["no_step_in_progress"], id="strict-pending"
        ),
        pytest.param(Policy.STRICT, snap(title=None), ["blank_title"], id="strict-none-title"),
        pytest.param(Policy.REPLACE, snap(("a", "cancelled")), [], id="replace-cancelled"),
        pytest.param(Policy.REPLACE, snap(("a", "blocked")), [], id="replace-blocked"),
        pytest.param(
            Policy.STRICT, snap(("a", "cancelled")), ["invalid_status"], id="strict-cancelled"
        ),
        pytest.param(
            Policy.REPLACE, snap(("a", "stuck")), ["invalid_status"], id="replace-unknown-status"
        ),
        pytest.param(
            Policy.REPLACE,
            snap(("a", "in_progress"), ("b", "in_progress")),
            ["multiple_in_progress"],
            id="replace-two-active",
        ),
        pytest.param(
            Policy.STRICT,
            snap(("a", "completed"), ("a", "completed")),
            ["duplicate_step_id"],
            id="strict-dup",
        ),
        pytest.param(
            Policy.STRICT,
            snap(("a\n", "completed")),
            ["invalid_step_id"],
            id="strict-id-trailing-newline",
        ),
    ],
)
def test_check_snapshot(policy: Policy, snapshot: PlanSnapshot, codes: list[str]) -> None:
    assert [v.code for v in rules.check_snapshot(policy, snapshot)] == codes


def test_check_transition_replace_policy_has_no_cross_revision_rules() -> None:
    previous = snap(("a", "completed"), ("b", "in_progress"))
    assert (
        rules.check_transition(Policy.REPLACE, previous, ["a", "b"], snap(("a", "pending"))) == []
    )
    assert rules.check_transition(Policy.REPLACE, previous, ["a", "b"], snap()) == []


def test_check_transition_strict() -> None:
    previous = snap(("a", "completed"), ("b", "in_progress"))
    found = rules.check_transition(Policy.STRICT, previous, ["a", "b"], snap(("a", "pending")))
    assert [(v.code, v.step_id) for v in found] == [
        ("step_removed", "b"),
        ("completed_step_reopened", "a"),
    ]
    assert rules.check_transition(Policy.STRICT, None, [], snap(("a", "pending"))) == []


@pytest.mark.parametrize(
    ("expected", "current", "codes"),
    [
        pytest.param(None, 5, [], id="none"),
        pytest.param(5, 5, [], id="equal"),
        pytest.param(4, 5, ["revision_conflict"], id="stale"),
        pytest.param(6, 5, ["revision_conflict"], id="ahead"),
    ],
)
def test_check_revision(expected: int | None, current: int, codes: list[str]) -> None:
    assert [v.code for v in rules.check_revision(expected, current)] == codes


@pytest.mark.parametrize(
    ("goal_id", "goals", "codes"),
    [
        pytest.param(None, set(), [], id="no-goal"),
        pytest.param("g1", {"g1"}, [], id="known"),
        pytest.param("g2", {"g1"}, ["unknown_goal"], id="unknown"),
    ],
)
def test_check_goal(goal_id: str | None, goals: set[str], codes: list[str]) -> None:
    assert [v.code for v in rules.check_goal(goal_id, goals)] == codes


def test_step_transitions() -> None:
    before = snap(("a", "in_progress"), ("b", "pending"), ("c", "pending"))
    after = snap(("a", "completed"), ("b", "pending"), ("d", "pending"))
    assert rules.step_transitions(before, after) == [
        ("a", "in_progress", "completed"),
        ("d", None, "pending"),
        ("c", "pending", None),
    ]
    assert rules.step_transitions(None, snap(("a", "pending"))) == [("a", None, "pending")]


@pytest.mark.parametrize(
    ("after", "expected"),
    [
        pytest.param((("a", "completed"), ("b", "pending")), [], id="unchanged"),
        pytest.param(
            (("a", "completed"), ("b", "in_progress")),
            [("b", "pending", "in_progress")],
            id="same-order",
        ),
        pytest.param(
            (("b", "in_progress"), ("a", "completed")),
            [("b", "pending", "in_progress")],
            id="reordered",
        ),
        pytest.param(
            (("a", "completed"), ("c", "pending")),
            [("c", None, "pending"), ("b", "pending", None)],
            id="replaced",
        ),
    ],
)
def test_step_transitions_of_plans_of_one_length(
    after: tuple[tuple[str, str], ...], expected: list[tuple[str, str | None, str | None]]
) -> None:
    before = snap(("a", "completed"), ("b", "pending"))
    assert rules.step_transitions(before, snap(*after)) == expected
    assert rules.step_transitions(before, before) == []  # one object: a plan sent again


def test_violation_json_drops_absent_location() -> None:
    assert Violation(code="x", message="m").model_dump(mode="json") == {
        "code": "x",
        "message": "m",
    }
    assert Violation(code="x", message="m", step_id="a", index=0).model_dump(mode="json") == {
        "code": "x",
        "message": "m",
        "step_id": "a",
        "index": 0,
    }


# -- identifiers ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        pytest.param("s1", id="short"),
        pytest.param("a" * 128, id="128-chars"),
        pytest.param("_x.y-Z9", id="all-classes"),
    ],
)
def test_validate_id_accepts(value: str) -> None:
    assert validate_id(value) == value


@pytest.mark.parametrize(
    "value",
    [
        pytest.param("", id="empty"),
        pytest.param(".hidden", id="leading-dot"),
        pytest.param("a" * 129, id="129-chars"),
        pytest.param("a b", id="space"),
        pytest.param("a/b", id="slash"),
        pytest.param("é", id="non-ascii"),
        pytest.param("abc\n", id="trailing-newline"),
        pytest.param("a" * 128 + "\n", id="128-chars-plus-newline"),
    ],
)
def test_validate_id_rejects(value: str) -> None:
    with pytest.raises(InvalidId):
        validate_id(value)


def test_aggregate_ids_name_the_session() -> None:
    assert plan_aggregate_id("s1") == "plan:s1"
    assert session_aggregate_id("s1") == "session:s1"


@pytest.mark.parametrize(
    ("proposal_id", "codes"),
    [
        pytest.param("retry-1", [], id="ok"),
        pytest.param(".x", ["invalid_field"], id="leading-dot"),
        pytest.param("a b", ["invalid_field"], id="space"),
        pytest.param(7, ["invalid_field"], id="not-a-string"),
        pytest.param("p1\n", ["invalid_field"], id="trailing-newline"),
    ],
)
def test_proposal_id_shape(proposal_id: object, codes: list[str]) -> None:
    parsed = parse_proposal(codex(cx("A"), proposal_id=proposal_id))
    assert [v.code for v in parsed.violations] == codes
    assert parsed.proposal_id == (proposal_id if not codes else None)


@pytest.mark.parametrize(
    "payload",
    [{"plan": None}, {"title": "T", "steps": None}, {"plan": "x"}],
    ids=["codex-null", "strict-null", "codex-string"],
)
def test_null_or_non_list_steps_are_invalid(payload: dict[str, Any]) -> None:
    assert "invalid_field" in [v.code for v in parse_proposal(payload).violations]


def test_replace_snapshot_ids_must_be_derived_from_text() -> None:
    forged = PlanSnapshot(title=None, steps=(Step(id="other", title="Fix it", status="pending"),))
    (violation,) = rules.check_snapshot(Policy.REPLACE, forged)
    assert (violation.code, violation.step_id, violation.index) == ("invalid_step_id", "other", 0)


def test_unknown_goal_move_is_an_illegal_transition() -> None:
    session = Session.open("session:s", "s", Mode.WORK)
    session.start_goal("g", "objective")
    with pytest.raises(IllegalTransition):
        session.move_goal("g", "explode")


@pytest.mark.parametrize(
    "payload",
    [
        {"title": "a\x00b", "steps": []},
        {"plan": [{"step": "fix \ud800 it", "status": "in_progress"}]},
        {"title": "T", "steps": [{"id": "a", "title": "x", "status": "in_progress\x00"}]},
        {"plan": [], "explanation": "\udfff"},
        {"plan": [], "we\x00ird": 1},
    ],
    ids=["nul-title", "surrogate-step", "nul-status", "surrogate-explanation", "nul-key"],
)
def test_unstorable_text_is_rejected_and_the_candidate_made_storable(
    payload: dict[str, Any],
) -> None:
    parsed = parse_proposal(payload)
    assert "invalid_text" in [v.code for v in parsed.violations]
    stored = parsed.model_dump_json()  # what the event store will hold: encodable, no NUL
    assert "\\u0000" not in stored
    stored.encode("utf-8")
    plan = Plan.create(plan_aggregate_id("s"), "s")
    plan.propose("p1", parsed, "fp", None)
    assert plan.decide(set()).status == "rejected"


# -- messages name steps as people count them (issue 8) ------------------------------------


@pytest.mark.parametrize(
    ("payload", "code"),
    [
        pytest.param(strict(st("a", "in_progress"), st("b"), st("")), "blank_step_id", id="id"),
        pytest.param(
            strict(st("a", "in_progress"), st("b"), st("c", title=" ")), "blank_step_title", id="t"
        ),
        pytest.param(
            strict(st("a", "in_progress"), st("b"), st("c", title="x" * 501)), "too_long", id="len"
        ),
        pytest.param(
            strict(st("a", "in_progress"), st("b"), st("c", "done")), "invalid_status", id="status"
        ),
        pytest.param(
            strict(st("a", "in_progress"), st("b"), {"id": "c", "title": "C"}),
            "missing_field",
            id="no-status",
        ),
        pytest.param(
            strict(st("a", "in_progress"), st("b"), st("c d")), "invalid_step_id", id="bad-id"
        ),
        pytest.param(
            strict(st("a", "in_progress"), st("b"), st("b")), "duplicate_step_id", id="dup-id"
        ),
        pytest.param(codex(cx("A"), cx("B"), {"step": 7, "status": "pending"}), "invalid_field"),
        pytest.param(codex(cx("A"), cx("B"), "text"), "invalid_field", id="not-an-object"),
        pytest.param(
            codex(cx("A"), cx("B"), {"step": "C", "status": "pending", "x": 1}), "unknown_field"
        ),
    ],
)
def test_messages_number_steps_from_one(payload: dict[str, Any], code: str) -> None:
    _, [outcome] = run(payload)
    [violation] = [v for v in outcome.violations if v.code == code]
    assert violation.index == 2  # the data keeps the 0-based index of the spec's shape
    assert "Step 3 (index 2)" in violation.message
    assert "Step 2" not in violation.message


def test_a_blank_codex_step_is_named_by_its_position() -> None:
    _, [outcome] = run(codex(cx("A"), cx("   "), cx("step")))
    [violation] = outcome.violations
    assert (violation.code, violation.step_id, violation.index) == ("blank_step_title", None, 1)
    assert "Step 2 (index 1)" in violation.message
    assert "'step" not in violation.message


def test_a_missing_status_is_a_missing_field_not_an_empty_status() -> None:
    _, [outcome] = run(codex(cx("A"), {"step": "B"}))
    [violation] = outcome.violations
    assert violation.code == "missing_field"
    assert "`status`" in violation.message and "''" not in violation.message


# -- goal_id: omitted keeps the goal, null unlinks it --------------------------------------


@pytest.mark.parametrize("make", [strict, codex], ids=["strict", "codex"])
def test_an_omitted_goal_id_keeps_the_goal_and_null_unlinks_it(make: Any) -> None:
    step = st("a", "in_progress") if make is strict else cx("A", "in_progress")
    plan, outcomes = run(
        make(step, goal_id="g1"),
        make(step),  # omitted: keeps g1
        make(step, goal_id=None),  # explicit null: unlinks
        make(step),  # omitted again: stays unlinked
    )
    assert [o.status for o in outcomes] == ["committed"] * 4
    goals = [e.snapshot.goal_id for e in plan.collect_events() if isinstance(e, Plan.PlanCommitted)]
    assert goals == ["g1", "g1", None, None]


def test_a_kept_goal_is_recorded_in_the_candidate_and_replays() -> None:
    plan, _ = run(strict(st("a", "in_progress"), goal_id="g1"))
    plan.propose("p9", parse_proposal(strict(st("a", "completed"))), "fp-9", "unit")
    assert plan.pending is not None and plan.pending.candidate is not None
    assert plan.pending.candidate.goal_id == "g1"  # decided later (two stages): still g1
    kept = evaluate(plan, plan.pending, session_goals=set())
    assert [v.code for v in kept] == ["unknown_goal"]  # a kept goal is checked like a sent one
    assert plan.decide(GOALS).status == "committed"
    rebuilt = None
    for event in plan.collect_events():
        rebuilt = event.mutate(rebuilt)
    assert rebuilt == plan


def test_an_omitted_goal_id_on_the_first_proposal_means_no_goal() -> None:
    plan, [outcome] = run(strict(st("a", "in_progress")))
    assert outcome.status == "committed"
    assert plan.snapshot is not None and plan.snapshot.goal_id is None


# -- the policy is fixed by the first committed proposal -----------------------------------


def test_no_policy_until_the_first_commit() -> None:
    plan, outcomes = run({**BASE, "title": ""})
    assert outcomes[0].status == "rejected"
    assert plan.policy is None
    plan, _ = run({**BASE, "title": ""}, codex(cx("A", "in_progress")))
    assert plan.policy is Policy.REPLACE


def test_an_undecided_or_superseded_first_proposal_fixes_nothing() -> None:
    plan = Plan.create(plan_aggregate_id("s1"), "s1")
    plan.propose("p1", parse_proposal(codex(cx("A", "in_progress"))), "fp-1", "unit")
    assert plan.policy is None  # recorded, not decided
    plan.propose("p2", parse_proposal(BASE), "fp-2", "unit")  # supersedes p1
    assert plan.decide(GOALS).status == "committed"
    assert plan.outcomes["p1"].status == "rejected"
    assert plan.policy is Policy.STRICT


# -- a plan moved along: only its statuses checked --------------------------------------------

STATUS_CHOICES = ["pending", "in_progress", "completed", "cancelled", "", "blocked", "x" * 50]


@given(
    policy=hyp.sampled_from([Policy.STRICT, Policy.REPLACE, Policy.TASKS]),
    texts=hyp.lists(
        hyp.sampled_from(["Fix it", "fix it", "Run tests", "Ship", "Ship!"]), max_size=6
    ),
    statuses=hyp.lists(hyp.sampled_from(STATUS_CHOICES), min_size=6, max_size=6),
    blockers=hyp.lists(hyp.integers(min_value=1, max_value=5), min_size=6, max_size=6),
)
def test_a_plan_with_the_texts_of_one_that_passed_is_judged_by_its_statuses_alike(
    policy: Policy, texts: list[str], statuses: list[str], blockers: list[int]
) -> None:
    """check_snapshot given the committed plan checks only the statuses of a plan with its
    title and steps' ids and titles (and tasks' blockers): the same violations, in the same
    order, as every rule."""
    ids = (
        derive_step_ids(texts) if policy is Policy.REPLACE else [f"s{n}" for n in range(len(texts))]
    )
    passed = PlanSnapshot(
        title="Ship it",
        steps=tuple(
            Step(
                id=i,
                title=t,
                status="completed",
                # a task may wait on one before it (no cycle)
                blocked_by=(ids[n - b],) if policy is Policy.TASKS and n >= b else (),
            )
            for n, (i, t, b) in enumerate(zip(ids, texts, blockers[: len(ids)], strict=True))
        ),
    )
    assert rules.check_snapshot(policy, passed) == []
    moved = passed.model_copy(
        update={
            "steps": tuple(
                s.model_copy(update={"status": statuses[n]}) for n, s in enumerate(passed.steps)
            )
        }
    )
    assert rules.same_texts(passed, moved)
    every_rule = rules.check_snapshot(policy, moved.model_copy())  # (a copy: not the last checked)
    assert rules.check_snapshot(policy, moved, passed) == every_rule


def test_a_task_list_whose_blockers_changed_is_checked_by_every_rule() -> None:
    passed = PlanSnapshot(
        title=None,
        steps=(
            Step(id="1", title="Do a", status="pending", blocked_by=("2",)),
            Step(id="2", title="Do b", status="pending"),
        ),
    )
    looped = PlanSnapshot(
        title=None,
        steps=(passed.steps[0], passed.steps[1].model_copy(update={"blocked_by": ("1",)})),
    )
    assert rules.check_snapshot(Policy.TASKS, passed) == []
    assert not rules.same_texts(passed, looped, blockers=True)
    assert [v.code for v in rules.check_snapshot(Policy.TASKS, looped, passed)] == [
        "dependency_cycle"
    ]


def test_a_plan_whose_texts_changed_is_checked_by_every_rule() -> None:
    passed = PlanSnapshot(title="Ship it", steps=(Step(id="a", title="Do a", status="completed"),))
    retitled = PlanSnapshot(title="Ship it", steps=(Step(id="a", title=" ", status="completed"),))
    assert not rules.same_texts(passed, retitled)
    assert [v.code for v in rules.check_snapshot(Policy.STRICT, retitled, passed)] == [
        "blank_step_title"
    ]


# -- the steps whose status changed ---------------------------------------------------------------


def _status_changes_by_id(
    previous: PlanSnapshot | None, snapshot: PlanSnapshot
) -> list[tuple[int, str | None, Step]]:
    before = {step.id: step.status for step in previous.steps} if previous else {}
    return [
        (index, before.get(step.id), step)
        for index, step in enumerate(snapshot.steps)
        if before.get(step.id) != step.status
    ]


@given(
    before=hyp.lists(hyp.sampled_from(STATUS_CHOICES[:4]), max_size=6),
    after=hyp.lists(hyp.sampled_from(STATUS_CHOICES[:4]), max_size=6),
    order=hyp.permutations(range(6)),
    kept=hyp.integers(min_value=0, max_value=6),
    shared=hyp.booleans(),
)
def test_status_changes_are_those_of_each_id(
    before: list[str], after: list[str], order: list[int], kept: int, shared: bool
) -> None:
    """Whether the steps keep their ids and order (the short way) or not (moved, dropped,
    added): each step whose status differs from its id's before, as a map of ids gives it."""
    previous = (
        PlanSnapshot(
            title=None,
            steps=tuple(Step(id=f"s{n}", title="T", status=s) for n, s in enumerate(before)),
        )
        if before
        else None
    )
    ids = [f"s{n}" for n in order[:kept]] if kept < 6 else [f"s{n}" for n in range(len(after))]
    steps = []
    for step_id, status in zip(ids, after, strict=False):
        old = next((s for s in previous.steps if s.id == step_id), None) if previous else None
        same = shared and old is not None and old.status == status
        steps.append(old if same else Step(id=step_id, title="T", status=status))
    snapshot = PlanSnapshot(title=None, steps=tuple(steps))
    assert rules.status_changes(previous, snapshot) == _status_changes_by_id(previous, snapshot)
    assert rules.status_changes(snapshot, snapshot) == []
