"""What every agent's hook does with the ledger: record a todo list, refuse it, re-inject it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from domain.errors import ErrorKind, LedgerError, SessionNotFound
from domain.session_fields import NO_ORIGIN, Origin, plain_cwd
from domain.todos import codex_steps
from planledger.clients.hooks.runner import Event, HookInputError

if TYPE_CHECKING:
    from planledger.service import PlanLedger
    from planledger.service.results import Decision


def text_field(event: Event, name: str) -> str:
    """A required, non-empty string field of the event."""
    value = event.get(name)
    if not isinstance(value, str) or not value:
        raise HookInputError(f"the event has no {name!r} string")
    return value


def ledger_session(prefix: str, event: Event) -> str:
    """The ledger session of the agent's session: `<prefix>-<session_id>`."""
    return f"{prefix}-{text_field(event, 'session_id')}"


def todo_steps(tool_input: Any, text_key: str) -> list[dict[str, Any]]:
    """The Codex-form steps of a todo tool's input (`todos: [{<text_key>, status, ...}]`).

    Only the step text and status go to the ledger; the rules judge them as the agent sent them.
    """
    todos = tool_input.get("todos") if isinstance(tool_input, dict) else None
    if not isinstance(todos, list) or not all(isinstance(todo, dict) for todo in todos):
        raise HookInputError("tool_input.todos is not a list of objects")
    return codex_steps(todos, text_key)


def open_if_missing(service: PlanLedger, session_id: str, origin: Origin | None = None) -> None:
    """Open the session (with where it comes from), unless it is open already."""
    origin = origin or NO_ORIGIN
    try:
        service.open_session(
            session_id,
            source=origin.source,
            parent_session_id=origin.parent_session_id,
            cwd=origin.cwd,
        )
    except LedgerError as error:
        if error.kind is not ErrorKind.EXISTS:  # another hook process opened it first
            raise


def event_cwd(event: Event) -> str | None:
    """The agent's working directory, when the event gives one a session can hold."""
    return plain_cwd(event.get("cwd"))


def submit_payload(
    service: PlanLedger,
    session_id: str,
    payload: dict[str, Any],
    *,
    client: str,
    proposal_id: str | None,
    origin: Origin | Callable[[], Origin] | None = None,
    on_first_use: Callable[[], None] | None = None,
) -> Decision:
    """Propose and decide `payload`, opening the session (with `origin`, or what it returns:
    worked out only then) on first use, after `on_first_use` (which may record what came
    before)."""
    try:
        return service.submit(session_id, payload, client=client, proposal_id=proposal_id)
    except SessionNotFound:
        if on_first_use is not None:
            on_first_use()
        open_if_missing(service, session_id, origin() if callable(origin) else origin)
        return service.submit(session_id, payload, client=client, proposal_id=proposal_id)


def submit_steps(
    service: PlanLedger,
    session_id: str,
    steps: Sequence[dict[str, Any]],
    *,
    client: str,
    proposal_id: str | None,
    origin: Origin | None = None,
) -> Decision:
    """Propose and decide the list in the Codex form, opening the session on first use."""
    return submit_payload(
        service,
        session_id,
        {"plan": list(steps)},
        client=client,
        proposal_id=proposal_id,
        origin=origin,
    )


def refusal(decision: Decision, tool: str, *, whole_list: bool = True) -> str:
    """The reason a model reads when its call is refused: every violation's code and message."""
    again = f"call {tool} again with the whole list" if whole_list else f"call {tool} again"
    lines = [
        f"The plan ledger refused this {tool} call; the plan stays at revision "
        f"{decision.revision}. Fix every problem below and {again}:"
    ]
    lines.extend(f"- [{v.code}] {v.message}" for v in decision.violations)
    return "\n".join(lines)


def permission_denial(decision: Decision, tool: str, *, whole_list: bool) -> dict[str, Any]:
    """A `PreToolUse` answer refusing the call (Claude Code's and Codex's protocol), the model
    reading `refusal` as the reason."""
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": refusal(decision, tool, whole_list=whole_list),
        }
    }


def plan_context(service: PlanLedger, session_id: str) -> str | None:
    """The compaction snapshot's text when the session has a plan; None otherwise."""
    try:
        snapshot = service.compaction(session_id)
    except SessionNotFound:
        return None
    if snapshot.state == "unreadable":
        raise LedgerError(f"the plan of {session_id!r} is unreadable: {snapshot.error}")
    return snapshot.text if snapshot.state == "present" else None


def session_start_answer(text: str | None) -> dict[str, Any] | None:
    """`SessionStart`'s answer putting `text` back into the model's context (None: nothing)."""
    if text is None:
        return None
    return {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}}
