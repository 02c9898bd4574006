"""The proxy's one intervention: an agent's `plan` update recorded in the ledger, and the
notification the editor receives instead (the committed plan, or nothing when rejected)."""

from __future__ import annotations

import contextlib
import hashlib
import re
import sys
import uuid
from collections.abc import Callable
from typing import Any

from domain.errors import SessionExists, SessionNotFound
from domain.forms import derive_step_ids
from domain.todos import codex_steps
from planledger.clients.acp.priorities import PriorityBook
from planledger.service import PlanLedger
from planledger.service.results import Decision
from planledger.storage.file_paths import resolved_url
from projections.acp import plan_entries

CLIENT = "acp-proxy"
MAX_SESSION_ID = 128
_NOT_ID_CHARS = re.compile(r"[^A-Za-z0-9._-]")


def is_plan_update(message: Any) -> bool:
    """A `session/update` notification whose update is a `plan`."""
    if not isinstance(message, dict) or message.get("method") != "session/update":
        return False
    if "id" in message:
        return False
    params = message.get("params")
    update = params.get("update") if isinstance(params, dict) else None
    return isinstance(update, dict) and update.get("sessionUpdate") == "plan"


def ledger_session_id(acp_session_id: str) -> str:
    """`acp-<sessionId>`; characters a ledger id cannot hold become `-`, and an id too long is
    cut and suffixed with a hash of the whole, so distinct ACP sessions stay distinct."""
    candidate = "acp-" + _NOT_ID_CHARS.sub("-", acp_session_id)
    if candidate == "acp-" + acp_session_id and len(candidate) <= MAX_SESSION_ID:
        return candidate
    digest = hashlib.sha256(acp_session_id.encode("utf-8")).hexdigest()[:12]
    return f"{candidate[: MAX_SESSION_ID - 13]}-{digest}"


def codex_payload(entries: Any) -> dict[str, Any]:
    """ACP plan entries as an `update_plan` proposal: content -> step, status as is. Malformed
    entries are passed on as they are, so the ledger records why they were rejected."""
    if not isinstance(entries, list):
        return {"plan": entries}
    return {"plan": codex_steps(entries)}


def entry_priorities(entries: Any) -> dict[str, str]:
    """Step id (derived as the ledger derives it) -> the priority the agent gave the entry."""
    if not isinstance(entries, list) or not all(
        isinstance(e, dict) and isinstance(e.get("content"), str) for e in entries
    ):
        return {}
    ids = derive_step_ids([entry["content"].strip() for entry in entries])
    return {
        step_id: entry["priority"]
        for step_id, entry in zip(ids, entries, strict=True)
        if isinstance(entry.get("priority"), str)
    }


class PlanRecorder:
    """Records each plan update as a proposal in `acp-<sessionId>` (opened if missing)."""

    def __init__(self, service: PlanLedger) -> None:
        self.service = service
        self.priorities = PriorityBook(service.home, resolved_url(service.database))

    def relay(self, message: dict[str, Any]) -> dict[str, Any] | None:
        """The notification to forward: the committed plan re-rendered from the ledger, or
        None when the ledger rejected the plan (recorded with its violations)."""
        params = message["params"]
        session_id = ledger_session_id(str(params.get("sessionId")))
        entries = params["update"].get("entries")
        proposal_id = f"acp-{uuid.uuid4().hex}"
        priorities = entry_priorities(entries)
        self.priorities.record(session_id, proposal_id, priorities)
        decision = self._submit(session_id, codex_payload(entries), proposal_id)
        if decision.status != "committed":
            self.priorities.forget(session_id, proposal_id)
            codes = ", ".join(v.code for v in decision.violations) or decision.status
            print(
                f"planledger acp: plan of {session_id} {decision.status}, not forwarded: {codes}",
                file=sys.stderr,
            )
            return None
        view = self.service.plan_after(session_id, decision)
        update = {**params["update"], "entries": plan_entries(view.steps, priorities)}
        return {**message, "params": {**params, "update": update}}

    def _submit(self, session_id: str, payload: dict[str, Any], proposal_id: str) -> Decision:
        try:
            return self.service.submit(session_id, payload, client=CLIENT, proposal_id=proposal_id)
        except SessionNotFound:
            with contextlib.suppress(SessionExists):  # opened meanwhile by another proxy
                self.service.open_session(session_id, source="acp")
            return self.service.submit(session_id, payload, client=CLIENT, proposal_id=proposal_id)


def open_recorder(open_service: Callable[[], PlanLedger]) -> PlanRecorder:
    return PlanRecorder(open_service())
