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
    session_start_answer,
    submit_steps,
    text_field,
    todo_steps,
)
from planledger.clients.hooks.runner import Answer, Event, HookContext

TOOL = "TodoWrite"
DEADLINE_SECONDS = 8.0  # under the 10 s timeout `hooks install` sets
PREFIX = "claude"
CLIENT = "hook:claude-code"
REINJECT_SOURCES = frozenset({"compact", "resume"})


def handle(event: Event, context: HookContext) -> Answer:
    name = event.get("hook_event_name")
    if name in ("PreToolUse", "PostToolUse") and event.get("tool_name") == TOOL:
        return todo_write(event, context, before=name == "PreToolUse")
    if name == "SessionStart" and event.get("source") in REINJECT_SOURCES:
        return session_start_answer(plan_context(context.service(), ledger_session(PREFIX, event)))
    return None


def todo_write(event: Event, context: HookContext, *, before: bool) -> Answer:
    session_id = ledger_session(PREFIX, event)
    steps = todo_steps(event.get("tool_input"), "content")
    proposal_id = text_field(event, "tool_use_id")
    decision = submit_steps(
        context.service(), session_id, steps, client=CLIENT, proposal_id=proposal_id
    )
    if not before or decision.status != "rejected":
        return None
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": refusal(decision, TOOL),
        }
    }
