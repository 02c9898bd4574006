"""What each pane of the terminal UI shows, as rich text (pure: no app, no I/O)."""

from __future__ import annotations

from datetime import UTC, datetime

from rich.text import Text

from planledger.clients.plan_panel import STATUS_MARK, step_notes
from planledger.service.results import SessionView
from projections.plan_lines import operation_text
from projections.shapes import HistoryEntry, PlanView

KIND_STYLE = {"committed": "green", "rejected": "red", "proposed": "cyan"}


def when(at: datetime) -> str:
    """A timestamp to the minute, in UTC."""
    return at.astimezone(UTC).strftime("%Y-%m-%d %H:%M")


def error_line(error: BaseException) -> str:
    """One line naming an error, for the status line or a pane."""
    first = (str(error).strip().splitlines() or [""])[0][:200]
    return f"{type(error).__name__}: {first}" if first else type(error).__name__


def mark(status: str | None) -> Text:
    """A status as its marker (`∅` for a step that was not in the plan)."""
    if status is None:
        return Text("∅  ", style="dim")
    symbol, style = STATUS_MARK.get(status, ("[?]", "red"))
    return Text(symbol, style=style)


def session_text(view: SessionView) -> Text:
    text = Text.assemble(
        ("session ", "dim"),
        (view.session_id, "bold"),
        ("  mode ", "dim"),
        (view.mode, "bold"),
        ("  should_continue ", "dim"),
        ("yes" if view.should_continue else "no", "bold"),
    )
    if not view.goals:
        text.append("\nno goals", style="dim italic")
    for goal in view.goals:
        style = "bold" if goal.state == "active" else "dim"
        text.append(f"\ngoal {goal.goal_id} ", style=style)
        text.append(f"[{goal.state}] ", style="dim")
        text.append(goal.objective)
    return text


def plan_text(plan: PlanView | None, revision: int) -> Text:
    """The plan at a revision: title, policy and goal, then each step with its marker."""
    if revision == 0:
        return Text("no plan committed yet", style="dim italic")
    if plan is None:
        return Text(f"loading revision {revision}…", style="dim italic")
    untitled = "task list" if plan.policy == "tasks" else "(untitled)"
    text = Text(plan.title or untitled, style="bold")
    facts = [part for part in (plan.policy, f"goal {plan.goal_id}" if plan.goal_id else "") if part]
    if facts:
        text.append("  " + " · ".join(facts), style="dim")
    if not plan.steps:
        text.append("\nno steps (the plan was cleared)", style="dim italic")
    for step in plan.steps:
        symbol, style = STATUS_MARK.get(step.status, ("[?]", "red"))
        text.append("\n")
        text.append(f"{symbol} ", style=style)
        text.append(step.title, style=style)
        text.append(f"  {step.id}", style="dim")
        notes = step_notes(step.model_dump(mode="json"))
        if notes:
            text.append(notes, style="cyan")
    return text


def transitions_text(commit: HistoryEntry | None) -> Text:
    """What the commit of a revision changed, one step a line."""
    if commit is None:
        return Text("nothing committed yet", style="dim italic")
    text = Text.assemble(
        ("committed ", "dim"), when(commit.at), ("\nproposal ", "dim"), commit.proposal_id
    )
    if not commit.transitions:
        text.append("\nno step changed status", style="dim italic")
    for transition in commit.transitions or []:
        text.append("\n")
        text.append_text(mark(transition.from_))
        text.append(" → ", style="dim")
        text.append_text(mark(transition.to))
        text.append(f" {transition.step_id}")
    return text


def entry_details(entry: HistoryEntry) -> str:
    """One line for the history table: transitions, violation codes, or the proposal's form."""
    if entry.kind == "committed":
        changes = [f"{t.step_id}: {t.from_ or '∅'}→{t.to or '∅'}" for t in entry.transitions or []]
        return ", ".join(changes) or "no status change"
    if entry.kind == "rejected":
        return ", ".join(v.code for v in entry.violations or [])
    parts = [entry.form or "unknown form"]
    if entry.expected_revision is not None:
        parts.append(f"expects r{entry.expected_revision}")
    if entry.actor:
        parts.append(f"by {entry.actor}")
    if entry.client:
        parts.append(f"via {entry.client}")
    if entry.operation is not None:
        parts.append(f"· {operation_text(entry.operation)}")
    return " ".join(parts)


def history_row(entry: HistoryEntry) -> tuple[str, str, Text, str, str, str]:
    """pos, time, kind, revision, proposal, details."""
    return (
        str(entry.position),
        when(entry.at),
        Text(entry.kind, style=KIND_STYLE.get(entry.kind, "")),
        "" if entry.revision is None else str(entry.revision),
        entry.proposal_id[:12],
        entry_details(entry),
    )
