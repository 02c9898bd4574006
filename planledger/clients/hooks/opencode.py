"""OpenCode: the events the ledger's plugin (`hooks install opencode`) hands `planledger hook
opencode`, one JSON object on stdin each, answered with one on stdout.

- `tool.execute.before` of `todowrite` (`session_id`, `call_id`, `tool_input.todos`: the complete
  list of `{content, status, priority}`): proposed to `opencode-<session_id>` in the Codex form
  (`content` → step, `status` as sent; the statuses `todowrite` declares are the Codex form's)
  with proposal id = the call id, and decided. Rejected: `{"decision": "deny", "reason": ...}`,
  which the plugin throws, so OpenCode fails the call with that message for the model to read.
  The plugin asks only for a list OpenCode itself will store (every item has the three string
  fields it requires): one call per `todowrite`, and nothing committed that OpenCode refused.
- `experimental.session.compacting` (`session_id`): `{"context": <the plan summary>}`, which the
  plugin adds to the compaction's context and to the system prompt of the next request.
"""

from __future__ import annotations

from domain.session_fields import Origin
from domain.todos import opencode_todo_payload
from planledger.clients.hooks.record import (
    event_cwd,
    ledger_session,
    plan_context,
    refusal,
    submit_payload,
    text_field,
)
from planledger.clients.hooks.runner import Answer, Event, HookContext, HookInputError

DEADLINE_SECONDS = 6.0  # under the plugin's 8 s limit
PREFIX = "opencode"
SOURCE = "opencode"
CLIENT = "hook:opencode"
TOOL = "todowrite"


def handle(event: Event, context: HookContext) -> Answer:
    name = event.get("hook_event_name")
    if name == "tool.execute.before":
        return todowrite(event, context)
    if name == "experimental.session.compacting":
        text = plan_context(context.service(), ledger_session(PREFIX, event))
        return {"context": text} if text else None
    return None


def todowrite(event: Event, context: HookContext) -> Answer:
    tool_input = event.get("tool_input")
    todos = tool_input.get("todos") if isinstance(tool_input, dict) else None
    if not isinstance(todos, list):
        raise HookInputError("tool_input.todos is not a list")
    decision = submit_payload(
        context.service(),
        ledger_session(PREFIX, event),
        opencode_todo_payload(todos),
        client=CLIENT,
        proposal_id=text_field(event, "call_id"),
        origin=Origin(source=SOURCE, cwd=event_cwd(event)),
    )
    if decision.status == "committed":
        return None
    return {"decision": "deny", "reason": refusal(decision, TOOL, whole_list=True)}
