"""`import_paths`: read every file of a run, then record each session's calls in order."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

from domain.errors import InvalidId, LedgerError
from domain.ids import validate_id
from planledger.importers.calls import PlanCall, group_by_session, in_record_order
from planledger.importers.claude import claude_calls, read_claude
from planledger.importers.codex import read_codex
from planledger.importers.lines import find_files
from planledger.importers.record import record_sessions
from planledger.importers.report import ImportReport, LineError
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

    Unreadable lines and calls are reported in `errors` and skipped; the rest is recorded.
    A storage failure or a corrupt session raises its LedgerError (what was recorded stays)."""
    report = ImportReport()
    files = find_files(paths, report.errors)
    total = sum(_size(path) for path in files)
    done = 0

    def advance(count: int) -> None:
        nonlocal done
        done += count
        if on_progress is not None:
            on_progress(min(done, total), total)

    if agent == "codex":
        found = [call for path in files for call in read_codex(path, report.errors, advance)]
    else:
        findings = [read_claude(path, report.errors, advance) for path in files]
        found = claude_calls(findings, report.errors, task_list)
    found = _with_valid_ids(found, report.errors)

    def report_session(session_id: str, calls: Sequence[PlanCall], error: LedgerError) -> None:
        first = calls[0]
        report.errors.append(
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
    return report


def _with_valid_ids(calls: list[PlanCall], errors: list[LineError]) -> list[PlanCall]:
    """The calls whose id can be a proposal id; each other one is reported."""
    valid = []
    for call in calls:
        try:
            validate_id(call.call_id, "call id")
        except InvalidId as error:
            errors.append(LineError(path=call.path, line=call.line, message=str(error)))
        else:
            valid.append(call)
    return valid


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
