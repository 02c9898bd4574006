"""The fold's quick equality and views give what pydantic's own give."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from domain.models import Form, PlanSnapshot, Policy, Step, TaskOperation, Violation
from domain.plan_state import PendingProposal, same_snapshot
from projections.fold import (
    COMMITTED_GIVEN,
    PROPOSED_GIVEN,
    REJECTED_GIVEN,
    Shown,
    committed_snapshot,
    empty_view,
    history_entry,
    view_of,
)
from projections.shapes import HistoryEntry, PlanView, Transition

NOW = datetime(2025, 1, 2, tzinfo=UTC)


def snapshot(
    *steps: tuple[str, str, str], title: str | None = "T", goal: str | None = None
) -> PlanSnapshot:
    return PlanSnapshot(
        title=title, goal_id=goal, steps=tuple(Step(id=i, title=t, status=s) for i, t, s in steps)
    )


A = ("a", "A", "pending")
B = ("b", "B", "in_progress")
TRANSITION = Transition(step_id="a", from_="pending", to=None)


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


@pytest.mark.parametrize("pending", [False, True])
@pytest.mark.parametrize("rejected", [False, True])
@pytest.mark.parametrize("revision", [0, 2])
def test_view_of_is_validation(pending: bool, rejected: bool, revision: int) -> None:
    plan = snapshot(A, B, goal="g") if revision else None
    proposal = PendingProposal(
        proposal_id="p",
        form=Form.STRICT,
        candidate=snapshot(A),
        expected_revision=revision,
        shape_violations=(Violation(code="c", message="m"),),
        fingerprint="f",
        proposed_at=NOW,
    )
    rejection = ("r", (Violation(code="c", message="m"),))
    shown = Shown(
        7,
        revision,
        Policy.STRICT if revision else None,
        plan,
        proposal if pending else None,
        rejection if rejected else None,
        NOW,
    )
    mine = view_of("s", shown)
    theirs = PlanView.model_validate(
        {
            "session_id": "s",
            "revision": revision,
            "policy": "strict" if revision else None,
            "title": plan.title if plan else None,
            "goal_id": plan.goal_id if plan else None,
            "steps": list(plan.steps) if plan else [],
            "pending_proposal": {
                "proposal_id": "p",
                "form": "strict",
                "expected_revision": revision,
                "proposed_at": NOW,
                "candidate": snapshot(A),
                "shape_violations": [{"code": "c", "message": "m"}],
            }
            if pending
            else None,
            "last_rejection": {"proposal_id": "r", "violations": [{"code": "c", "message": "m"}]}
            if rejected
            else None,
            "updated_at": NOW,
        }
    )
    assert mine == theirs
    assert mine.model_dump_json() == theirs.model_dump_json()


def test_committed_snapshot_is_model_construct() -> None:
    steps = [Step(id="a", title="A", status="completed"), Step(id="b", title="B", status="pending")]
    view = empty_view("s", NOW).model_copy(update={"revision": 2, "title": "T", "goal_id": "g"})
    for title, listed in (("T", steps), (None, []), ("T", steps[:1])):
        view = view.model_copy(update={"title": title, "steps": listed})
        mine = committed_snapshot(view)
        theirs = PlanSnapshot.model_construct(
            title=view.title, goal_id=view.goal_id, steps=tuple(view.steps)
        )
        assert mine == theirs
        assert mine.model_fields_set == theirs.model_fields_set
        assert mine.model_dump_json() == theirs.model_dump_json()
        assert same_snapshot(mine, theirs)


@pytest.mark.parametrize(
    ("kind", "given", "extra"),
    [
        ("proposed", PROPOSED_GIVEN, {"form": "strict", "client": "c", "actor": "a"}),
        ("proposed", PROPOSED_GIVEN, {"form": "task", "operation": TaskOperation(op="create")}),
        ("committed", COMMITTED_GIVEN, {"revision": 2, "transitions": [TRANSITION]}),
        ("rejected", REJECTED_GIVEN, {"violations": [Violation(code="c", message="m")]}),
    ],
)
def test_history_entry_is_validation(
    kind: str, given: frozenset[str], extra: dict[str, Any]
) -> None:
    mine = history_entry(3, kind, "p", NOW, given, **extra)
    theirs = HistoryEntry.model_validate(
        {"position": 3, "kind": kind, "proposal_id": "p", "at": NOW, **extra}
        | {name: None for name in given - {"position", "kind", "proposal_id", "at"} - set(extra)}
    )
    assert mine == theirs
    assert list(mine.__dict__) == list(theirs.__dict__)
    assert mine.model_fields_set == theirs.model_fields_set
    assert mine.model_dump_json(by_alias=True) == theirs.model_dump_json(by_alias=True)
