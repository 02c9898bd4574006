"""Terminal renderings of the views (rich). Clients render; they decide nothing."""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from domain.models import Violation
from planledger.clients.plan_panel import plan_panel_of
from planledger.service.results import Decision, SessionView, VerifyReport
from projections.plan_diff import PlanDiff
from projections.plan_lines import operation_text
from projections.shapes import History, PlanView, SessionList

MAX_EXPLANATION_SHOWN = 500


def plan_panel(view: PlanView) -> Panel:
    return plan_panel_of(view.model_dump(mode="json"))


def violation_place(violation: Violation) -> str:
    """Where a violation is: the step id, else the step counted from 1 as people count."""
    if violation.step_id:
        return violation.step_id
    return f"step {violation.index + 1}" if violation.index is not None else ""


def violation_lines(violations: Iterable[Violation], indent: str = "  ") -> list[Text]:
    lines = []
    for violation in violations:
        where = violation_place(violation)
        lines.append(
            Text.assemble(
                (f"{indent}- ", "red"),
                (violation.code, "bold"),
                (f" [{where}]" if where else "", "dim"),
                f": {violation.message}",
            )
        )
    return lines


def explanation_text(explanation: object) -> Text | None:
    """The agent's `explanation` (update_plan), shown as it said it, within reason."""
    if not isinstance(explanation, str) or not explanation.strip():
        return None
    shown = explanation.strip()
    if len(shown) > MAX_EXPLANATION_SHOWN:
        shown = shown[:MAX_EXPLANATION_SHOWN] + "…"
    return Text.assemble(("  explanation: ", "dim"), (shown, "italic"))


def decision_text(decision: Decision, explanation: object = None) -> Group:
    """The decision, with the explanation the proposal gave (the decision does not carry it)."""
    if decision.status == "committed":
        head = Text(f"committed revision {decision.revision}", style="bold green")
    elif decision.status == "conflict":
        head = Text(
            f"conflict: the plan is at revision {decision.current_revision}", style="bold yellow"
        )
    else:
        head = Text(f"rejected (plan stays at revision {decision.revision})", style="bold red")
    lines = [head]
    said = explanation_text(explanation)
    if said is not None:
        lines.append(said)
    lines += violation_lines(decision.violations)
    return Group(*lines)


def history_table(history: History) -> Table:
    """Every entry: a commit's transitions, a rejection's violations with their messages, a
    proposal's form, expected revision, actor, client and explanation."""
    table = Table(title=f"history of {history.session_id}", show_lines=False)
    for column in ("pos", "kind", "proposal", "revision", "details"):
        table.add_column(column)
    for entry in history.entries:
        details: str | Text
        if entry.kind == "committed":
            details = ", ".join(
                f"{t.step_id}: {t.from_ or '∅'}→{t.to or '∅'}" for t in entry.transitions or []
            )
        elif entry.kind == "rejected":
            details = Text("\n").join(violation_lines(entry.violations or [], indent=""))
        else:
            details = " ".join(
                part
                for part in (
                    entry.form or "unknown form",
                    f"expects r{entry.expected_revision}"
                    if entry.expected_revision is not None
                    else "",
                    f"by {entry.actor}" if entry.actor else "",
                    f"via {entry.client}" if entry.client else "",
                )
                if part
            )
            if entry.operation is not None:
                details += "\n" + operation_text(entry.operation)
            # Shown once the history entry carries it (the read side records it from
            # PlanProposed.explanation); absent entries show nothing.
            said = explanation_text(getattr(entry, "explanation", None))
            if said is not None:
                details = Text.assemble(details, "\n", said)
        style = {"committed": "green", "rejected": "red"}.get(entry.kind, "")
        table.add_row(
            str(entry.position),
            Text(entry.kind, style=style),
            entry.proposal_id[:12],
            "" if entry.revision is None else str(entry.revision),
            details,
        )
    return table


def session_text(view: SessionView) -> Group:
    lines = [
        Text.assemble(("session ", "dim"), (view.session_id, "bold"), ("  mode ", "dim"), view.mode)
    ]
    for label, value in (
        ("source", view.source),
        ("parent", view.parent_session_id),
        ("cwd", view.cwd),
    ):
        if value:
            lines.append(Text.assemble((f"  {label} ", "dim"), value))
    for goal in view.goals:
        lines.append(Text(f"  goal {goal.goal_id} [{goal.state}]: {goal.objective}"))
    lines.append(Text(f"  should_continue: {str(view.should_continue).lower()}", style="dim"))
    return Group(*lines)


def verify_text(report: VerifyReport) -> Group:
    if report.ok:
        return Group(
            Text(
                f"ok: {report.sessions_checked} session(s) replayed, every rule and chain holds",
                style="bold green",
            )
        )
    lines = [
        Text(
            f"CORRUPT: {len(report.problems)} problem(s) in {report.sessions_checked} "
            "session(s) replayed",
            style="bold red",
        )
    ]
    for p in report.problems:
        where = f"session {p.session_id} event" if p.session_id else "the store at position"
        lines.append(Text(f"  {where} {p.position} [{p.rule}]: {p.message}"))
    return Group(*lines)


def session_list_table(sessions: SessionList) -> Table | Text:
    if not sessions.sessions:
        return Text("No sessions yet: open one with `planledger session open ID`.")
    table = Table(box=None, pad_edge=False)
    for column in ("session", "mode", "rev", "progress", "title", "source", "updated"):
        table.add_column(column, overflow="fold" if column == "title" else "ellipsis")
    for item in sessions.sessions:
        progress = f"{item.progress.completed}/{item.progress.total}" if item.progress.total else ""
        title = Text("CORRUPT", style="bold red") if item.corrupt else Text(item.title or "")
        if item.parent_session_id:
            title.append(f"  ↳ {item.parent_session_id}", style="dim")
        table.add_row(
            item.session_id,
            item.mode,
            str(item.revision),
            progress,
            title,
            item.source or "",
            item.updated_at.strftime("%Y-%m-%d %H:%M:%S"),
        )
    return table


def diff_text(diff: PlanDiff) -> str:
    """A plan diff as plain lines (`+` added, `-` removed, `~` retitled, `>` status)."""
    lines = [f"revision {diff.from_} -> {diff.to} of session {diff.session_id}"]
    lines += [f"+ {step.id}  {step.title}  [{step.status}]" for step in diff.added]
    lines += [f"- {step.id}  {step.title}  [{step.status}]" for step in diff.removed]
    lines += [f"~ {change.step_id}  {change.from_!r} -> {change.to!r}" for change in diff.retitled]
    lines += [f"> {change.step_id}  {change.from_} -> {change.to}" for change in diff.status]
    if len(lines) == 1:
        lines.append("no change")
    return "\n".join(lines)
