"""Plan events decoded straight from their bytes give exactly what the library's mapper gives:
the same events from the ledger's own rows, and the same value or the same error for every odd
one; the runner's event rows decode as the library's stored events."""

from __future__ import annotations

import dataclasses
import json
import uuid
from typing import Any

import pytest
from eventsourcing.persistence import DatetimeAsISO, JSONTranscoder, Mapper, StoredEvent

from domain.forms import parse_proposal
from domain.ids import plan_aggregate_id, session_aggregate_id
from domain.models import PlanSnapshot, TaskOperation, Violation
from domain.plan import Plan
from domain.session import Session
from domain.session_fields import Mode
from planledger.storage.transcoding import EventTranscoder, PydanticTranscoding
from projections.decode import PlanEventDecoder


def library_transcoder() -> JSONTranscoder:
    from eventsourcing.persistence import DatetimeAsISO

    transcoder = JSONTranscoder()
    transcoder.register(DatetimeAsISO())
    for model in (PlanSnapshot, Violation):
        transcoder.register(PydanticTranscoding(model))
    return transcoder


def outcome(decode: Any, data: bytes) -> tuple[str, Any]:
    try:
        return "value", decode(data)
    except Exception as error:  # compared: the same error, word for word
        return "error", (type(error), str(error))


def ledger_rows() -> list[StoredEvent]:
    """Every kind of event the views fold, as the ledger stores them."""
    session = Session.open(session_aggregate_id("s"), "s", Mode.WORK)
    session.start_goal("g", "Ship it")
    plan = Plan.create(plan_aggregate_id("s"), "s")
    bodies: list[dict[str, Any]] = [
        {"title": "T", "goal_id": "g", "steps": [{"id": "a", "title": "A", "status": "pending"}]},
        {"title": "T", "steps": [{"id": "a", "title": 'Ä "q"\n', "status": "in_progress"}]},
        {"title": "T", "steps": [{"id": "a", "title": "A", "status": "in_progress"}] * 2},
    ]
    for body in bodies:
        plan.propose(uuid.uuid4().hex, parse_proposal(body), "f", "test")
        plan.decide({"g"})
    session.change_mode(Mode.PLAN)
    mapper: Mapper[Any] = Mapper(transcoder=library_transcoder())
    return [mapper.to_stored_event(e) for e in [*session.collect_events(), *plan.collect_events()]]


def test_event_rows_decode_as_the_librarys_stored_events() -> None:
    """The runner reads rows as EventRows, not the library's Notifications: the library's own
    mapper decodes one to the same event (a memoryview state made bytes)."""
    from projections.runner import event_rows

    mapper = Mapper[Any](transcoder=library_transcoder())
    for n, stored in enumerate(ledger_rows()):
        raw = (n, stored.originator_id, stored.originator_version, stored.topic, stored.state)
        (row,) = event_rows([(*raw[:4], memoryview(stored.state), "c", "p")])
        assert row == (*raw, "c", "p") and type(row.state) is bytes
        assert mapper.to_domain_event(row) == mapper.to_domain_event(stored)  # type: ignore[arg-type]


# -- plan events straight from their bytes --------------------------------------------------


def ledger_mapper(before_the_chain: bool = False) -> Mapper[Any]:
    """The mapper the ledger writes with: its own encoder (or, `before_the_chain`, the
    library's, which wrote the keys in the order the events give them, not sorted)."""
    transcoder = JSONTranscoder() if before_the_chain else EventTranscoder()
    transcoder.register(DatetimeAsISO())
    for model in (PlanSnapshot, Violation, TaskOperation):
        transcoder.register(PydanticTranscoding(model))
    return Mapper(transcoder=transcoder)


def plan_rows(mapper: Mapper[Any]) -> list[StoredEvent]:
    """Every kind of plan event in every form, with repeated and changed snapshots."""
    plan = Plan.create(plan_aggregate_id("s"), "s")
    bodies: list[dict[str, Any]] = [
        {"title": "T", "steps": [{"id": "a", "title": "A", "status": "in_progress"}]},
        {"title": "T", "steps": [{"id": "a", "title": "A", "status": "in_progress"}]},
        {"title": "T", "steps": [{"id": "a", "title": 'Ä "q"\n', "status": "completed"}]},
        {"title": "T", "steps": [{"id": "a", "title": "A", "status": "bogus"}] * 2},
        {"plan": [{"step": "x", "status": "pending"}], "explanation": "wrong form"},
        {"op": "create", "title": "A task"},
        {"title": "T\x07", "steps": []},
    ]
    for n, body in enumerate(bodies):
        plan.propose(f"p{n}", parse_proposal(body), f"f{n}", "test")
        if n != 5:  # a proposal superseded by the next
            plan.decide(set())
    return [mapper.to_stored_event(event) for event in plan.collect_events()]


