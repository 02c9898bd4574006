"""Plain-text renderings a model reads (MCP tool text)."""

from __future__ import annotations

from datetime import UTC, datetime

from domain.models import Step, Violation
from projections.plan_lines import entry_line, plan_lines, violation_lines
from projections.shapes import HistoryEntry, PlanView, Transition

AT = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def view(**changes: object) -> PlanView:
    data: dict[str, object] = {
        "session_id": "s1",
        "revision": 2,
        "policy": "strict",
        "title": "Export",
        "goal_id": "g1",
        "steps": [
            Step(id="inspect", title="Inspect", status="completed"),
            Step(id="write", title="Write", status="in_progress"),
            Step(id="ship", title="Ship", status="pending"),
            Step(id="old", title="Old", status="cancelled"),
        ],
        "pending_proposal": None,
        "updated_at": AT,
    }
    return PlanView.model_validate({**data, **changes})


def test_plan_lines_mark_each_status_and_head_with_revision_policy_goal() -> None:
    assert plan_lines(view()) == [
        "Export (revision 2, strict policy, goal g1)",
        "[x] Inspect (id inspect, completed)",
        "[>] Write (id write, in_progress)",
        "[ ] Ship (id ship, pending)",
        "[-] Old (id old, cancelled)",
    ]


def test_an_empty_plan_says_so_and_never_looks_done() -> None:
    lines = plan_lines(view(title=None, policy=None, goal_id=None, steps=[], revision=0))
    assert lines == ["Plan (revision 0)", "no plan: no steps committed"]


def test_violations_name_code_place_and_message() -> None:
    lines = violation_lines(
        [
            Violation(code="blank_title", message="Give the plan a title."),
            Violation(code="step_removed", message="Keep step a.", step_id="a"),
            Violation(code="invalid_field", message="Step 3 is not an object.", index=3),
        ]
    )
    assert lines == [
        "- blank_title: Give the plan a title.",
        "- step_removed [a]: Keep step a.",
        "- invalid_field [#3]: Step 3 is not an object.",
    ]


def test_history_entries_show_transitions_codes_and_the_client() -> None:
    commit = HistoryEntry(
        position=3,
        kind="committed",
        proposal_id="p1",
        at=AT,
        revision=1,
        transitions=[Transition(step_id="a", from_=None, to="in_progress")],
    )
    assert entry_line(commit) == "3 committed p1 revision 1: a: none -> in_progress"
    rejected = HistoryEntry(
        position=5,
        kind="rejected",
        proposal_id="p2",
        at=AT,
        violations=[Violation(code="too_long", message="m"), Violation(code="x", message="m")],
    )
    assert entry_line(rejected) == "5 rejected p2: too_long, x"
    proposed = HistoryEntry(position=4, kind="proposed", proposal_id="p2", at=AT, form="codex")
    assert (
        entry_line(proposed.model_copy(update={"client": "mcp"}))
        == "4 proposed p2 (codex, via mcp)"
    )
