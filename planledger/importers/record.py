"""The recording step: one session's calls through the service, each call at most once."""

from __future__ import annotations

from collections.abc import Sequence

from domain.errors import SessionExists, SessionNotFound
from domain.ids import validate_id
from planledger.importers.calls import PlanCall
from planledger.importers.report import SessionImport
from planledger.service import Call, PlanLedger

BATCH_SIZE = 250  # calls per transaction


def recorded_ids(service: PlanLedger, session_id: str) -> set[str]:
    """The proposal ids the session already holds (opening it when it is new).

    Read from the history, not the ledger's idempotency window, so a call recorded long ago
    is known however long the session has grown since."""
    try:
        return {entry.proposal_id for entry in service.history(session_id).entries}
    except SessionNotFound:
        pass
    try:
        service.open_session(session_id)
    except SessionExists:  # another writer opened it in between
        return {entry.proposal_id for entry in service.history(session_id).entries}
    return set()


def record_session(
    service: PlanLedger, session_id: str, calls: Sequence[PlanCall], client: str
) -> SessionImport:
    """Record `calls` (already in order, each id once) in `session_id`, skipping the ones it
    already holds, in batches of BATCH_SIZE calls a transaction. LedgerError (an invalid
    session id, a storage failure) propagates; calls already written stay written."""
    validate_id(session_id)
    known = recorded_ids(service, session_id)
    result = SessionImport(
        session_id=session_id,
        source=calls[0].path,
        calls=len(calls),
        files=list(dict.fromkeys(call.path for call in calls)),
    )
    new = [call for call in calls if call.call_id not in known]
    result.skipped = len(calls) - len(new)
    for start in range(0, len(new), BATCH_SIZE):
        batch = [
            Call(payload=call.payload, proposal_id=call.call_id, client=client)
            for call in new[start : start + BATCH_SIZE]
        ]
        for decision in service.submit_batch(session_id, batch):
            if decision.store_position is None:  # recorded meanwhile by another writer
                result.skipped += 1
            elif decision.status == "committed":
                result.committed += 1
            else:
                result.rejected += 1
    return result
