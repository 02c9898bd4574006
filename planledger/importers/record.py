"""The recording step: sessions' calls through the service, each call at most once, many
sessions a transaction (a transaction per session would make the disk's flush the limit)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

from domain.errors import ErrorKind, LedgerError, SessionNotFound
from domain.ids import ID_PATTERN, validate_id
from domain.session_fields import Origin, plain_cwd
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
    origin: Origin
    exists: bool


@dataclass(frozen=True)
class Recorded:
    """What a session holds already: its proposal ids, and the tasks it ever had (`exists`:
    whether it was found at all)."""

    proposal_ids: frozenset[str] = frozenset()
    task_ids: frozenset[str] = frozenset()
    exists: bool = False


def recorded(service: PlanLedger, session_id: str) -> Recorded:
    """What the session already holds (nothing when it does not exist yet).

    Read from the history, not the ledger's idempotency window, so a call recorded long ago
    is known however long the session has grown since."""
    try:
        entries = service.history(session_id).entries
    except SessionNotFound:
        return Recorded()
    tasks = {
        transition.step_id
        for entry in entries
        if entry.kind == "committed"
        for transition in entry.transitions or ()
        if transition.from_ is None
    }
    return Recorded(frozenset(entry.proposal_id for entry in entries), frozenset(tasks), True)


def record_sessions(
    service: PlanLedger,
    sessions: Sequence[tuple[str, Sequence[PlanCall]]],
    client: str,
    on_error: Callable[[str, Sequence[PlanCall], LedgerError], None],
    source: str | None = None,
    in_run: Mapping[str, Collection[str]] | None = None,
) -> list[SessionImport]:
    """Record each session's `calls` (already in order, each id once, each payload within the
    input limits: `domain.limits.check_payload`), skipping the ones it already holds: a call
    id it has, a task it created already, a call replayed from a session that holds it, a call
    that changed nothing. A session opened here gets `source` and its calls' parent and
    working directory. A session whose calls cannot be recorded (an invalid id, a payload the
    ledger refuses to read) goes to `on_error`; a storage failure propagates (what was written
    stays written). `in_run` holds the call ids of every session of the run when `sessions`
    are only a share of it (a fork's replayed call is then known wherever it is recorded)."""
    results: list[SessionImport] = []
    group: dict[str, Pending] = {}
    size = 0
    if in_run is None:
        in_run = {session_id: {call.call_id for call in calls} for session_id, calls in sessions}
    held: dict[str, Recorded] = {}

    def holds(session_id: str) -> Recorded:
        if session_id not in held:
            held[session_id] = recorded(service, session_id)
        return held[session_id]

    def replayed(call: PlanCall) -> bool:
        return any(
            call.call_id in in_run.get(other, ()) or call.call_id in holds(other).proposal_ids
            for other in call.replay_of
        )

    def flush() -> None:
        nonlocal size
        if group:
            _write(service, group, on_error, results)
        group.clear()
        size = 0

    for session_id, calls in sessions:
        try:
            validate_id(session_id)
            known = holds(session_id)
            origin = _origin(source, calls)
            renumbering = {call.renumbers for call in calls if call.renumbers is not None}
            fresh = [
                call
                for call in calls
                if call.payload is not None
                and call.call_id not in known.proposal_ids
                and (
                    call.created_task is None
                    or call.created_task not in known.task_ids
                    or call.call_id in renumbering  # the id's earlier task makes room for it
                )
                and not (call.replay_of and replayed(call))
            ]
            kept = {call.call_id for call in fresh}
            fresh = [call for call in fresh if call.renumbers is None or call.renumbers in kept]
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
            Call(payload=call.payload, proposal_id=call.call_id, client=client, checked=True)
            for call in fresh
        ]
        result.skipped = len(calls) - len(new)
        if not new:
            results.append(result)
            continue
        group[session_id] = Pending(result, new, calls, origin, known.exists)
        size += len(new)
        if size >= TRANSACTION_CALLS:
            flush()
    flush()
    return sorted(results, key=lambda result: result.session_id)


def _origin(source: str | None, calls: Sequence[PlanCall]) -> Origin:
    """The origin of a session opened by an import: `source`, and the first parent and working
    directory its calls name (one a session could not hold is left out)."""
    parent = next((call.parent_session_id for call in calls if call.parent_session_id), None)
    if parent is not None and not ID_PATTERN.match(parent):
        parent = None
    cwd = plain_cwd(next((call.cwd for call in calls if call.cwd), None))
    return Origin.checked(source, parent, cwd)


def _write(
    service: PlanLedger,
    group: dict[str, Pending],
    on_error: Callable[[str, Sequence[PlanCall], LedgerError], None],
    results: list[SessionImport],
) -> None:
    try:
        decided = service.submit_sessions(
            {sid: pending.calls for sid, pending in group.items()},
            open_missing=True,
            origins={sid: pending.origin for sid, pending in group.items()},
            absent={sid for sid, pending in group.items() if not pending.exists},
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
