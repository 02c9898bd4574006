"""Codex: its hooks cannot intercept `update_plan`, so the hook imports the rollout instead.

- `Stop` and `PostCompact`: import the session's new `update_plan` calls from `transcript_path`
  (the importer: incremental and idempotent, each call id recorded once; a fork's or a
  subagent's rollout is filed under its own session, its parent's replayed calls left out).
- `SessionStart` with `source` resume or compact: import first (a crash may have skipped a
  `Stop`), then the compaction snapshot of `codex-<session_id>` as `additionalContext`.
"""

from __future__ import annotations

from pathlib import Path

from planledger.clients.hooks.record import (
    ledger_session,
    plan_context,
    session_start_answer,
)
from planledger.clients.hooks.runner import Answer, Event, HookContext

DEADLINE_SECONDS = 25.0  # an import reads the rollout; under the 30 s timeout `hooks install` sets
PREFIX = "codex"
SOURCE = "codex"
IMPORT_EVENTS = frozenset({"Stop", "PostCompact"})
REINJECT_SOURCES = frozenset({"resume", "compact"})


def handle(event: Event, context: HookContext) -> Answer:
    name = event.get("hook_event_name")
    if name in IMPORT_EVENTS:
        import_rollout(event, context)
        return None
    if name == "SessionStart" and event.get("source") in REINJECT_SOURCES:
        session_id = ledger_session(PREFIX, event)
        try:
            import_rollout(event, context)
        except Exception as error:  # the plan recorded so far is still worth re-injecting
            context.warn(f"rollout not imported: {type(error).__name__}: {error}")
        return session_start_answer(plan_context(context.service(), session_id))
    return None


def import_rollout(event: Event, context: HookContext) -> None:
    """Record the rollout's calls not recorded yet; unreadable lines become one warning."""
    transcript = event.get("transcript_path")
    if not isinstance(transcript, str) or not transcript:
        return  # Codex sends null for a session without a rollout file (ephemeral)
    from planledger.importers import import_paths

    report = import_paths(context.service(), "codex", [Path(transcript)], source=SOURCE)
    if report.errors:
        first = report.errors[0]
        more = f" (+{report.error_count - 1:,} more)" if report.error_count > 1 else ""
        context.warn(f"{first.path}:{first.line}: {first.message}{more}")
