"""The fold's quick equality and copy give what pydantic's own give."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from domain.models import PlanSnapshot, Step
from domain.plan_state import same_snapshot
from projections.fold import committed_snapshot, empty_view, updated
from projections.shapes import PendingProposalView, RejectionView

NOW = datetime(2025, 1, 2, tzinfo=UTC)


def snapshot(
    *steps: tuple[str, str, str], title: str | None = "T", goal: str | None = None
) -> PlanSnapshot:
    return PlanSnapshot(
        title=title, goal_id=goal, steps=tuple(Step(id=i, title=t, status=s) for i, t, s in steps)
    )


A = ("a", "A", "pending")
B = ("b", "B", "in_progress")


@pytest.mark.parametrize(
    ("left", "right"),
    [
        (snapshot(A, B), snapshot(A, B)),
        (snapshot(A, B), snapshot(B, A)),
        (snapshot(A), snapshot(A, B)),
        (snapshot(A), snapshot(("a", "A", "completed"))),
        (snapshot(A), snapshot(A, title="U")),
        (snapshot(A), snapshot(A, goal="g")),
        (snapshot(A, title=None), snapshot(A, title=None)),
        (None, snapshot(A)),
    ],
)
def test_same_snapshot_is_equality(left: PlanSnapshot | None, right: PlanSnapshot) -> None:
    assert same_snapshot(left, right) == (left == right)
    assert same_snapshot(right, right)


def test_updated_is_model_copy() -> None:
    view = empty_view("s", NOW)
    pending = PendingProposalView(
        proposal_id="p", form="strict", expected_revision=None, proposed_at=NOW
    )
    for update in (
        {"pending_proposal": pending, "updated_at": NOW},
        {"revision": 1, "title": "T", "steps": [Step(id="a", title="A", status="pending")]},
        {"last_rejection": RejectionView(proposal_id="p", violations=[])},
    ):
        before = view.model_dump_json()
        mine, theirs = updated(view, update), view.model_copy(update=update)
        assert mine == theirs
        assert mine.model_fields_set == theirs.model_fields_set
        assert mine.model_dump_json() == theirs.model_dump_json()
        assert view.model_dump_json() == before  # the view copied is left as it was
        view = mine


def test_committed_snapshot_is_model_construct() -> None:
    steps = [Step(id="a", title="A", status="completed"), Step(id="b", title="B", status="pending")]
    view = updated(empty_view("s", NOW), {"revision": 2, "title": "T", "goal_id": "g"})
    for title, listed in (("T", steps), (None, []), ("T", steps[:1])):
        view = updated(view, {"title": title, "steps": listed})
        mine = committed_snapshot(view)
        theirs = PlanSnapshot.model_construct(
            title=view.title, goal_id=view.goal_id, steps=tuple(view.steps)
        )
        assert mine == theirs
        assert mine.model_fields_set == theirs.model_fields_set
        assert mine.model_dump_json() == theirs.model_dump_json()
        assert same_snapshot(mine, theirs)
