"""What a tool call answers: structured content (with its output schema) and the text a model
reads; every failure becomes one `ToolFailure` naming its code."""

from __future__ import annotations

import logging
from typing import Any

from mcp.types import CallToolResult, TextContent

from domain.errors import ErrorKind, LedgerError, StorageUnavailable, error_line
from planledger.clients.mcp.session import BadArgument
from planledger.service.results import Decision
from planledger.storage.errors import unavailable_cause
from projections.plan_lines import history_lines, plan_lines, violation_lines
from projections.shapes import History, PlanView

log = logging.getLogger(__name__)


class ToolFailure(Exception):
    """A tool call that failed before it got a result: the model reads its text (a tool error
    naming each problem's code)."""


class WriteResult(Decision):
    """A write's structured result: the decision, the session it went to, the plan after it,
    and the text content again (Codex 0.171 shows its model only the structured content)."""

    session_id: str
    plan: PlanView
    message: str = ""


WRITE_OUTPUT_SCHEMA: dict[str, Any] = WriteResult.model_json_schema(by_alias=True)
PLAN_OUTPUT_SCHEMA: dict[str, Any] = PlanView.model_json_schema(by_alias=True)
HISTORY_OUTPUT_SCHEMA: dict[str, Any] = History.model_json_schema(by_alias=True)

HINT_OF_KIND = {
    ErrorKind.NOT_FOUND: " Check the id, or leave session_id out to use this server's session.",
    ErrorKind.INVALID: " Fix the argument and call again.",
    ErrorKind.UNAVAILABLE: " The ledger's database cannot be used right now: retry later.",
    ErrorKind.CORRUPT: " Its stored history breaks the rules: `planledger verify` shows where.",
    ErrorKind.EXISTS: "",
    ErrorKind.REJECTED: "",
    ErrorKind.CONFLICT: "",
}


def result(text: str, data: dict[str, Any], *, is_error: bool = False) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=data, is_error=is_error
    )


def write_result(tool: str, decision: Decision, session_id: str, plan: PlanView) -> CallToolResult:
    """Committed: the plan as lines. Rejected or conflict: a tool error listing every violation."""
    text = write_text(tool, decision, session_id, plan)
    data = WriteResult(
        **decision.model_dump(), session_id=session_id, plan=plan, message=text
    ).model_dump(mode="json", by_alias=True)
    return result(text, data, is_error=decision.status != "committed")


def write_text(tool: str, decision: Decision, session_id: str, plan: PlanView) -> str:
    if decision.status == "committed":
        head = f"committed revision {decision.revision} of the plan of session {session_id}:"
        return "\n".join([head, *plan_lines(plan)])
    if decision.status == "conflict":
        head = (
            f"conflict: the plan of session {session_id} is at revision "
            f"{decision.current_revision}; nothing was committed. Read it (read_plan) and send "
            f"your update against revision {decision.current_revision}:"
        )
    else:
        head = (
            f"rejected: the plan of session {session_id} stays at revision {decision.revision}. "
            f"Fix every violation below and call {tool} again with the complete plan:"
        )
    return "\n".join([head, *violation_lines(decision.violations)])


def plan_result(view: PlanView) -> CallToolResult:
    return result("\n".join(plan_lines(view)), view.model_dump(mode="json", by_alias=True))


def history_result(history: History) -> CallToolResult:
    return result("\n".join(history_lines(history)), history.as_json())


def refusal(violations: list[BadArgument]) -> ToolFailure:
    """A call refused before it reached the ledger, naming every problem's code."""
    return ToolFailure("\n".join(str(v) for v in violations))


def failure(error: Exception) -> ToolFailure:
    """A ledger error (or anything unexpected) as the tool error a model reads."""
    if isinstance(error, BadArgument):
        return ToolFailure(str(error))
    if isinstance(error, LedgerError):
        text = error.message
        if not text.startswith(error.code):
            text = f"{error.code}: {text}"
        hint = HINT_OF_KIND[error.kind]
        return ToolFailure(f"{text.rstrip('.')}.{hint}" if hint else text)
    cause = unavailable_cause(error)  # a read the service did not wrap
    if cause is not None:
        return failure(StorageUnavailable(f"storage unavailable: {cause}"))
    log.exception("unexpected error in a plan tool")
    return ToolFailure(f"internal_error: {error_line(error)}")
