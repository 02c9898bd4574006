"""The ACP rendering of a plan: the entries of a `session/update` with `sessionUpdate: "plan"`.

The complete list every time: `content` is the step title (a task's open blockers and owner
follow it in brackets), `status` pending | in_progress | completed (cancelled steps are left
out; a `blocked` step, which an agent's own list may carry, is pending with `[blocked]` after its
title), `priority` as recorded for the step, else `medium`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from domain.models import Step

ACP_STATUSES = frozenset({"pending", "in_progress", "completed"})
WAITING = "blocked"  # not an ACP status: shown as pending, and named
ACP_PRIORITIES = frozenset({"high", "medium", "low"})
DEFAULT_PRIORITY = "medium"


def plan_entries(
    steps: Iterable[Step], priorities: Mapping[str, str] | None = None
) -> list[dict[str, str]]:
    """The ACP plan entries of `steps`; `priorities` maps a step id to its recorded priority."""
    recorded = priorities or {}
    steps = list(steps)
    open_ids = {step.id for step in steps if step.status != "completed"}
    entries = []
    for step in steps:
        waiting = step.status == WAITING
        if step.status not in ACP_STATUSES and not waiting:  # cancelled: no longer in the plan
            continue
        priority = recorded.get(step.id, DEFAULT_PRIORITY)
        entries.append(
            {
                "content": step.title + _notes(step, open_ids),
                "priority": priority if priority in ACP_PRIORITIES else DEFAULT_PRIORITY,
                "status": "pending" if waiting else step.status,
            }
        )
    return entries


def _notes(step: Step, open_ids: set[str]) -> str:
    notes = [WAITING] if step.status == WAITING else []
    blockers = [b for b in step.blocked_by if b in open_ids]
    if blockers:
        notes.append(f"blocked by {', '.join(blockers)}")
    if step.owner:
        notes.append(f"owner {step.owner}")
    return f" [{'; '.join(notes)}]" if notes else ""


def plan_update(
    steps: Iterable[Step], priorities: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The `update` object of a `session/update` notification carrying the plan."""
    return {"sessionUpdate": "plan", "entries": plan_entries(steps, priorities)}
