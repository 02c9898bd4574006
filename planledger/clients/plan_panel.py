"""The plan panel of the terminal (rich only: the fast `plan show` imports no models)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.cells import cell_len
from rich.console import Group
from rich.panel import Panel
from rich.text import Text

STATUS_MARK = {
    "completed": ("[x]", "green"),
    "in_progress": ("[>]", "bold yellow"),
    "pending": ("[ ]", "default"),
    "cancelled": ("[-]", "dim strike"),
    "blocked": ("[!]", "magenta"),
}


def step_notes(step: Mapping[str, Any]) -> str:
    """A task's blockers and owner, as the step line shows them ("" when it has neither)."""
    notes = ""
    if step.get("blocked_by"):
        notes += "  blocked by " + ", ".join(step["blocked_by"])
    if step.get("owner"):
        notes += f"  @{step['owner']}"
    return notes


def plan_panel_of(view: Mapping[str, Any]) -> Panel:
    """The plan as a panel, from the plan view's JSON (no models needed)."""
    lines: list[Text] = []
    steps = view.get("steps") or []
    if not steps:
        lines.append(Text("no plan", style="dim italic"))
    for step in steps:
        mark, style = STATUS_MARK.get(step["status"], ("[?]", "red"))
        lines.append(
            Text.assemble(
                (f"{mark} ", style),
                (step["title"], style),
                (f"  {step['id']}", "dim"),
                (step_notes(step), "cyan"),
            )
        )
    pending = view.get("pending_proposal")
    if pending:
        lines.append(Text(f"undecided proposal {pending['proposal_id']}", style="italic cyan"))
    title = view.get("title") or ("task list" if view.get("policy") == "tasks" else "(untitled)")
    policy = view.get("policy")
    subtitle = f"revision {view['revision']}" + (f" · {policy}" if policy else "")
    if view.get("goal_id"):
        subtitle += f" · goal {view['goal_id']}"
    # A panel is as wide as its content; the border texts must fit too (a short plan would
    # otherwise cut its revision number). Rich still caps the width at the terminal's.
    content = max(line.cell_len for line in lines)
    width = max(content + 4, cell_len(subtitle) + 6, cell_len(title) + 6)
    return Panel(
        Group(*lines),
        title=Text(title, style="bold"),
        subtitle=Text(subtitle),
        width=width,  # expands to exactly this width (at most the terminal's)
    )
