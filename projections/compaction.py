"""The compaction snapshot: a bounded summary of the plan for a context-compaction handoff.

It never reports progress it did not read: no plan is `absent` ("no plan", never "done"), and a
plan that could not be read is `unreadable`, with the reason.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from domain.errors import error_line
from domain.models import Model, Step
from projections.shapes import PlanView

DEFAULT_MAX_CHARS = 2000
NEXT_STEPS = 5
ELLIPSIS = "…"


class StepSummary(Model):
    id: str
    title: str


class CompactionSnapshot(Model):
    state: Literal["present", "absent", "unreadable"]
    revision: int | None = None
    title: str | None = None
    current: StepSummary | None = None
    next: list[StepSummary] | None = None
    completed: int | None = None
    cancelled: int | None = None
    total: int | None = None
    goal_id: str | None = None
    truncated: bool | None = None
    error: str | None = None
    text: str

    def as_json(self) -> dict[str, object]:
        return self.model_dump(mode="json", exclude_none=True)


def fit(text: str, max_chars: int) -> tuple[str, bool]:
    """`text` cut to `max_chars` (ending in an ellipsis when cut), and whether it was cut."""
    if len(text) <= max_chars:
        return text, False
    if max_chars <= len(ELLIPSIS):
        return text[:max_chars], True
    return text[: max_chars - len(ELLIPSIS)].rstrip() + ELLIPSIS, True


def summarise(view: PlanView | None, max_chars: int = DEFAULT_MAX_CHARS) -> CompactionSnapshot:
    """The snapshot of a plan view (None: the session has no plan)."""
    if view is None or not view.steps:
        text, _ = fit("No plan (no steps recorded).", max_chars)
        return CompactionSnapshot(
            state="absent", revision=view.revision if view else None, text=text
        )
    steps = view.steps
    current = next((s for s in steps if s.status == "in_progress"), None)
    pending = [s for s in steps if s.status == "pending"]
    completed = sum(s.status == "completed" for s in steps)
    cancelled = sum(s.status == "cancelled" for s in steps)
    if view.policy == "tasks":
        text, truncated = _render_tasks(view, completed, max_chars)
    else:
        text, truncated = _render(view, current, pending, completed, cancelled, max_chars)
    return CompactionSnapshot(
        state="present",
        revision=view.revision,
        title=view.title,
        current=StepSummary(id=current.id, title=current.title) if current else None,
        next=[StepSummary(id=s.id, title=s.title) for s in pending[:NEXT_STEPS]],
        completed=completed,
        cancelled=cancelled,
        total=len(steps),
        goal_id=view.goal_id,
        truncated=truncated or len(pending) > NEXT_STEPS,
        text=text,
    )


def task_line(step: Step, open_ids: set[str]) -> str:
    """An open task as the handoff names it: id, status, title, open blockers, owner."""
    line = f"Task {step.id} [{step.status}]: {fit(step.title, 200)[0]}"
    blockers = [b for b in step.blocked_by if b in open_ids]
    if blockers:
        line += f" (blocked by {', '.join(blockers)})"
    if step.owner:
        line += f" (owner {step.owner})"
    return line


def _render_tasks(view: PlanView, completed: int, max_chars: int) -> tuple[str, bool]:
    """A task list: every open task with its id, status and blockers, as many as fit."""
    open_tasks = [s for s in view.steps if s.status != "completed"]
    open_ids = {s.id for s in open_tasks}
    lines = [
        f"Task list revision {view.revision}",
        f"Progress: {completed} of {len(view.steps)} tasks completed",
    ]
    if view.goal_id:
        lines.append(f"Goal: {view.goal_id}")
    items = [task_line(step, open_ids) for step in open_tasks]
    text, _, truncated = _fit_lines(lines, items, "open tasks", max_chars)
    return text, truncated


def _render(
    view: PlanView,
    current: Step | None,
    pending: list[Step],
    completed: int,
    cancelled: int,
    max_chars: int,
) -> tuple[str, bool]:
    head = f"Plan revision {view.revision}" + (f": {fit(view.title, 120)[0]}" if view.title else "")
    progress = f"Progress: {completed} of {len(view.steps)} steps completed"
    if cancelled:
        progress += f", {cancelled} cancelled"
    lines = [head, progress]
    if view.goal_id:
        lines.append(f"Goal: {view.goal_id}")
    lines.append(f"Current: {fit(current.title, 200)[0]}" if current else "Current: none")
    shown = pending[:NEXT_STEPS]
    items = [f"Next: {fit(s.title, 200)[0]}" for s in shown]
    # Steps an agent's own list marks `blocked` wait: named after the next ones.
    waiting = [f"Blocked: {fit(s.title, 200)[0]}" for s in view.steps if s.status == "blocked"]
    dropped = len(pending) - len(shown)
    more = "steps" if waiting else "pending"
    text, count, truncated = _fit_lines(lines, items + waiting, more, max_chars, dropped)
    return text, truncated or any(
        len(s.title) > 200 for s in [*shown[:count], *([current] if current else [])]
    )


def _fit_lines(
    head: list[str], items: list[str], more: str, max_chars: int, dropped: int = 0
) -> tuple[str, int, bool]:
    """`head`, then as many of `items` as fit in `max_chars`, the rest (and `dropped` before)
    counted as `(+N more <more>)`: the text, how many items it shows, and whether it was cut."""
    shown, cut = len(items), False
    while True:
        body = [*head, *items[:shown]]
        left = dropped + len(items) - shown
        if left:
            body.append(f"(+{left} more {more})")
        text = "\n".join(body)
        if len(text) <= max_chars or not shown:
            break
        shown, cut = shown - 1, True
    text, hard_cut = fit(text, max_chars)
    return text, shown, cut or hard_cut


def build_plan_snapshot(
    read_view: Callable[[], PlanView | None], max_chars: int = DEFAULT_MAX_CHARS
) -> CompactionSnapshot:
    """Best-effort: any failure to read the plan becomes `unreadable`, never invented progress."""
    if max_chars < 0:
        raise ValueError("max_chars must be >= 0")
    try:
        view = read_view()
    except Exception as error:
        reason = error_line(error)
        text, _ = fit(f"Plan unreadable ({reason}); do not assume any progress.", max_chars)
        return CompactionSnapshot(state="unreadable", error=reason, text=text)
    return summarise(view, max_chars)
