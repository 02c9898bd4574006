"""Gemini CLI: `write_todos` recorded and enforced, the plan re-injected on resume.

- `BeforeTool` of `write_todos`: propose `tool_input.todos` (description → step) to
  `gemini-<session_id>`; a rejected list gets `{"decision": "deny", "reason": ...}`, which Gemini
  sends to the model as the tool's error. Gemini's event carries no tool-call id, so the ledger
  names the proposal.
- `SessionStart` with `source` resume: the compaction snapshot as `additionalContext`.
"""

from __future__ import annotations

from planledger.clients.hooks.record import (
    ledger_session,
    plan_context,
    refusal,
    session_start_answer,
    submit_steps,
    todo_steps,
)
from planledger.clients.hooks.runner import Answer, Event, HookContext

TOOL = "write_todos"
DEADLINE_SECONDS = 8.0  # under the 10 s timeout `hooks install` sets
PREFIX = "gemini"
CLIENT = "hook:gemini"


def handle(event: Event, context: HookContext) -> Answer:
    name = event.get("hook_event_name")
    if name == "BeforeTool" and event.get("tool_name") == TOOL:
        steps = todo_steps(event.get("tool_input"), "description")
        session_id = ledger_session(PREFIX, event)
        decision = submit_steps(
            context.service(), session_id, steps, client=CLIENT, proposal_id=None
        )
        if decision.status == "rejected":
            return {"decision": "deny", "reason": refusal(decision, TOOL)}
        return None
    if name == "SessionStart" and event.get("source") == "resume":
        return session_start_answer(plan_context(context.service(), ledger_session(PREFIX, event)))
    return None
