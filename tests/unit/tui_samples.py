"""Sample history entries and plan views for the terminal UI's tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from domain.models import Step
from projections.shapes import HistoryEntry, PlanView

T0 = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def entry(position: int, kind: str, revision: int | None = None) -> HistoryEntry:
    return HistoryEntry.model_validate(
        {
            "position": position,
            "kind": kind,
            "proposal_id": f"p{position}",
            "at": T0 + timedelta(minutes=position),
            "revision": revision,
            "transitions": [] if kind == "committed" else None,
        }
    )


def plan(revision: int, *statuses: str) -> PlanView:
    steps = [Step(id=f"s{i}", title=f"Step {i}", status=s) for i, s in enumerate(statuses)]
    return PlanView(
        session_id="s",
        revision=revision,
        policy="strict",
        title=f"Plan r{revision}",
        goal_id=None,
        steps=steps,
        pending_proposal=None,
        updated_at=T0,
    )
