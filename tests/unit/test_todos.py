"""One todo-list mapping for the importer, the hooks and the ACP proxy."""

from __future__ import annotations

from domain.forms import parse_proposal
from domain.models import Policy
from domain.rules import check_snapshot
from domain.todos import gemini_todo_payload
from planledger.clients.acp.recording import codex_payload
from planledger.clients.hooks.record import todo_steps
from planledger.importers.claude import todos_payload
from planledger.service.ledger import fingerprint

TODOS = [
    {"content": "Read the test", "status": "completed", "activeForm": "Reading", "id": "1"},
    {"content": "Fix it", "status": "in_progress", "activeForm": "Fixing", "priority": "high"},
]


def test_a_todo_list_is_the_same_proposal_whoever_records_it() -> None:
    imported = todos_payload(TODOS)
    hooked = {"plan": todo_steps({"todos": TODOS}, "content")}
    relayed = codex_payload(TODOS)
    assert (
        imported
        == hooked
        == relayed
        == {
            "plan": [
                {"step": "Read the test", "status": "completed"},
                {"step": "Fix it", "status": "in_progress"},
            ]
        }
    )
    assert fingerprint(imported) == fingerprint(hooked) == fingerprint(relayed)


def test_gemini_descriptions_and_malformed_items() -> None:
    gemini = todo_steps({"todos": [{"description": "Plan", "status": "cancelled"}]}, "description")
    assert gemini == [{"step": "Plan", "status": "cancelled"}]
    assert todos_payload(["not an object"]) == {"plan": ["not an object"]}  # the rules name it


def test_gemini_statuses_are_kept_as_sent_and_committed() -> None:
    payload = gemini_todo_payload(
        [
            {"description": "Write", "status": "in_progress"},
            {"description": "Test", "status": "blocked"},
        ]
    )
    assert payload == {
        "plan": [{"step": "Write", "status": "in_progress"}, {"step": "Test", "status": "blocked"}]
    }
    parsed = parse_proposal(payload)
    assert parsed.candidate is not None and not parsed.violations
    assert check_snapshot(Policy.REPLACE, parsed.candidate) == []
