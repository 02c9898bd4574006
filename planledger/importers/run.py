"""`import_paths`: read every file of a run, then record each session's calls in order (a
large run in shares, at once in several processes: `planledger.importers.parallel`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from domain.errors import InvalidId, InvalidPayload, LedgerError
from domain.ids import validate_id
from domain.limits import check_payload
from planledger.importers.calls import PlanCall, group_by_session, in_record_order
from planledger.importers.claude import claude_calls, read_claude
from planledger.importers.codex import read_codex
from planledger.importers.gemini import read_gemini
from planledger.importers.lines import find_files
from planledger.importers.opencode import PATTERNS as OPENCODE_PATTERNS
from planledger.importers.opencode import read_opencode
from planledger.importers.parallel import in_shares
from planledger.importers.record import record_sessions
from planledger.importers.report import ErrorLog, Errors, ImportReport, LineError, SessionImport
from planledger.service import PlanLedger
from planledger.storage.settings import patient
from projections.gc_pause import paused_gc

Agent = Literal["codex", "claude", "gemini", "opencode"]
Session = tuple[str, Sequence[PlanCall]]
# Below these, a share of the work costs more to start in another process than it saves.
SHARED_READ_BYTES = 16 << 20
SHARED_RECORD_CALLS = 1000
SHARED_LOCK_SECONDS = 60  # what a writer of a shared import waits for the others' transactions


def import_paths(
    service: PlanLedger,
    agent: Agent,
    paths: Sequence[Path],
    *,
    on_progress: Callable[[int, int], None] | None = None,
    source: str | None = None,
    task_list: str | None = None,
    shares: int = 1,
) -> ImportReport:
    """Record the plan calls of `agent`'s transcripts under `paths` (files, or folders searched
    recursively for `*.jsonl`). `on_progress(bytes_read, total_bytes)` follows the reading.
    Sessions opened here get `source` (default `import:<agent>`) as their origin; `task_list`
    names the ledger session of Claude Code's task-tool calls (default: each session's own).
    `shares` > 1 spreads a large run's reading and recording over that many processes
    (`planledger.importers.parallel`; the same report as one).

    Unreadable lines and calls are reported in `errors` (the first of each file; the rest
    counted) and skipped; the rest is recorded. A storage failure or a corrupt session raises
    its LedgerError (what was recorded stays)."""
    report = ImportReport()
    errors = ErrorLog()
    files = find_files(paths, errors, OPENCODE_PATTERNS if agent == "opencode" else ("*.jsonl",))
    sizes = [_size(path) for path in files]
    total = sum(sizes)
    done = 0

    def advance(count: int) -> None:
        nonlocal done
        done += count
        if on_progress is not None:
            on_progress(min(done, total), total)

    with paused_gc():  # the calls read are held to the end: a collection would scan them all
        readers = shares if total >= SHARED_READ_BYTES else 1
        findings, refused = _read(agent, files, sizes, errors, advance, readers)
        if agent in ("codex", "gemini", "opencode"):
            found = [call for calls in findings for call in calls]
        else:
            found = _recordable(claude_calls(findings, errors, task_list), refused)
        for error in refused:  # after every error of reading, as they are found
            errors.append(error)
        sessions: list[Session] = [
            (session_id, in_record_order(calls))
            for session_id, calls in sorted(group_by_session(found).items())
        ]
        writers = shares if len(found) >= SHARED_RECORD_CALLS else 1
        client = f"import:{agent}"
        report.sessions += _record(service, sessions, client, source or client, errors, writers)
    report.errors, report.error_count = errors.report(), len(errors)
    return report


def _read(
    agent: Agent,
    files: list[Path],
    sizes: list[int],
    errors: ErrorLog,
    advance: Callable[[int], None],
    shares: int,
) -> tuple[list[Any], list[LineError]]:
    """What each file holds, in the files' order, read in `shares` runs of files of about the
    same size: for Codex, its calls `_recordable` keeps (the calls it refuses are returned);
    for Claude Code, its tool uses and answers."""
    parts = _split(sizes, shares)

    def read(path: Path, log: Errors, step: Callable[[int], None], refused: Errors) -> Any:
        if agent == "claude":
            return read_claude(path, log, step)
        if agent == "gemini":
            return _recordable(read_gemini(path, log, step), refused)
        if agent == "opencode":
            return _recordable(read_opencode(path, log, step), refused)
        return _recordable(read_codex(path, log, step), refused)

    def share(index: int) -> tuple[list[Any], ErrorLog | None, list[LineError]]:
        start, end = parts[index]
        here = index == 0  # errors and progress as they come; elsewhere, when the share ends
        log, step = (errors, advance) if here else (ErrorLog(), _ignore)
        refused: list[LineError] = []
        found = [read(path, log, step, refused) for path in files[start:end]]
        return found, None if here else log, refused

    findings: list[Any] = []
    refused: list[LineError] = []
    for (start, end), (found, own, turned) in zip(parts, in_shares(share, len(parts)), strict=True):
        findings += found
        refused += turned
        if own is not None:
            errors.merge(own)
            advance(sum(sizes[start:end]))
    return findings, refused


def _record(
    service: PlanLedger,
    sessions: list[Session],
    client: str,
    source: str,
    errors: ErrorLog,
    shares: int,
) -> list[SessionImport]:
    """Record the sessions in `shares` runs of about as many calls, each at once through a
    service of its own, whose transactions wait for the others' as long as they take."""
    in_run = {session_id: {call.call_id for call in calls} for session_id, calls in sessions}
    parts = _split([len(calls) for _, calls in sessions], shares)

    def share(index: int) -> tuple[list[SessionImport], list[LineError]]:
        start, end = parts[index]
        failed: list[LineError] = []

        def on_error(session_id: str, calls: Sequence[PlanCall], error: LedgerError) -> None:
            failed.append(_not_imported(session_id, calls, error))

        if len(parts) == 1:
            done = record_sessions(service, sessions[start:end], client, on_error, source, in_run)
            return done, failed
        with PlanLedger(patient(service.database, SHARED_LOCK_SECONDS), None) as own:
            done = record_sessions(own, sessions[start:end], client, on_error, source, in_run)
        return done, failed

    results: list[SessionImport] = []
    for done, failed in in_shares(share, len(parts)):
        results += done
        for error in failed:
            errors.append(error)
    return sorted(results, key=lambda result: result.session_id)


def _not_imported(session_id: str, calls: Sequence[PlanCall], error: LedgerError) -> LineError:
    first = calls[0]
    message = f"{len(calls)} call(s) of session {session_id} not imported: {error}"
    return LineError(path=first.path, line=first.line, message=message)


def _split(weights: Sequence[int], count: int) -> list[tuple[int, int]]:
    """At most `count` (start, end) runs of `weights`' indices, of about the same weight, in
    order; none empty (one, empty, when there is nothing)."""
    total = sum(weights)
    if count <= 1 or len(weights) < 2 or total == 0:
        return [(0, len(weights))]
    parts: list[tuple[int, int]] = []
    start, reached = 0, 0
    for index, weight in enumerate(weights):
        reached += weight
        if reached * count >= total * (len(parts) + 1) and len(parts) < count - 1:
            parts.append((start, index + 1))
            start = index + 1
    if start < len(weights):
        parts.append((start, len(weights)))
    return parts


def _ignore(count: int) -> None:
    """Progress of a share read elsewhere: counted when its findings come back."""


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
