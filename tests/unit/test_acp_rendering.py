"""The ACP plan rendering and the proxy's mapping of ACP entries to ledger proposals."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from acp.schema import AgentPlanUpdate, PlanEntry

from domain.forms import parse_proposal
from domain.models import Policy, Step
from domain.rules import check_snapshot
from planledger.clients.acp.priorities import PriorityBook
from planledger.clients.acp.recording import (
    codex_payload,
    entry_priorities,
    is_plan_update,
    ledger_session_id,
)
from planledger.storage.file_paths import store_key
from projections.acp import plan_entries, plan_update

STEPS = [
    Step(id="a", title="Inspect", status="completed"),
    Step(id="b", title="Drop the hack", status="cancelled"),
    Step(id="c", title="Fix", status="in_progress"),
    Step(id="d", title="Document", status="pending"),
]


def test_entries_leave_cancelled_steps_out_and_default_the_priority() -> None:
    assert plan_entries(STEPS, {"c": "high", "d": "urgent"}) == [
        {"content": "Inspect", "priority": "medium", "status": "completed"},
        {"content": "Fix", "priority": "high", "status": "in_progress"},
        {"content": "Document", "priority": "medium", "status": "pending"},
    ]


@pytest.mark.parametrize("steps", [STEPS, [], STEPS[1:2]])
def test_every_update_is_a_complete_valid_sdk_plan(steps: list[Step]) -> None:
    update = plan_update(steps)
    model = AgentPlanUpdate.model_validate(update)
    assert (
        len(model.entries) == len(update["entries"]) == sum(s.status != "cancelled" for s in steps)
    )
    for entry in update["entries"]:
        PlanEntry.model_validate(entry)


def test_entries_become_a_codex_proposal_with_the_ledgers_step_ids() -> None:
    entries = [
        {"content": " Fix it ", "priority": "high", "status": "in_progress"},
        {"content": "Fix it", "priority": "low", "status": "pending"},
    ]
    payload = codex_payload(entries)
    assert payload == {
        "plan": [
            {"step": " Fix it ", "status": "in_progress"},
            {"step": "Fix it", "status": "pending"},
        ]
    }
    parsed = parse_proposal(payload)
    assert parsed.candidate is not None and not parsed.violations
    ids = [step.id for step in parsed.candidate.steps]
    assert entry_priorities(entries) == {ids[0]: "high", ids[1]: "low"}


@pytest.mark.parametrize(
    ("entries", "code"),
    [
        ({"content": "x"}, "invalid_field"),
        (["not an entry"], "invalid_field"),
        ([{"status": "pending"}], "blank_step_title"),
    ],
)
def test_malformed_entries_reach_the_ledger_to_be_rejected(entries: Any, code: str) -> None:
    assert entry_priorities(entries) == {}
    parsed = parse_proposal(codex_payload(entries))
    codes = [v.code for v in parsed.violations]
    if parsed.candidate is not None:
        codes += [v.code for v in check_snapshot(Policy.REPLACE, parsed.candidate)]
    assert code in codes


def test_ledger_session_ids() -> None:
    assert ledger_session_id("sess_1.A-b") == "acp-sess_1.A-b"
    odd = ledger_session_id("a/b:c")
    assert odd.startswith("acp-a-b-c-") and odd != ledger_session_id("a:b/c")
    long = ledger_session_id("x" * 300)
    assert len(long) == 128 and long != ledger_session_id("x" * 299)


def test_only_plan_notifications_are_plan_updates() -> None:
    plan = {"method": "session/update", "params": {"sessionId": "s", "update": {}}}
    plan["params"]["update"] = {"sessionUpdate": "plan", "entries": []}  # type: ignore[index]
    assert is_plan_update(plan)
    assert not is_plan_update({**plan, "id": 3})
    assert not is_plan_update({**plan, "method": "session/prompt"})
    chunk = {"method": "session/update", "params": {"update": {"sessionUpdate": "plan_x"}}}
    assert not is_plan_update(chunk)
    assert not is_plan_update([plan])


def test_priorities_survive_a_new_book_and_stay_apart_per_database(tmp_path: Path) -> None:
    url = "postgresql://u:secret@host/db"
    PriorityBook(tmp_path, url).record("s", "p1", {"a": "high", "b": "medium", "c": "bogus"})
    assert PriorityBook(tmp_path, url).lookup("s", "p1") == {"a": "high"}
    assert PriorityBook(tmp_path, "sqlite:///other").lookup("s", "p1") == {}
    assert store_key(url) == store_key("postgresql://u@host/db")
    book = PriorityBook(tmp_path, url)
    book.forget("s", "p1")
    assert book.lookup("s", "p1") == {}
    memory = PriorityBook(None, url)
    memory.record("s", "p2", {"a": "low"})
    assert memory.lookup("s", "p2") == {"a": "low"}


def test_a_blocked_step_an_agent_sent_shows_pending_and_named() -> None:
    steps = [
        Step(id="a", title="Write", status="in_progress"),
        Step(id="b", title="Test", status="blocked"),
    ]
    assert plan_entries(steps)[1] == {
        "content": "Test [blocked]",
        "priority": "medium",
        "status": "pending",
    }
    PlanEntry.model_validate(plan_entries(steps)[1])
