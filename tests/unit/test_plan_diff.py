"""What changed between two revisions: steps added, removed, retitled, status changes."""

from __future__ import annotations

from typing import Any

from projections.plan_diff import plan_diff
from projections.shapes import PlanView


def view(revision: int, *steps: tuple[str, str, str]) -> PlanView:
    data: dict[str, Any] = {
        "session_id": "s",
        "revision": revision,
        "policy": "strict",
        "title": "t",
        "goal_id": None,
        "steps": [{"id": i, "title": t, "status": s} for i, t, s in steps],
        "pending_proposal": None,
        "updated_at": None,
    }
    return PlanView.model_validate(data)


def test_each_kind_of_change_between_revisions_that_are_not_adjacent() -> None:
    before = view(
        1, ("a", "Look", "completed"), ("b", "Fix", "in_progress"), ("c", "Old", "pending")
    )
    after = view(
        5, ("b", "Fix it", "completed"), ("a", "Look", "completed"), ("d", "New", "in_progress")
    )
    assert plan_diff(before, after).as_json() == {
        "session_id": "s",
        "from": 1,
        "to": 5,
        "added": [{"id": "d", "title": "New", "status": "in_progress"}],
        "removed": [{"id": "c", "title": "Old", "status": "pending"}],
        "retitled": [{"step_id": "b", "from": "Fix", "to": "Fix it"}],
        "status": [{"step_id": "b", "from": "in_progress", "to": "completed"}],
    }


def test_no_change_and_from_no_plan() -> None:
    same = view(2, ("a", "Look", "pending"))
    empty = plan_diff(same, same).as_json()
    assert empty["added"] == empty["removed"] == empty["retitled"] == empty["status"] == []
    assert [s["id"] for s in plan_diff(view(0), same).as_json()["added"]] == ["a"]
