"""The text of the viewer's agent messages: commits, rejections, plans, decisions, reports."""

from __future__ import annotations

from collections.abc import Iterable

from domain.models import Violation
from planledger.service.results import Decision, VerifyReport
from projections.shapes import HistoryEntry, PlanView, Transition

MARK = {"completed": "[x]", "in_progress": "[>]", "pending": "[ ]", "cancelled": "[-]"}
HELP = (
    "Commands: `show` (the plan now), `history` (every proposal, commit and rejection), "
    "`revision N` (the plan at revision N), `verify` (replay with every rule re-checked), "
    'or a JSON plan in either form (`{"plan": [{"step", "status"}]}` or '
    '`{"title", "steps": [{"id", "title", "status"}]}`), decided at once.'
)


def transitions_text(transitions: Iterable[Transition]) -> str:
    parts = [f"{t.step_id}: {t.from_ or '∅'} → {t.to or '∅'}" for t in transitions]
    return "; ".join(parts) if parts else "no step changed"


def violations_text(violations: Iterable[Violation]) -> str:
    return "\n".join(f"- {v.code}: {v.message}" for v in violations)


def commit_text(entry: HistoryEntry) -> str:
    """A replayed commit: its revision and its step transitions."""
    return f"revision {entry.revision} committed: {transitions_text(entry.transitions or [])}"


def rejection_text(entry: HistoryEntry) -> str:
    """A replayed rejection: its violation codes."""
    codes = ", ".join(v.code for v in entry.violations or []) or "no violation recorded"
    return f"proposal {entry.proposal_id} rejected: {codes}"


def plan_text(view: PlanView, of_revisions: int | None = None) -> str:
    head = f"revision {view.revision}" + (f" of {of_revisions}" if of_revisions else "")
    if view.title:
        head = f"{view.title} ({head})"
    if not view.steps:
        return f"{head}: no plan"
    lines = [head] + [f"{MARK.get(s.status, '[?]')} {s.title}" for s in view.steps]
    return "\n".join(lines)


def history_text(entries: Iterable[HistoryEntry]) -> str:
    lines = []
    for entry in entries:
        if entry.kind == "committed":
            detail = commit_text(entry)
        elif entry.kind == "rejected":
            detail = rejection_text(entry)
        else:
            detail = f"proposal {entry.proposal_id} ({entry.form or 'unknown form'})"
            detail += f" by {entry.client}" if entry.client else ""
        lines.append(f"{entry.position}. {detail}")
    return "\n".join(lines) if lines else "no proposals yet"


def decision_text(decision: Decision) -> str:
    if decision.status == "committed":
        return f"committed revision {decision.revision}"
    if decision.status == "conflict":
        return (
            f"conflict: the plan is at revision {decision.current_revision}\n"
            + violations_text(decision.violations)
        ).rstrip()
    return f"rejected (the plan stays at revision {decision.revision}):\n" + violations_text(
        decision.violations
    )


def verify_text(report: VerifyReport) -> str:
    if report.ok:
        return f"ok: {report.sessions_checked} session(s) replayed, every rule holds"
    lines = [f"CORRUPT: {len(report.problems)} problem(s)"]
    lines += [f"- event {p.position} [{p.rule}]: {p.message}" for p in report.problems]
    return "\n".join(lines)
