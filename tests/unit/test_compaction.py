"""The compaction snapshot: bounded, and never fabricating progress."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from domain.models import Step
from projections.compaction import build_plan_snapshot, summarise
from projections.shapes import PlanView


def view(*steps: tuple[str, str, str], title: str | None = "Ship export") -> PlanView:
    return PlanView(
        session_id="s1",
        revision=4,
        policy="strict",
        title=title,
        goal_id="g1",
        steps=[Step(id=i, title=t, status=s) for i, t, s in steps],
        pending_proposal=None,
        updated_at=datetime.now(UTC),
    )


PLAN = view(
    ("a", "Inspect state", "completed"),
    ("b", "Write the archive", "in_progress"),
    ("c", "Test round trips", "pending"),
    ("d", "Document it", "pending"),
    ("e", "Old idea", "cancelled"),
)


def test_present_plan_summary() -> None:
    snap = summarise(PLAN)
    assert snap.state == "present"
    assert (snap.revision, snap.title, snap.goal_id) == (4, "Ship export", "g1")
    assert snap.current is not None and snap.current.id == "b"
    assert [s.id for s in snap.next or []] == ["c", "d"]
    assert (snap.completed, snap.cancelled, snap.total) == (1, 1, 5)
    assert snap.truncated is False
    assert "Current: Write the archive" in snap.text
    assert "Next: Test round trips" in snap.text


@pytest.mark.parametrize("max_chars", [0, 1, 2, 5, 17, 40, 80, 2000])
def test_text_always_fits(max_chars: int) -> None:
    long = view(
        ("a", "x" * 500, "in_progress"),
        *((f"p{n}", "y" * 500, "pending") for n in range(99)),
        title="t" * 200,
    )
    for plan in (PLAN, long, None):
        snap = summarise(plan, max_chars)
        assert len(snap.text) <= max_chars
    assert summarise(long, max_chars).truncated is True


def test_absent_plan_is_never_done() -> None:
    snap = summarise(None)
    assert snap.state == "absent"
    assert "No plan" in snap.text
    assert snap.completed is None and snap.current is None
    cleared = summarise(view())
    assert cleared.state == "absent" and cleared.revision == 4


def test_unreadable_plan_reports_why() -> None:
    def broken() -> PlanView:
        raise ValueError("plan.json is corrupt")

    snap = build_plan_snapshot(broken, max_chars=60)
    assert snap.state == "unreadable"
    assert snap.error == "ValueError: plan.json is corrupt"
    assert snap.completed is None and snap.total is None
    assert len(snap.text) <= 60


@pytest.mark.parametrize("max_chars", [0, 30, 90, 130, 2000])
def test_a_task_list_hands_over_its_open_tasks_as_many_as_fit(max_chars: int) -> None:
    tasks = PLAN.model_copy(
        update={
            "policy": "tasks",
            "title": None,
            "goal_id": None,
            "steps": [
                Step(id="1", title="Write the test", status="completed"),
                Step(id="2", title="Fix it", status="in_progress", blocked_by=("1",)),
                Step(id="3", title="Ship", status="pending", blocked_by=("2",)),
                Step(id="4", title="Tell", status="pending"),
            ],
        }
    )
    snap = summarise(tasks, max_chars)
    assert len(snap.text) <= max_chars
    whole = summarise(tasks).text
    assert whole.splitlines() == [
        "Task list revision 4",
        "Progress: 1 of 4 tasks completed",
        "Task 2 [in_progress]: Fix it",  # its blocker is completed: not named
        "Task 3 [pending]: Ship (blocked by 2)",
        "Task 4 [pending]: Tell",
    ]
    if max_chars == 130:
        assert snap.text.endswith("Fix it\n(+2 more open tasks)") and snap.truncated is True


def test_a_blocked_step_is_named_as_waiting_not_as_next() -> None:
    snap = summarise(view(("a", "Write it", "in_progress"), ("b", "Test it", "blocked")))
    assert snap.next == [] and snap.current is not None and snap.current.id == "a"
    assert snap.text.splitlines()[-1] == "Blocked: Test it"