@pytest.mark.parametrize("before_the_chain", [False, True])
def test_plan_events_decode_straight_from_their_bytes_to_the_librarys_events(
    monkeypatch: pytest.MonkeyPatch, before_the_chain: bool
) -> None:
    mapper = ledger_mapper(before_the_chain)
    rows = plan_rows(mapper)
    assert rows[1].state.startswith(b'{"timestamp"' if before_the_chain else b'{"actor"')
    assert {row.topic.rsplit(".", 1)[1] for row in rows} == {
        "PlanCreated",
        "PlanProposed",
        "PlanCommitted",
        "PlanRejected",
    }
    library = ledger_mapper(before_the_chain)  # (the decoder's own falls back on none)
    decoder = PlanEventDecoder(mapper)
    monkeypatch.setattr(
        decoder.fallback, "to_domain_event", lambda row: pytest.fail(f"fell back on {row!r}")
    )
    for row in rows:
        mine, theirs = decoder.to_domain_event(row), library.to_domain_event(row)
        assert type(mine) is type(theirs)
        assert vars(mine) == vars(theirs)
        assert {k: type(v) for k, v in vars(mine).items()} == {
            k: type(v) for k, v in vars(theirs).items()
        }


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (b'"revision":1', b'"revision":"1"'),  # coerced by a lax parse: not ours to coerce
        (b'"revision":1', b'"revision":1,"extra":2'),
        (b'"proposal_id":"p0"', b'"proposal_id":null'),
        (b'"status":"in_progress"', b'"status":7'),
        (b'"_type_":"plan_snapshot"', b'"_type_":"nope"'),
        (b'"form":"strict"', b'"form":"strict" '),
        (b"}", b"},"),
        # a snapshot of the bytes seen just before, then more than the key that follows it
        (b'"plan_snapshot"}', b'"plan_snapshot"} '),
        (b'"plan_snapshot"}', b'"plan_snapshot"}}'),
        (b'"plan_snapshot"}', b'"plan_snapshot","timestamp":1}'),
    ],
)
def test_an_odd_plan_event_decodes_as_the_library_decodes_it(old: bytes, new: bytes) -> None:
    mapper = ledger_mapper()
    for row in plan_rows(mapper)[:4]:  # created, proposed, committed, proposed
        odd = dataclasses.replace(row, state=row.state.replace(old, new, 1))
        decoder = PlanEventDecoder(mapper)
        decoder.to_domain_event(plan_rows(mapper)[1])  # a candidate seen just before
        assert outcome(decoder.to_domain_event, odd) == outcome(mapper.to_domain_event, odd)


def reordered(state: bytes, first: str, then: str) -> bytes:
    """The stored JSON with key `then` moved to follow key `first` (values untouched)."""
    data = json.loads(state)
    keys = [key for key in data if key != then]
    keys.insert(keys.index(first) + 1, then)
    return json.dumps({key: data[key] for key in keys}, separators=(",", ":")).encode()


def task_rows(mapper: Mapper[Any]) -> list[StoredEvent]:
    plan = Plan.create(plan_aggregate_id("t"), "t")
    plan.propose("p0", parse_proposal({"op": "create", "title": "Write the test"}), "f0", "test")
    plan.decide(set())
    return [mapper.to_stored_event(event) for event in plan.collect_events()]


def test_a_recent_candidate_never_stands_for_bytes_an_edit_moved_or_repeated() -> None:
    """Keys moved or repeated (as only an edit writes them) are decoded as the library decodes
    them, whichever rows were decoded before: the candidate a decoder remembers is the
    candidate's bytes alone."""
    mapper = ledger_mapper()
    rows = task_rows(mapper)
    proposal, commit = rows[1], rows[2]
    moved = dataclasses.replace(proposal, state=reordered(proposal.state, "candidate", "operation"))
    candidate = json.dumps(json.loads(proposal.state)["candidate"], separators=(",", ":"))
    other = plan_rows(mapper)[1]  # a candidate of another plan, decoded just before
    seen = json.dumps(json.loads(other.state)["candidate"], separators=(",", ":"))
    repeated = dataclasses.replace(
        proposal,
        state=proposal.state.replace(
            f'"candidate":{candidate}'.encode(),
            f'"candidate":{seen},"candidate":{candidate}'.encode(),
        ),
    )
    twice = dataclasses.replace(
        commit, state=commit.state[:-1] + b',"snapshot":' + seen.encode() + b"}"
    )
    assert b'"candidate":' + seen.encode() in repeated.state
    for odd in (moved, repeated, twice):
        decoder = PlanEventDecoder(mapper)
        for row in (other, proposal, moved, moved, repeated, twice):  # (each one seen before)
            outcome(decoder.to_domain_event, row)
            assert outcome(decoder.to_domain_event, odd) == outcome(mapper.to_domain_event, odd)
