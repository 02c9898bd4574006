"""A session's line in the session list (CLI, HTTP, web page, ACP `session/list`), from its
stored rows: the plan at a glance, read from the view's JSON without building the view."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from projections.shapes import Progress, SessionListItem


def list_title(title: str | None, steps: list[dict[str, Any]]) -> str | None:
    """The plan's title, else the title of its first step in progress, else None."""
    if title:
        return title
    return next((step.get("title") for step in steps if step.get("status") == "in_progress"), None)


def session_item(
    session_id: str,
    mode: str,
    session_at: str,
    origin: tuple[str | None, str | None, str | None],
    view: dict[str, Any] | None,
    corrupt: bool,
) -> SessionListItem:
    """`origin` is (source, parent_session_id, cwd); `view` the plan view's JSON (None when
    the session has none). Updated at: the later of the session's and the plan's last event."""
    updated = datetime.fromisoformat(session_at)
    title, completed, total, revision = None, 0, 0, 0
    if view is not None:
        plan_at = view.get("updated_at")
        if plan_at:
            updated = max(updated, datetime.fromisoformat(plan_at))
        revision = int(view.get("revision") or 0)
        if not corrupt:  # a corrupt session's plan is never shown
            steps = view.get("steps") or []
            title = list_title(view.get("title"), steps)
            completed = sum(1 for step in steps if step.get("status") == "completed")
            total = sum(1 for step in steps if step.get("status") != "cancelled")
    source, parent_session_id, cwd = origin
    return SessionListItem(
        session_id=session_id,
        mode=mode,
        revision=revision,
        updated_at=updated,
        title=title,
        progress=Progress(completed=completed, total=total),
        source=source,
        parent_session_id=parent_session_id,
        cwd=cwd,
        corrupt=corrupt,
    )
