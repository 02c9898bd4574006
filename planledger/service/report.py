"""A session's audit report (`planledger export`): its goals, the plan at each revision with
what changed, every rejection with its violations, who sent each proposal and when, the chain
head and whether verify holds. Built from the session's events in one pass (a corrupt
session is reported up to where its history breaks, with the problem), never from the views."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pydantic import Field

from domain.base import Event
from domain.errors import SessionNotFound
from domain.ids import plan_aggregate_id, validate_id
from domain.models import Model, Violation
from planledger.service.results import GoalView, Problem, SessionView
from projections.decode import PlanEventDecoder
from projections.fold import fold_events
from projections.shapes import PlanView, Transition

if TYPE_CHECKING:
    from planledger.service.ledger import Ledger


class ReportRevision(Model):
    revision: int
    at: datetime
    actor: str | None
    client: str | None = None
    proposal_id: str
    plan: PlanView
    transitions: list[Transition]


class ReportRejection(Model):
    proposal_id: str
    at: datetime
    actor: str | None
    client: str | None = None
    violations: list[Violation]


class SessionReport(Model):
    """The spec's export shape (JSON), with the problems verify found and when it was made."""

    session: SessionView
    goals: list[GoalView]
    revisions: list[ReportRevision]
    rejections: list[ReportRejection]
    chain_head: str | None = Field(description="The chain of the plan stream's last event.")
    verified: bool
    problems: list[Problem] = Field(default_factory=list)
    exported_at: datetime

    def as_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)


def session_report(ledger: Ledger, session_id: str) -> SessionReport:
    validate_id(session_id)
    if not ledger.session_exists(session_id):
        raise SessionNotFound(session_id)
    session = ledger.session(session_id)
    problems = ledger.verify_session(session_id)
    rows = ledger.chained_rows(plan_aggregate_id(session_id))
    decoder = PlanEventDecoder(ledger.mapper)
    events: list[tuple[Event, int | None]] = []
    for row in rows:
        try:
            events.append((decoder.to_domain_event(row), None))  # type: ignore[arg-type]
        except Exception:  # unreadable: verify names it; the report stops before it
            break
    changes = fold_events({}, events)  # the rules re-checked: stops where the history breaks
    senders: dict[str, tuple[str | None, str | None]] = {}  # proposal id: (actor, client)
    revisions: list[ReportRevision] = []
    rejections: list[ReportRejection] = []
    for item in changes.history:
        entry = item.entry
        if entry.kind == "proposed":
            senders[entry.proposal_id] = (entry.actor, entry.client)
            continue
        actor, client = senders.get(entry.proposal_id, (None, None))
        if entry.kind == "committed":
            plan = item.view()
            assert plan is not None and entry.revision is not None
            revisions.append(
                ReportRevision(
                    revision=entry.revision,
                    at=entry.at,
                    actor=actor,
                    client=client,
                    proposal_id=entry.proposal_id,
                    plan=plan,
                    transitions=entry.transitions or [],
                )
            )
        else:
            rejections.append(
                ReportRejection(
                    proposal_id=entry.proposal_id,
                    at=entry.at,
                    actor=actor,
                    client=client,
                    violations=entry.violations or [],
                )
            )
    return SessionReport(
        session=session,
        goals=session.goals,
        revisions=revisions,
        rejections=rejections,
        chain_head=rows[-1].chain if rows else None,
        verified=not problems,
        problems=problems,
        exported_at=datetime.now(UTC),
    )
