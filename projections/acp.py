"""The ACP rendering of a plan: the entries of a `session/update` with `sessionUpdate: "plan"`.

The complete list every time: `content` is the step title, `status` pending | in_progress |
completed (cancelled steps are left out), `priority` as recorded for the step, else `medium`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from domain.models import Step

ACP_STATUSES = frozenset({"pending", "in_progress", "completed"})
ACP_PRIORITIES = frozenset({"high", "medium", "low"})
DEFAULT_PRIORITY = "medium"


def plan_entries(
    steps: Iterable[Step], priorities: Mapping[str, str] | None = None
) -> list[dict[str, str]]:
    """The ACP plan entries of `steps`; `priorities` maps a step id to its recorded priority."""
    recorded = priorities or {}
    entries = []
    for step in steps:
        if step.status not in ACP_STATUSES:  # cancelled: no longer part of the plan
            continue
        priority = recorded.get(step.id, DEFAULT_PRIORITY)
        entries.append(
            {
                "content": step.title,
                "priority": priority if priority in ACP_PRIORITIES else DEFAULT_PRIORITY,
                "status": step.status,
            }
        )
    return entries


def plan_update(
    steps: Iterable[Step], priorities: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The `update` object of a `session/update` notification carrying the plan."""
    return {"sessionUpdate": "plan", "entries": plan_entries(steps, priorities)}
