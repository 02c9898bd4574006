"""Plain-text renderings for a model to read: a plan view, a history, a list of violations."""

from __future__ import annotations

from collections.abc import Iterable

from domain.models import TaskOperation, Violation
from projections.shapes import History, HistoryEntry, PlanView

MARKS = {
    "completed": "[x]",
    "in_progress": "[>]",
    "pending": "[ ]",
    "cancelled": "[-]",
    "blocked": "[!]",
}


def plan_lines(view: PlanView) -> list[str]:
    """The plan as lines: a heading (title, revision, policy, goal), then one line a step."""
    head = f"{view.title or 'Plan'} (revision {view.revision}"
    if view.policy:
        head += f", {view.policy} policy"
    if view.goal_id:
        head += f", goal {view.goal_id}"
    lines = [head + ")"]
    if not view.steps:
        lines.append("no plan: no steps committed")
    for step in view.steps:
        line = f"{MARKS.get(step.status, '[?]')} {step.title} (id {step.id}, {step.status}"
        if step.blocked_by:
            line += f", blocked by {', '.join(step.blocked_by)}"
        if step.owner:
            line += f", owner {step.owner}"
        lines.append(line + ")")
    if view.pending_proposal is not None:
        lines.append(f"undecided proposal {view.pending_proposal.proposal_id}")
    return lines


def violation_lines(violations: Iterable[Violation]) -> list[str]:
    """Every violation as `- code [where]: message`."""
    lines = []
    for violation in violations:
        where = violation.step_id or (f"#{violation.index}" if violation.index is not None else "")
        lines.append(f"- {violation.code}{f' [{where}]' if where else ''}: {violation.message}")
    return lines


def history_lines(history: History) -> list[str]:
    """One line an entry: position, kind, proposal, and its transitions or violations."""
    if not history.entries:
        return [f"session {history.session_id}: no proposals yet"]
    return [f"session {history.session_id}: {len(history.entries)} entries"] + [
        entry_line(entry) for entry in history.entries
    ]


def entry_line(entry: HistoryEntry) -> str:
    line = f"{entry.position} {entry.kind} {entry.proposal_id}"
    if entry.kind == "committed":
        changes = ", ".join(
            f"{t.step_id}: {t.from_ or 'none'} -> {t.to or 'none'}" for t in entry.transitions or []
        )
        line += f" revision {entry.revision}" + (f": {changes}" if changes else "")
    elif entry.kind == "rejected":
        line += ": " + ", ".join(v.code for v in entry.violations or [])
    else:
        line += f" ({entry.form or 'unknown form'}"
        line += f", by {entry.actor}" if entry.actor else ""
        line += f", via {entry.client}" if entry.client else ""
        line += ")"
        if entry.operation is not None:
            line += f": {operation_text(entry.operation)}"
    return line


def operation_text(operation: TaskOperation) -> str:
    """A task operation as a person reads it: `update 3: status in_progress, blocked by 1`."""
    parts = []
    if operation.title is not None:
        parts.append(f"title {operation.title!r}")
    if operation.status is not None:
        parts.append(f"status {operation.status}")
    if operation.owner is not None:
        parts.append(f"owner {operation.owner}")
    if operation.add_blocked_by:
        parts.append(f"blocked by {', '.join(operation.add_blocked_by)}")
    if operation.add_blocks:
        parts.append(f"blocks {', '.join(operation.add_blocks)}")
    head = f"{operation.op} {operation.id}" if operation.id is not None else operation.op
    return head + (f": {', '.join(parts)}" if parts else "")
