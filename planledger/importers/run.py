"""`import_paths`: read every file of a run, then record each session's calls in order."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

from domain.errors import InvalidId, InvalidPayload, LedgerError
from domain.ids import validate_id
from domain.limits import check_payload
from planledger.importers.calls import PlanCall, group_by_session, in_record_order
from planledger.importers.claude import claude_calls, read_claude
from planledger.importers.codex import read_codex
from planledger.importers.lines import find_files
from planledger.importers.record import record_sessions
from planledger.importers.report import ErrorLog, Errors, ImportReport, LineError
from planledger.service import PlanLedger

Agent = Literal["codex", "claude"]


def import_paths(
    service: PlanLedger,
    agent: Agent,
    paths: Sequence[Path],
    *,
    on_progress: Callable[[int, int], None] | None = None,
    source: str | None = None,
    task_list: str | None = None,
) -> ImportReport:
    """Record the plan calls of `agent`'s transcripts under `paths` (files, or folders searched
    recursively for `*.jsonl`). `on_progress(bytes_read, total_bytes)` follows the reading.
    Sessions opened here get `source` (default `import:<agent>`) as their origin; `task_list`
    names the ledger session of Claude Code's task-tool calls (default: each session's own).

    Unreadable lines and calls are reported in `errors` (the first of each file; the rest
    counted) and skipped; the rest is recorded. A storage failure or a corrupt session raises
    its LedgerError (what was recorded stays)."""
    report = ImportReport()
    errors = ErrorLog()
    files = find_files(paths, errors)
    total = sum(_size(path) for path in files)
    done = 0

    def advance(count: int) -> None:
        nonlocal done
        done += count
        if on_progress is not None:
            on_progress(min(done, total), total)

    if agent == "codex":
        found = [call for path in files for call in read_codex(path, errors, advance)]
    else:
        findings = [read_claude(path, errors, advance) for path in files]
        found = claude_calls(findings, errors, task_list)
    found = _recordable(found, errors)

    def report_session(session_id: str, calls: Sequence[PlanCall], error: LedgerError) -> None:
        first = calls[0]
        errors.append(
            LineError(
                path=first.path,
                line=first.line,
                message=f"{len(calls)} call(s) of session {session_id} not imported: {error}",
            )
        )

    sessions = [
        (session_id, in_record_order(calls))
        for session_id, calls in sorted(group_by_session(found).items())
    ]
    report.sessions += record_sessions(
        service, sessions, f"import:{agent}", report_session, source or f"import:{agent}"
    )
    report.errors, report.error_count = errors.report(), len(errors)
    return report


def _recordable(calls: list[PlanCall], errors: Errors) -> list[PlanCall]:
    """The calls whose id can be a proposal id and whose payload the ledger can read (not
    nested too deep, say); each other one is reported, so it cannot stop its session's."""
    valid = []
    for call in calls:
        try:
            validate_id(call.call_id, "call id")
            if call.payload is not None:
                check_payload(call.payload)
        except InvalidId as error:
            errors.append(LineError(path=call.path, line=call.line, message=str(error)))
        except InvalidPayload as error:
            message = f"call {call.call_id}: {error}"
            errors.append(LineError(path=call.path, line=call.line, message=message))
        else:
            valid.append(call)
    return valid


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
