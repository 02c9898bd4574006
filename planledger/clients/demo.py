"""`planledger demo`: one session walked through, so a person sees what the ledger does."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from rich.console import Console
from rich.rule import Rule
from rich.syntax import Syntax

from planledger.clients import render
from planledger.service import PlanLedger

FIRST = {
    "title": "Implement session export",
    "steps": [
        {"id": "inspect", "title": "Inspect durable state", "status": "in_progress"},
        {"id": "implement", "title": "Implement archive writer", "status": "pending"},
        {"id": "verify", "title": "Run round-trip tests", "status": "pending"},
    ],
}
SECOND = {
    "expected_revision": 1,
    "title": "Implement session export",
    "goal_id": "export",
    "steps": [
        {"id": "inspect", "title": "Inspect durable state", "status": "completed"},
        {"id": "implement", "title": "Implement archive writer", "status": "in_progress"},
        {"id": "verify", "title": "Run round-trip tests", "status": "pending"},
    ],
}
BAD = {
    "expected_revision": 2,
    "title": "Implement session export",
    "mode": "plan",
    "steps": [
        {"id": "inspect", "title": "Inspect durable state", "status": "in_progress"},
        {"id": "implement", "title": "Implement archive writer", "status": "in_progress"},
        {"id": "docs", "title": "Write the docs", "status": "blocked"},
    ],
}
STALE = {**SECOND, "expected_revision": 1}


def compact_json(payload: dict[str, Any]) -> str:
    """The payload as an agent would send it, one step a line."""
    lines = []
    for key, value in payload.items():
        if isinstance(value, list):
            items = ",\n".join(f"    {json.dumps(item)}" for item in value)
            lines.append(f'  "{key}": [\n{items}\n  ]')
        else:
            lines.append(f'  "{key}": {json.dumps(value)}')
    return "{\n" + ",\n".join(lines) + "\n}"


def run_demo(ledger: PlanLedger, out: Console) -> str:
    """Walk one fresh session through the ledger; returns its session id."""
    session_id = "demo-" + datetime.now(UTC).strftime("%Y%m%d-%H%M%S-%f")
    where = ledger.database.display_url

    def step(title: str) -> None:
        out.print()
        out.print(Rule(f"[bold]{title}", align="left"))

    def show_payload(payload: dict[str, Any]) -> None:
        out.print(
            Syntax(compact_json(payload), "json", theme="ansi_dark", background_color="default")
        )

    out.print(f"[bold]plan ledger demo[/] on {where}")
    step("1. The harness opens a session; the user starts a goal")
    ledger.open_session(session_id, source="demo")
    view = ledger.start_goal(session_id, "export", "Ship session export")
    out.print(render.session_text(view))

    step("2. The agent proposes a plan (plan_update form): committed as revision 1")
    show_payload(FIRST)
    out.print(render.decision_text(ledger.submit(session_id, FIRST, client="demo")))

    step("3. It finishes a step and starts the next, against revision 1: revision 2")
    out.print(render.decision_text(ledger.submit(session_id, SECOND, client="demo")))
    out.print(render.plan_panel(ledger.plan(session_id)))

    step("4. A bad proposal: every violation is reported at once, the plan is unchanged")
    show_payload(BAD)
    out.print(render.decision_text(ledger.submit(session_id, BAD, client="demo")))

    step("5. A stale writer still thinks the plan is at revision 1: conflict")
    out.print(render.decision_text(ledger.submit(session_id, STALE, client="demo")))

    step("6. The plan as it stood at revision 1, rebuilt from the events")
    out.print(render.plan_panel(ledger.plan(session_id, revision=1)))

    step("7. The audit trail: every proposal, commit and rejection")
    out.print(render.history_table(ledger.history(session_id)))

    step("8. verify: replay from the first event, every rule re-checked")
    out.print(render.verify_text(ledger.verify([session_id])))

    step("9. Compaction: the bounded summary a context handoff attaches (max 300 chars)")
    out.print(ledger.compaction(session_id, max_chars=300).text, markup=False)

    step("10. Only an active goal asks for another turn; pending steps never do")
    out.print(render.session_text(ledger.session(session_id)))

    out.print()
    out.print(
        f"Look again with [bold]planledger plan history {session_id}[/] or "
        f"[bold]planledger plan show {session_id} --json[/]."
    )
    return session_id
