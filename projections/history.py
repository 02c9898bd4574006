"""The audit trail of one plan, built from its events in order."""

from __future__ import annotations

from collections.abc import Iterable

from domain import rules
from domain.base import Event
from domain.models import PlanSnapshot
from domain.plan import Plan
from projections.shapes import HistoryEntry, Transition


def history_entries(events: Iterable[Event]) -> list[HistoryEntry]:
    """Every proposal, commit and rejection, with the step transitions of each commit."""
    entries: list[HistoryEntry] = []
    previous: PlanSnapshot | None = None
    for event in events:
        position, at = event.originator_version, event.timestamp
        if isinstance(event, Plan.PlanProposed):
            entries.append(
                HistoryEntry(
                    position=position,
                    kind="proposed",
                    proposal_id=event.proposal_id,
                    at=at,
                    form=event.form,
                    client=event.client,
                    expected_revision=event.expected_revision,
                )
            )
        elif isinstance(event, Plan.PlanCommitted):
            transitions = [
                Transition(step_id=step_id, from_=before, to=after)
                for step_id, before, after in rules.step_transitions(previous, event.snapshot)
            ]
            previous = event.snapshot
            entries.append(
                HistoryEntry(
                    position=position,
                    kind="committed",
                    proposal_id=event.proposal_id,
                    at=at,
                    revision=event.revision,
                    transitions=transitions,
                )
            )
        elif isinstance(event, Plan.PlanRejected):
            entries.append(
                HistoryEntry(
                    position=position,
                    kind="rejected",
                    proposal_id=event.proposal_id,
                    at=at,
                    violations=list(event.violations),
                )
            )
    return entries
