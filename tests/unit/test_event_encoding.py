"""The ledger's event encoder writes canonical JSON (the bytes an event's chain is computed over):
exactly what the library's JSON transcoder writes, keys sorted (domain.chain.canonical), for
every kind of event and every text, decoded as the library decodes it; it leaves what it cannot
write to the library."""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any

from eventsourcing.persistence import JSONTranscoder, Mapper
from hypothesis import given, settings
from hypothesis import strategies as st

from domain.base import Aggregate
from domain.chain import canonical
from domain.forms import parse_proposal
from domain.ids import plan_aggregate_id, session_aggregate_id
from domain.plan import Plan
from domain.session import Session
from domain.session_fields import Mode
from planledger.service.ledger import Ledger
from planledger.storage.transcoding import EventTranscoder


def transcoders() -> tuple[JSONTranscoder, EventTranscoder]:
    """The library's transcoder and ours, each with the ledger's transcodings."""
    ledger = Ledger.__new__(Ledger)  # register_transcodings needs no store
    library, ours = JSONTranscoder(), EventTranscoder()
    ledger.register_transcodings(library)
    ledger.register_transcodings(ours)
    return library, ours


def events(title: str, step: str) -> list[Any]:
    """Every kind of event the ledger stores, `title` and `step` among their texts."""
    session = Session.open(session_aggregate_id("s"), "s", Mode.WORK)
    session.start_goal("g", title)
    session.move_goal("g", "block")
    session.change_mode(Mode.PLAN)
    plan = Plan.create(plan_aggregate_id("s"), "s")
    bodies: list[dict[str, Any]] = [
        {
            "title": title,
            "goal_id": "g",
            "steps": [{"id": "a", "title": step, "status": "pending"}],
        },
        {"title": title, "steps": [{"id": "a", "title": step, "status": "todo"}]},  # rejected
        {"title": title, "steps": [{"id": "a", "title": step, "status": "in_progress"}] * 2},
        {"explanation": title, "plan": [{"step": step, "status": "cancelled"}]},
        {"plan": [], "expected_revision": 7, "proposal_id": "p-1"},
    ]
    for body in bodies:
        plan.propose(uuid.uuid4().hex, parse_proposal(body), "f", "test")
        plan.decide({"g"})
    snapshots = [Aggregate.Snapshot.take(session), Aggregate.Snapshot.take(plan)]
    return [*session.collect_events(), *plan.collect_events(), *snapshots]


def encoded(transcoder: JSONTranscoder, event: Any) -> bytes:
    return Mapper[Any](transcoder=transcoder).to_stored_event(event).state


def test_every_kind_of_event_is_written_byte_for_byte_as_the_library_writes_it() -> None:
    library, ours = transcoders()
    for event in events("Ship the export", "Write the reader"):
        assert encoded(ours, event) == canonical(encoded(library, event)), type(event).__name__
        assert canonical(encoded(ours, event)) == encoded(ours, event)
        if not isinstance(event, Aggregate.Snapshot):  # every event but a snapshot: one call
            state = {k: v for k, v in event.__dict__.items() if k != "originator_id"}
            assert ours.prepared(state) is not None, type(event).__name__
        assert ours.decode(encoded(ours, event)) == library.decode(encoded(library, event))


@settings(max_examples=150, deadline=None)
@given(title=st.text(max_size=40), step=st.text(min_size=1, max_size=40))
def test_any_text_is_written_as_the_library_writes_it(title: str, step: str) -> None:
    """Quotes, backslashes, control characters, non-ASCII: json's escapes and pydantic-core's
    agree (texts the forms cannot store are repaired before they reach an event)."""
    library, ours = transcoders()
    for event in events(title, step):
        assert encoded(ours, event) == canonical(encoded(library, event))
        assert canonical(encoded(ours, event)) == encoded(ours, event)


def test_what_it_cannot_write_is_left_to_the_library() -> None:
    library, ours = transcoders()
    odd: list[dict[str, Any]] = [
        {"ratio": 1e16},  # floats: json writes 1e+16, pydantic-core 1e16
        {"nested": {"a": [1, 2]}},
        {"items": [[1], [2]]},
        {"amount": Decimal("1.5")},  # a registered type whose data is not a string
        {"id": uuid.UUID(int=5)},
    ]
    for state in odd:
        assert ours.encode(state) == canonical(library.encode(state)), state
    unregistered = {"thing": object()}
    for transcoder in (library, ours):
        try:
            transcoder.encode(unregistered)
        except Exception as error:
            assert "not serializable" in str(error)
        else:
            raise AssertionError("an unregistered type was encoded")
