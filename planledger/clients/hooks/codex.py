"""Codex: `update_plan` decided as the model sends it, recorded once Codex applied it; the
rollout imported at the end of each turn for what no hook saw; the plan re-injected.

- `PreToolUse` of `update_plan` (Codex 0.171 fires it, `tool_use_id` = the call id, before
  Codex parses the arguments): a list the ledger would reject is recorded as rejected and
  denied (`permissionDecision: "deny"`; Codex tells the model "Tool call blocked by PreToolUse
  hook: <reason>"); one it would commit is only checked, since Codex may still refuse it (a
  status its schema lacks, such as `cancelled`, fails its parsing).
- `PostToolUse` of `update_plan` (only for a call Codex applied): recorded, proposal id = the
  call id, so the import below skips it.
- `Stop` and `PostCompact`: import the session's new `update_plan` calls from `transcript_path`
  (the importer: incremental and idempotent, each call id recorded once; calls Codex did not
  apply and MCP calls left out; a fork's or a subagent's rollout filed under its own session).
- `SessionStart` with `source` resume or compact: import first (a crash may have skipped a
  `Stop`), then the compaction snapshot of `codex-<session_id>` as `additionalContext`.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from domain.session_fields import Origin
from planledger.clients.hooks.record import (
    event_cwd,
    ledger_session,
    permission_denial,
    plan_context,
    session_start_answer,
    submit_payload,
    text_field,
)
from planledger.clients.hooks.runner import Answer, Event, HookContext

if TYPE_CHECKING:
    from planledger.service.results import Decision

DEADLINE_SECONDS = 25.0  # an import reads the rollout; under the 30 s timeout `hooks install` sets
TOOL_DEADLINE_SECONDS = 8.0  # a tool call's decision, under its 10 s timeout
PREFIX = "codex"
SOURCE = "codex"
CLIENT = "hook:codex"
TOOL = "update_plan"
IMPORT_EVENTS = frozenset({"Stop", "PostCompact"})
REINJECT_SOURCES = frozenset({"resume", "compact"})


def deadline_for(event: Event) -> float:
    tool_event = event.get("hook_event_name") in ("PreToolUse", "PostToolUse")
    return TOOL_DEADLINE_SECONDS if tool_event else DEADLINE_SECONDS


def handle(event: Event, context: HookContext) -> Answer:
    name = event.get("hook_event_name")
    if name == "PreToolUse" and event.get("tool_name") == TOOL:
        return plan_before(event, context)
    if name == "PostToolUse" and event.get("tool_name") == TOOL:
        plan_after(event, context)
        return None
    if name in IMPORT_EVENTS:
        import_rollout(event, context)
        return None
    if name == "SessionStart" and event.get("source") in REINJECT_SOURCES:
        session_id = ledger_session(PREFIX, event)
        try:
            import_rollout(event, context)
        except Exception as error:  # the plan recorded so far is still worth re-injecting
            context.warn(f"rollout not imported: {type(error).__name__}: {error}")
        text = plan_context(context.service(), session_id)
        if text is None or holds(event, text):
            return None
        return session_start_answer(text)
    return None


def holds(event: Event, text: str) -> bool:
    """Whether Codex's model holds `text` already or gets it with its next request: a developer
    message after the rollout's last compaction has it, or this hook gave it and Codex has not
    written it yet (it writes a SessionStart context with the next turn: a `resume` that
    compacts before its turn fires SessionStart twice, `resume` then `compact`). Remembers
    `text` as given otherwise."""
    transcript = event.get("transcript_path")
    if not isinstance(transcript, str) or not transcript:
        return False
    records, size = rollout_records(transcript)
    compactions = [offset for offset, record in records if record.get("type") == "compacted"]
    given = [offset for offset, record in records if text in _developer_text(record)]
    if given and given[-1] > max(compactions, default=-1):
        return True
    mark = mark_path(event)
    digest = hashlib.sha256(text.encode()).hexdigest()
    try:
        noted = json.loads(mark.read_text())
    except (OSError, ValueError):
        noted = None
    if isinstance(noted, dict) and noted.get("digest") == digest:
        since = noted.get("offset")
        if isinstance(since, int) and not any(offset >= since for offset in given):
            return True  # given, not written yet
    mark.parent.mkdir(parents=True, exist_ok=True)
    mark.write_text(json.dumps({"digest": digest, "offset": size}))
    return False


def rollout_records(transcript: str) -> tuple[list[tuple[int, dict[str, Any]]], int]:
    """(byte offset, record) of the rollout's compactions and developer messages, and its
    size (none, 0 when unreadable)."""
    try:
        data = Path(transcript).read_bytes()
    except OSError:
        return [], 0
    records, offset = [], 0
    for line in data.splitlines(keepends=True):
        if b'"compacted"' in line or b'"developer"' in line:
            try:
                record = json.loads(line)
            except ValueError:
                record = None
            if isinstance(record, dict):
                records.append((offset, record))
        offset += len(line)
    return records, len(data)


def _developer_text(record: dict[str, Any]) -> str:
    payload = record.get("payload")
    if not isinstance(payload, dict) or payload.get("role") != "developer":
        return ""
    content = payload.get("content")
    return " ".join(str(part.get("text", "")) for part in content or [] if isinstance(part, dict))


def mark_path(event: Event) -> Path:
    from planledger.storage.settings import home_dir

    return home_dir() / "hooks" / "codex" / ledger_session(PREFIX, event)


def plan_before(event: Event, context: HookContext) -> Answer:
    """Deny (and record as rejected) a list the ledger refuses; let any other one run."""
    service = context.service()
    session_id = ledger_session(PREFIX, event)
    payload = _payload(event)
    if not service.check(session_id, payload).violations:
        return None
    decision = _submit(event, context, payload)
    return permission_denial(decision, TOOL, whole_list=True) if decision.violations else None


def plan_after(event: Event, context: HookContext) -> None:
    """The list Codex applied, recorded under its call id (once: a retried hook writes nothing)."""
    _submit(event, context, _payload(event))


def _payload(event: Event) -> dict[str, Any]:
    tool_input = event.get("tool_input")
    return dict(tool_input) if isinstance(tool_input, dict) else {"plan": tool_input}


def _submit(event: Event, context: HookContext, payload: dict[str, Any]) -> Decision:
    return submit_payload(
        context.service(),
        ledger_session(PREFIX, event),
        payload,
        client=CLIENT,
        proposal_id=text_field(event, "tool_use_id"),
        origin=lambda: origin_of(event),
    )


def origin_of(event: Event) -> Origin:
    """Where the session comes from: its parent as the rollout's first `session_meta` names
    it (a fork's, a spawned subagent's), read only when the session is opened."""
    parent = None
    transcript = event.get("transcript_path")
    if isinstance(transcript, str) and transcript:
        from planledger.importers.codex import rollout_parent

        parent = rollout_parent(Path(transcript))
    return Origin(source=SOURCE, parent_session_id=parent, cwd=event_cwd(event))


def import_rollout(event: Event, context: HookContext) -> None:
    """Record the rollout's calls not recorded yet; unreadable lines become one warning."""
    transcript = event.get("transcript_path")
    if not isinstance(transcript, str) or not transcript:
        return  # Codex sends null for a session without a rollout file (ephemeral)
    from planledger.importers.run import import_paths

    report = import_paths(context.service(), "codex", [Path(transcript)], source=SOURCE)
    if report.errors:
        first = report.errors[0]
        more = f" (+{report.error_count - 1:,} more)" if report.error_count > 1 else ""
        context.warn(f"{first.path}:{first.line}: {first.message}{more}")
