"""domain.chain.first_break: where a stream's chain stops holding, checked in one pass."""

from __future__ import annotations

import json

from domain.chain import GENESIS, canonical, first_break, link
from planledger.storage.scan import ChainedEvent

TOPIC = "domain.plan:Plan.PlanCommitted"


def stream(count: int, chain_over: bool = False) -> list[ChainedEvent]:
    """A stream of `count` events, each chained after the one before (`chain_over`: over the
    canonical form of a state stored in another key order, as the migration chained them)."""
    rows, previous = [], GENESIS
    for version in range(1, count + 1):
        state = json.dumps({"v": version, "a": "x"}, separators=(",", ":")).encode()
        hashed = canonical(state) if chain_over else state
        chain = link(previous, TOPIC, "plan:s", version, hashed)
        rows.append(ChainedEvent("plan:s", version, TOPIC, state, chain))
        previous = chain
    return rows


def test_a_whole_stream_has_no_break() -> None:
    assert first_break(stream(5)) is None
    assert first_break([]) is None


def test_events_chained_by_the_migration_hold_over_their_canonical_form() -> None:
    assert first_break(stream(4, chain_over=True)) is None


def test_the_first_row_that_does_not_link_is_named() -> None:
    rows = stream(5)
    rows[2] = rows[2]._replace(state=b'{"a":"y","v":3}')  # edited
    rows[3] = rows[3]._replace(chain=None)
    assert first_break(rows) == 2


def test_a_row_without_a_chain_or_after_a_removed_one_breaks_there() -> None:
    rows = stream(4)
    assert first_break([*rows[:1], rows[1]._replace(chain=None), *rows[2:]]) == 1
    assert first_break([rows[0], *rows[2:]]) == 1  # the second event removed
    assert first_break(rows[1:]) == 0  # the first one removed
