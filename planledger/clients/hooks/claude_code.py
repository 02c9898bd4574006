"""Claude Code: `TodoWrite` recorded and enforced, the plan re-injected after compact or resume.

- `PreToolUse` of `TodoWrite`: propose `tool_input.todos` (content → step) to `claude-<session_id>`
  with proposal_id = `tool_use_id`; a rejected list is denied with every violation.
- `PostToolUse` of `TodoWrite`: the same call again, so it is recorded if `PreToolUse` did not;
  the same proposal_id with the same content writes nothing.
- `SessionStart` with `source` compact or resume: the compaction snapshot as `additionalContext`.
"""

from __future__ import annotations

from planledger.clients.hooks.record import (
    ledger_session,
    plan_context,
    refusal,
    submit_steps,
    text_field,
    todo_steps,
)
from planledger.clients.hooks.runner import Answer, Event, LazyService

TOOL = "TodoWrite"
PREFIX = "claude"
CLIENT = "hook:claude-code"
REINJECT_SOURCES = frozenset({"compact", "resume"})


def handle(event: Event, service: LazyService) -> Answer:
    name = event.get("hook_event_name")
    if name in ("PreToolUse", "PostToolUse") and event.get("tool_name") == TOOL:
        return todo_write(event, service, before=name == "PreToolUse")
    if name == "SessionStart" and event.get("source") in REINJECT_SOURCES:
        text = plan_context(service(), ledger_session(PREFIX, event))
        if text is None:
            return None
        return {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}}
    return None


def todo_write(event: Event, service: LazyService, *, before: bool) -> Answer:
    session_id = ledger_session(PREFIX, event)
    steps = todo_steps(event.get("tool_input"), "content")
    proposal_id = text_field(event, "tool_use_id")
    decision = submit_steps(service(), session_id, steps, client=CLIENT, proposal_id=proposal_id)
    if not before or decision.status != "rejected":
        return None
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": refusal(decision, TOOL),
        }
    }
