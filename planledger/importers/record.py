"""The recording step: sessions' calls through the service, each call at most once, many
sessions a transaction (a transaction per session would make the disk's flush the limit)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from domain.errors import ErrorKind, LedgerError, SessionNotFound
from domain.ids import validate_id
from planledger.importers.calls import PlanCall
from planledger.importers.report import SessionImport
from planledger.service import Call, PlanLedger

TRANSACTION_CALLS = 2000  # calls written in one transaction (spread over several sessions)
REPORTED_KINDS = frozenset({ErrorKind.INVALID, ErrorKind.NOT_FOUND, ErrorKind.EXISTS})


@dataclass
class Pending:
    result: SessionImport
    calls: list[Call]
    found: Sequence[PlanCall]


def recorded_ids(service: PlanLedger, session_id: str) -> set[str]:
    """The proposal ids the session already holds (none when it does not exist yet).

    Read from the history, not the ledger's idempotency window, so a call recorded long ago
    is known however long the session has grown since."""
    try:
        return {entry.proposal_id for entry in service.history(session_id).entries}
    except SessionNotFound:
        return set()


def record_sessions(
    service: PlanLedger,
    sessions: Sequence[tuple[str, Sequence[PlanCall]]],
    client: str,
    on_error: Callable[[str, Sequence[PlanCall], LedgerError], None],
) -> list[SessionImport]:
    """Record each session's `calls` (already in order, each id once), skipping the ones it
    already holds. A session whose calls cannot be recorded (an invalid id, a payload the
    ledger refuses to read) goes to `on_error`; a storage failure propagates (what was
    written stays written)."""
    results: list[SessionImport] = []
    group: dict[str, Pending] = {}
    size = 0

    def flush() -> None:
        nonlocal size
        if group:
            _write(service, group, on_error, results)
        group.clear()
        size = 0

    for session_id, calls in sessions:
        try:
            validate_id(session_id)
            known = recorded_ids(service, session_id)
        except LedgerError as error:
            if error.kind not in REPORTED_KINDS:
                raise
            on_error(session_id, calls, error)
            continue
        result = SessionImport(
            session_id=session_id,
            source=calls[0].path,
            calls=len(calls),
            files=list(dict.fromkeys(call.path for call in calls)),
        )
        new = [
            Call(payload=call.payload, proposal_id=call.call_id, client=client)
            for call in calls
            if call.call_id not in known
        ]
        result.skipped = len(calls) - len(new)
        if not new:
            results.append(result)
            continue
        group[session_id] = Pending(result, new, calls)
        size += len(new)
        if size >= TRANSACTION_CALLS:
            flush()
    flush()
    return sorted(results, key=lambda result: result.session_id)


def _write(
    service: PlanLedger,
    group: dict[str, Pending],
    on_error: Callable[[str, Sequence[PlanCall], LedgerError], None],
    results: list[SessionImport],
) -> None:
    try:
        decided = service.submit_sessions(
            {sid: pending.calls for sid, pending in group.items()}, open_missing=True
        )
    except LedgerError as error:
        if error.kind not in REPORTED_KINDS or len(group) == 1:
            if error.kind not in REPORTED_KINDS:
                raise
            ((session_id, pending),) = group.items()
            on_error(session_id, pending.found, error)
            return
        for session_id, pending in group.items():  # find the session it was: one at a time
            _write(service, {session_id: pending}, on_error, results)
        return
    for session_id, decisions in decided.items():
        result = group[session_id].result
        for decision in decisions:
            if decision.store_position is None:  # recorded meanwhile by another writer
                result.skipped += 1
            elif decision.status == "committed":
                result.committed += 1
            else:
                result.rejected += 1
        results.append(result)
