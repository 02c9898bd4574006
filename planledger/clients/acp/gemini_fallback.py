"""Gemini CLI behind the proxy: its plan from its chat recording, since its ACP mode tells none.

Gemini CLI 0.61 in ACP mode sends no `plan` updates and runs no hooks; its `write_todos` calls
reach the editor as tool calls titled "Set 2 todo(s)", without the list. Its chat recording
(`~/.gemini/tmp/<project>/chats/`, named after the ACP session id) holds each call with its
arguments and its outcome. So when such a call finishes, and again when the prompt is answered,
(once the recording holds it: Gemini may write it a moment after telling the editor) the proxy
imports that recording (as `planledger import gemini` does: idempotent by call id,
into `gemini-<sessionId>`, the session the hooks write) and sends the editor the committed plan
as a `plan` update."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import Any

from domain.errors import SessionNotFound
from planledger.importers.gemini import find_recording
from planledger.importers.run import import_paths
from planledger.service import PlanLedger
from projections.acp import plan_update

SOURCE = "acp-proxy"
TOOL_CALL_PREFIX = "write_todos"  # Gemini's tool call ids: `write_todos__call_0001_00`
FINISHED = frozenset({"completed", "failed"})


def finished_todo_call(message: Any) -> tuple[str, str] | None:
    """(ACP session id, tool call id) of a `write_todos` call that has just finished."""
    if not isinstance(message, dict) or message.get("method") != "session/update":
        return None
    params = message.get("params")
    if not isinstance(params, dict):
        return None
    update = params.get("update")
    if not isinstance(update, dict) or update.get("status") not in FINISHED:
        return None
    if update.get("sessionUpdate") not in ("tool_call", "tool_call_update"):
        return None
    call_id = update.get("toolCallId")
    if not isinstance(call_id, str) or not call_id.startswith(TOOL_CALL_PREFIX):
        return None
    session_id = params.get("sessionId")
    return (session_id, call_id) if isinstance(session_id, str) else None


class RecordingFollower:
    """Imports a Gemini session's recording on demand; the `plan` notification to send the
    editor when the committed plan moved on since the last one it was sent."""

    def __init__(self, service: PlanLedger, config: Path) -> None:
        self.service, self.config = service, config
        self._sent: dict[str, int] = {}  # ACP session id -> revision the editor last got

    def holds(self, acp_session_id: str, call_id: str) -> bool:
        """Whether the session's recording holds call `call_id` with its outcome."""
        recording = find_recording(self.config, acp_session_id)
        if recording is None:
            return False
        try:
            text = recording.read_bytes()
        except OSError:
            return False
        return f'"functionResponse":{{"id":"{call_id}"'.encode() in text

    def catch_up(self, acp_session_id: str) -> dict[str, Any] | None:
        """Import the session's recording; the `plan` notification to send, if any."""
        recording = find_recording(self.config, acp_session_id)
        if recording is None:
            return None
        report = import_paths(self.service, "gemini", [recording], source=SOURCE)
        # A recording's last line may be half written while Gemini appends it: the next catch-up
        # reads it whole, so reading errors are not reported here.
        for session in report.sessions:
            if session.rejected:
                print(
                    f"planledger acp: {session.rejected} write_todos call(s) of "
                    f"{session.session_id} rejected by the ledger (see plan history)",
                    file=sys.stderr,
                )
        with contextlib.suppress(SessionNotFound):
            view = self.service.plan(f"gemini-{acp_session_id}")
            if view.revision > self._sent.get(acp_session_id, 0):
                self._sent[acp_session_id] = view.revision
                return {
                    "jsonrpc": "2.0",
                    "method": "session/update",
                    "params": {"sessionId": acp_session_id, "update": plan_update(view.steps)},
                }
        return None
