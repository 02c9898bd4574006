"""Human renderings (issue 8): the panel footer is never cut, violations name steps as people
count them, rejections show their messages, and the agent's explanation is shown."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from rich.console import Console

from domain.models import Step, Violation
from planledger.clients import render
from planledger.service.results import Decision
from projections.shapes import History, HistoryEntry, PlanView

AT = datetime(2025, 1, 1, tzinfo=UTC)


def shown(renderable: Any, width: int = 120) -> str:
    console = Console(width=width, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


def view(**changes: Any) -> PlanView:
    values: dict[str, Any] = {
        "session_id": "s1",
        "revision": 12,
        "policy": "replace",
        "title": None,
        "goal_id": "ship-the-export",
        "steps": [Step(id="fix", title="Fix", status="in_progress")],
        "pending_proposal": None,
        "updated_at": AT,
    }
    return PlanView(**{**values, **changes})


def test_the_panel_footer_is_never_cut_on_a_short_plan() -> None:
    text = shown(render.plan_panel(view()))
    assert "revision 12 · replace · goal ship-the-export" in text
    assert "…" not in text
    assert "revision 3" in shown(render.plan_panel(view(revision=3, steps=[], goal_id=None)))


def test_the_panel_title_is_text_not_markup() -> None:
    text = shown(render.plan_panel(view(title="Fix [bold]parser[/bold]", policy="strict")))
    assert "Fix [bold]parser[/bold]" in text


def test_a_narrow_terminal_still_gets_a_panel() -> None:
    text = shown(render.plan_panel(view(title="T" * 200)), width=40)
    assert max(len(line) for line in text.splitlines()) <= 40


REJECTED = Decision(
    status="rejected",
    revision=1,
    proposal_id="p2",
    current_revision=1,
    violations=[
        Violation(code="blank_step_title", message="Step 3 (index 2) needs a title.", index=2),
        Violation(code="invalid_status", message="Step 1 (index 0) ...", step_id="a", index=0),
    ],
)


def test_decision_names_steps_from_one_and_shows_the_explanation() -> None:
    text = shown(render.decision_text(REJECTED, "Reproduce the failure first"))
    assert "blank_step_title [step 3]: Step 3 (index 2) needs a title." in text
    assert "invalid_status [a]:" in text
    assert "#2" not in text
    assert "explanation: Reproduce the failure first" in text
    assert "explanation" not in shown(render.decision_text(REJECTED, None))
    assert "explanation" not in shown(render.decision_text(REJECTED, {"not": "text"}))


def test_a_long_explanation_is_shown_cut() -> None:
    text = shown(render.decision_text(REJECTED, "e" * 10_000), width=100_000)
    assert "e" * render.MAX_EXPLANATION_SHOWN + "…" in text
    assert "e" * (render.MAX_EXPLANATION_SHOWN + 1) not in text


def test_history_shows_rejection_messages() -> None:
    history = History(
        session_id="s1",
        entries=[
            HistoryEntry(position=2, kind="proposed", proposal_id="p1", at=AT, form="codex"),
            HistoryEntry(
                position=3,
                kind="rejected",
                proposal_id="p1",
                at=AT,
                violations=list(REJECTED.violations),
            ),
        ],
    )
    text = shown(render.history_table(history), width=200)
    assert "blank_step_title [step 3]: Step 3 (index 2) needs a title." in text
    assert "invalid_status [a]: Step 1 (index 0) ..." in text


class EntryWithExplanation(HistoryEntry):
    """A history entry once the read side records the proposal's explanation."""

    explanation: str | None = None


def test_history_shows_an_explanation_when_the_entry_has_one() -> None:
    entry = EntryWithExplanation(
        position=2, kind="proposed", proposal_id="p1", at=AT, form="codex", explanation="Why"
    )
    text = shown(render.history_table(History(session_id="s1", entries=[entry])), width=200)
    assert "explanation: Why" in text


def test_a_task_lists_blockers_owners_and_operations_in_every_terminal_view() -> None:
    from planledger.clients.tui import texts
    from projections.acp import plan_entries
    from projections.compaction import summarise
    from projections.plan_lines import entry_line, plan_lines

    tasks = view(
        policy="tasks",
        goal_id=None,
        steps=[
            Step(id="1", title="Write the test", status="completed"),
            Step(id="2", title="Fix it", status="in_progress", blocked_by=("1",), owner="sub"),
            Step(id="3", title="Ship", status="pending", blocked_by=("1", "2")),
        ],
    )
    panel = shown(render.plan_panel(tasks))
    assert "task list" in panel and "Fix it  2  blocked by 1  @sub" in panel
    tui = texts.plan_text(tasks, 12).plain
    assert "task list" in tui and "Ship  3  blocked by 1, 2" in tui
    assert "[>] Fix it (id 2, in_progress, blocked by 1, owner sub)" in plan_lines(tasks)
    # the handoff and the editor name only the blockers still open
    handoff = summarise(tasks).text
    assert "Task 3 [pending]: Ship (blocked by 2)" in handoff
    assert "Write the test" not in handoff
    assert [e["content"] for e in plan_entries(tasks.steps)] == [
        "Write the test",
        "Fix it [owner sub]",
        "Ship [blocked by 2]",
    ]
    entry = HistoryEntry.model_validate(
        {
            "position": 4,
            "kind": "proposed",
            "proposal_id": "p3",
            "at": AT,
            "form": "task",
            "operation": {"op": "update", "id": "3", "add_blocked_by": ["1", "2"]},
        }
    )
    assert entry_line(entry).endswith("(task): update 3: blocked by 1, 2")
    assert texts.entry_details(entry) == "task · update 3: blocked by 1, 2"
    history = shown(render.history_table(History(session_id="s1", entries=[entry])))
    assert "update 3: blocked by 1, 2" in history
